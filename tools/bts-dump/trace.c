// SPDX-License-Identifier: GPL-2.0
/*
 * Starting a trace: of a command, or of a running process.
 *
 * A command runs under ptrace, which attaches /dev/bts before its first
 * instruction (at the exec stop) and shows the mappings of each process
 * the trace follows when it appears, execs and exits: the moments a
 * short-lived process's libraries can still be seen.  ptrace stops it
 * at those events only (and to pass it its signals).
 *
 * A running process is stopped with PTRACE_INTERRUPT while each of its
 * threads gets a /dev/bts file of its own, so that no thread is created
 * unseen while they are attached.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdnoreturn.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "live.h"

static int setup_signals(struct live *lv, sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGQUIT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, old);
	lv->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (lv->sigfd < 0) {
		warn("signalfd");
		return -1;
	}
	return 0;
}

static noreturn void exec_child(char **cmd, int gate, const sigset_t *mask)
{
	char c;
	int e;

	sigprocmask(SIG_SETMASK, mask, NULL);
	/* Run only once the parent traces us: then exec stops us. */
	while (read(gate, &c, 1) < 0 && errno == EINTR)
		;
	execvp(cmd[0], cmd);
	e = errno;
	fprintf(stderr, "bts-dump: %s: %s\n", cmd[0], strerror(e));
	_exit(e == ENOENT ? 127 : 126);
}

int trace_cmd(struct live *lv)
{
	const struct opts *o = lv->o;
	int fd, gate[2], st, e;
	long ptrace_opts = PTRACE_O_TRACEEXEC | PTRACE_O_TRACEEXIT;
	bool created;
	sigset_t old;

	/*
	 * Follow the processes BTS follows, to see their mappings too, and
	 * their threads, for their names as they exit.
	 */
	if (!o->no_inherit)
		ptrace_opts |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
			       PTRACE_O_TRACECLONE;

	fd = open_dev();
	if (fd < 0)
		return 1;
	if (setup_signals(lv, &old) || pipe2(gate, O_CLOEXEC)) {
		warn("cannot start %s", o->cmd[0]);
		return 1;
	}
	lv->child = fork();
	if (lv->child < 0) {
		warn("fork");
		return 1;
	}
	if (!lv->child) {
		close(gate[1]);
		exec_child(o->cmd, gate[0], &old);
	}
	close(gate[0]);
	e = ptrace(PTRACE_SEIZE, lv->child, 0, ptrace_opts) ? errno : 0;
	close(gate[1]);
	if (e) {
		kill(lv->child, SIGKILL);
		waitpid(lv->child, &st, 0);
		attach_error(e, lv->child, o->cmd[0]);
		return 1;
	}

	/* Until the exec stop, or the end of a command that did not exec. */
	for (;;) {
		if (waitpid(lv->child, &st, __WALL) < 0) {
			warn("waitpid");
			return 1;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return report_exit(o->cmd[0], st);
		if (st >> 8 == (SIGTRAP | PTRACE_EVENT_EXEC << 8))
			break;
		ptrace(PTRACE_CONT, lv->child, 0,
		       st >> 16 ? 0 : WSTOPSIG(st));
	}
	e = attach(lv, fd, lv->child);
	if (e) {
		attach_error(e, lv->child, o->cmd[0]);
		kill(lv->child, SIGKILL);
		return 1;
	}
	if (snapshot(lv, lproc_get(lv, lv->child, &created))) {
		kill(lv->child, SIGKILL);
		return 1;
	}
	ptrace(PTRACE_CONT, lv->child, 0, 0);

	if (trace_loop(lv)) {
		/* The command goes on, untraced once bts-dump is gone. */
		detach_all(lv);
		return 1;
	}
	if (child_events(lv, true))
		return 1;
	if (!lv->child_done) {
		warn("waitpid");
		return 1;
	}
	finish_live(lv);
	if (lv->out->exit(lv->out, lv->child, lv->child_status, o->cmd[0],
			  strlen(o->cmd[0])))
		return 1;
	return report_exit(o->cmd[0], lv->child_status);
}

/* The threads of @pid, from /proc/PID/task; @tids grows as needed. */
static size_t list_threads(pid_t pid, pid_t **tids, size_t *cap)
{
	struct dirent *de;
	char path[64];
	size_t n = 0;
	DIR *d;
	long t;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		t = strtol(de->d_name, NULL, 10);
		if (t <= 0)
			continue;
		if (n == *cap) {
			*cap = *cap ? *cap * 2 : 16;
			*tids = xrealloc(*tids, *cap * sizeof(**tids));
		}
		(*tids)[n++] = t;
	}
	closedir(d);
	return n;
}

