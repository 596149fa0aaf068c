#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Turn the KUnit KTAP in a kernel's serial log into flat TAP.

KUnit prints, at boot, a top-level plan with one line per suite and each
suite's cases one indentation level deeper.  We report every case as
"suite.case" (a parameterised case counts once, by its own result line),
and fail when the log has no KTAP, a suite's plan does not match its
cases, or fewer suites finished than the top-level plan announced (the
kernel died or hung in the middle).
"""
import re
import sys

TIMESTAMP = re.compile(r'^\[\s*\d+\.\d+\]\s?')
RESULT = re.compile(r'^(ok|not ok) (\d+)(?: -)? ?([^#]*?)\s*(#.*)?$')
PLAN = re.compile(r'^1\.\.(\d+)$')


def main(path):
    with open(path, errors='replace') as f:
        lines = [TIMESTAMP.sub('', l.rstrip('\r\n')) for l in f]
    try:
        start = next(i for i, l in enumerate(lines) if l == 'KTAP version 1')
    except StopIteration:
        print('not ok 1 - kunit: no KTAP output in the boot log')
        print('1..1')
        return 1

    top_plan = None
    suite_plan = None
    cases = []          # (ok, name, directive) of the current suite
    out = []            # our TAP lines
    problems = []
    suites_done = 0
    for line in lines[start + 1:]:
        depth = (len(line) - len(line.lstrip(' '))) // 4
        body = line.strip()
        if depth == 0 and PLAN.match(body) and top_plan is None:
            top_plan = int(PLAN.match(body).group(1))
            continue
        if depth == 1 and PLAN.match(body):
            suite_plan = int(PLAN.match(body).group(1))
            continue
        m = RESULT.match(body)
        if not m:
            continue
        ok, _, name, directive = m.groups()
        if depth == 1:
            cases.append((ok == 'ok', name, directive or ''))
        elif depth == 0:
            suites_done += 1
            if not cases:       # a suite with no cases: report the suite
                cases.append((ok == 'ok', '', directive or ''))
            elif suite_plan is not None and suite_plan != len(cases):
                problems.append('suite %s: plan %d but %d cases'
                                % (name, suite_plan, len(cases)))
            for case_ok, case, case_dir in cases:
                full = name + ('.' + case if case else '')
                out.append((case_ok, full, case_dir))
            cases, suite_plan = [], None
            if top_plan is not None and suites_done == top_plan:
                break

    if top_plan is None or suites_done != top_plan:
        problems.append('%d of %s suites finished'
                        % (suites_done, top_plan if top_plan is not None else '?'))

    n = 0
    for case_ok, full, directive in out:
        n += 1
        print('%s %d - %s%s' % ('ok' if case_ok else 'not ok', n, full,
                                ' ' + directive if directive else ''))
    for p in problems:
        n += 1
        print('not ok %d - kunit: %s' % (n, p))
    print('1..%d' % n)
    return 0 if all(o for o, _, _ in out) and not problems else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
