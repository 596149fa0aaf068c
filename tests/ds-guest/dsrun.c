// SPDX-License-Identifier: GPL-2.0
/*
 * dsrun: start a program with branch trace consumers attached from its
 * very first instruction, as the ptrace oracle (tests/bts/oracle.c) sees it.
 *
 *	dsrun [-c CPU] [-a SPEC] [-s START] -- CMD [ARG...]
 *
 * The child pins itself to CPU (before exec, so that it is not in the
 * trace), asks to be traced and execs CMD; the exec stops it before the
 * first instruction of the new image.  Then SPEC, a file of ds_consumers
 * control commands in which "@PID@" stands for the child's pid, is
 * written to /sys/kernel/debug/ds_consumers/control in one write, and the
 * child is let go (PTRACE_DETACH).  START gets "PID ENTRY": the child's
 * pid in decimal and the address it starts at in hex.
 *
 * Exit status: CMD's, or 125 when the set-up failed, 126 when the attach
 * failed (the error is printed as "attach: STRERROR").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#define CONTROL "/sys/kernel/debug/ds_consumers/control"

static void die(const char *what)
{
	perror(what);
	exit(125);
}

/* SPEC with every "@PID@" replaced by @pid. */
static char *load_spec(const char *file, pid_t pid)
{
	char pidstr[16], *in, *out, *p, *q;
	size_t len = 0, cap = 1 << 16;
	FILE *f = fopen(file, "r");
	int n;

	if (!f)
		die(file);
	in = calloc(1, cap);
	out = calloc(1, 2 * cap);
	if (!in || !out)
		die("calloc");
	len = fread(in, 1, cap - 1, f);
	fclose(f);
	in[len] = '\0';
	n = snprintf(pidstr, sizeof(pidstr), "%d", (int)pid);
	for (p = in, q = out; *p; ) {
		if (!strncmp(p, "@PID@", 5)) {
			memcpy(q, pidstr, n);
			q += n;
			p += 5;
		} else {
			*q++ = *p++;
		}
	}
	*q = '\0';
	free(in);
	return out;
}

int main(int argc, char **argv)
{
	const char *spec = NULL, *start = NULL;
	int opt, cpu = -1, status, fd;
	unsigned long rip;
	pid_t pid;

	while ((opt = getopt(argc, argv, "+c:a:s:")) != -1) {
		switch (opt) {
		case 'c':
			cpu = atoi(optarg);
			break;
		case 'a':
			spec = optarg;
			break;
		case 's':
			start = optarg;
			break;
		default:
			fprintf(stderr, "usage: dsrun [-c CPU] [-a SPEC] [-s START] -- CMD [ARG...]\n");
			return 125;
		}
	}
	if (optind >= argc)
		return 125;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		if (cpu >= 0) {
			cpu_set_t set;

			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			if (sched_setaffinity(0, sizeof(set), &set))
				die("sched_setaffinity");
		}
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL))
			die("PTRACE_TRACEME");
		execvp(argv[optind], &argv[optind]);
		fprintf(stderr, "dsrun: exec %s: %s\n", argv[optind],
			strerror(errno));
		_exit(127);
	}

	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP) {
		fprintf(stderr, "dsrun: %s did not start (status %#x)\n",
			argv[optind], status);
		return 125;
	}
	/* A ptrace request waits until the child is off its CPU. */
	errno = 0;
	rip = ptrace(PTRACE_PEEKUSER, pid,
		     (void *)offsetof(struct user, regs.rip), NULL);
	if (errno)
		die("PTRACE_PEEKUSER");
	if (start) {
		FILE *f = fopen(start, "w");

		if (!f)
			die(start);
		fprintf(f, "%d %lx\n", (int)pid, rip);
		fclose(f);
	}
	if (spec) {
		char *cmd = load_spec(spec, pid);

		fd = open(CONTROL, O_WRONLY);
		if (fd < 0)
			die(CONTROL);
		if (write(fd, cmd, strlen(cmd)) != (ssize_t)strlen(cmd)) {
			fprintf(stderr, "attach: %s\n", strerror(errno));
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			return 126;
		}
		close(fd);
		free(cmd);
	}
	if (ptrace(PTRACE_DETACH, pid, NULL, NULL))
		die("PTRACE_DETACH");
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "dsrun: %s killed by signal %d\n",
			argv[optind], WTERMSIG(status));
		return 125;
	}
	return WEXITSTATUS(status);
}