struct frozen {
	pid_t tid;
	int sig;	/* a signal its stop took, to give back */
	bool seized;
};

static struct frozen *find_frozen(struct frozen *f, size_t n, pid_t tid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (f[i].tid == tid)
			return &f[i];
	return NULL;
}

/*
 * Stop every thread of @pid with PTRACE_INTERRUPT, listing the threads
 * again until no new one shows up.  A thread that cannot be stopped (the
 * process is being debugged) is attached to while it runs.
 */
static size_t freeze(pid_t pid, struct frozen **out)
{
	struct frozen *f = NULL;
	size_t n = 0, cap = 0, tcap = 0, nt, i;
	pid_t *tids = NULL;
	bool more = true;
	int st;

	while (more) {
		more = false;
		nt = list_threads(pid, &tids, &tcap);
		for (i = 0; i < nt; i++) {
			if (find_frozen(f, n, tids[i]))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				f = xrealloc(f, cap * sizeof(*f));
			}
			memset(&f[n], 0, sizeof(f[n]));
			f[n].tid = tids[i];
			f[n].seized = !ptrace(PTRACE_SEIZE, tids[i], 0, 0) &&
				      !ptrace(PTRACE_INTERRUPT, tids[i], 0, 0);
			if (f[n].seized) {
				while (waitpid(tids[i], &st, __WALL) < 0 &&
				       errno == EINTR)
					;
				if (!WIFSTOPPED(st))
					f[n].seized = false;
				else if (!(st >> 16))
					f[n].sig = WSTOPSIG(st);
			}
			n++;
			more = true;
		}
	}
	free(tids);
	*out = f;
	return n;
}

int trace_pid(struct live *lv)
{
	const struct opts *o = lv->o;
	struct frozen *f = NULL;
	size_t n, i;
	char what[32];
	bool created;
	sigset_t old;
	int fd, e, ret = 1;

	snprintf(what, sizeof(what), "%d", o->pid);
	if (kill(o->pid, 0) && errno == ESRCH) {
		warnx("%s: no such process", what);
		return 1;
	}
	if (setup_signals(lv, &old))
		return 1;
	if (o->no_inherit) {
		f = xcalloc(1, sizeof(*f));
		f->tid = o->pid;
		n = 1;
	} else {
		n = freeze(o->pid, &f);
	}
	for (i = 0; i < n; i++) {
		fd = open_dev();
		if (fd < 0)
			goto out;
		e = attach(lv, fd, f[i].tid);
		if (e) {
			close(fd);
			/* A thread that exited meanwhile is no loss. */
			if (e == ESRCH && f[i].tid != o->pid)
				continue;
			attach_error(e, f[i].tid, what);
			goto out;
		}
	}
	if (!lv->ns) {
		warnx("%s: no such process", what);
		goto out;
	}
	if (snapshot(lv, lproc_get(lv, o->pid, &created)))
		goto out;
	ret = 0;
out:
	for (i = 0; i < n; i++)
		if (f[i].seized)
			ptrace(PTRACE_DETACH, f[i].tid, 0, f[i].sig);
	free(f);
	if (ret) {
		detach_all(lv);
		return ret;
	}
	if (trace_loop(lv)) {
		detach_all(lv);
		ret = 1;
	}
	finish_live(lv);
	return ret;
}
