# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# tests/ds-guest/tap.sh: TAP helpers of the run and stress scripts (sourced).
# tap() numbers our own results; tap_from() and helper() number a helper's
# results under our plan and make sure that a helper that crashes, prints
# nothing or stops early fails the suite instead of passing it with the
# results it never printed.

n=0
fails=0

tap()		# tap OK|FAIL DESCRIPTION
{
	n=$((n + 1))
	if [ "$1" = OK ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fails=$((fails + 1))
	fi
}

# tap_from DESC RC FILE: FILE's TAP results ("ok [N] - ..." and "not ok [N]
# - ..."), numbered under our plan; other lines pass through.  RC is the
# exit status of what wrote FILE: 0 when all passed, 1 when some failed.
# One more failing result, DESC, unless FILE has a plan ("1..N", anywhere)
# and exactly N >= 1 results, and RC agrees with them.
tap_from()
{
	local desc=$1 rc=$2 file=$3 line plan='' got=0 nok=0 why=''

	while IFS= read -r line; do
		case $line in
		"ok - "* | "ok "[0-9]*" - "*)
			got=$((got + 1))
			tap OK "${line#* - }"
			;;
		"not ok - "* | "not ok "[0-9]*" - "*)
			got=$((got + 1))
			nok=$((nok + 1))
			tap FAIL "${line#* - }"
			;;
		1..*) plan=${line#1..} plan=${plan%% *} ;;
		*) echo "$line" ;;
		esac
	done <"$file"
	if [ -z "$plan" ]; then
		why="no plan"
	elif [ "$plan" != "$got" ] || [ "$got" -eq 0 ]; then
		why="plan 1..$plan but $got results"
	elif [ "$rc" -ne 0 ] && [ $nok -eq 0 ]; then
		why="exit $rc without a failing result"
	elif [ "$rc" -eq 0 ] && [ $nok -ne 0 ]; then
		why="exit 0 with $nok failing results"
	fi
	[ -z "$why" ] || tap FAIL "$desc: $why"
}

# helper DESC CMD...: run CMD, a helper printing TAP, and take its results
# with tap_from; its standard error becomes diagnostics.
helper()
{
	local desc=$1 tmp rc
	shift
	tmp=$(mktemp -d) || { tap FAIL "$desc: mktemp"; return; }
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	tap_from "$desc" "$rc" "$tmp/out"
	# shellcheck disable=SC2001 # every line
	[ ! -s "$tmp/err" ] || sed 's/^/#   /' "$tmp/err"
	rm -rf "$tmp"
}

# tap_selftest: prove that helper() fails a suite for a helper that
# crashes, prints nothing, stops early or exits 1 with no failing result;
# and passes one that works.  $1: a command that crashes in its set-up.
tap_selftest()
{
	local crash=("$@") bad=0 what

	for what in crashes "prints nothing" "stops early" "exits 1" works; do
		local out
		# In a subshell: the helper's results are not ours.
		out=$(
			f0=$fails
			case $what in
			crashes) helper "check.py" "${crash[@]}" ;;
			"prints nothing") helper "check.py" true ;;
			"stops early") helper "check.py" printf '1..2\nok - a\n' ;;
			"exits 1") helper "check.py" sh -c 'printf "1..1\nok - a\n"; exit 1' ;;
			works) helper "check.py" printf '1..1\nok - a\n' ;;
			esac
			echo "fails=$((fails - f0))"
		)
		if [ "$what" = works ]; then
			[ "${out##*fails=}" = 0 ] || bad=1
		else
			[ "${out##*fails=}" -gt 0 ] || bad=1
		fi
		echo "#   a helper that $what: $(grep -c '^not ok' <<<"$out")" \
			"failing results: $(grep '^not ok' <<<"$out" | tail -1)"
	done
	[ $bad -eq 0 ]
}
