// SPDX-License-Identifier: GPL-2.0
/*
 * A branch trace's refresh of enable bits must fault their pages in
 * without event_mutex (review 2026-11-28, H): a fault may wait on anything
 * (a FUSE server, a userfaultfd handler), and every user_events and ftrace
 * event operation on the system takes that mutex.  For tests/user-events,
 * as root:
 *
 * - a target registers bts_test_uffd with its enable word in a page that
 *   it then hands to a userfaultfd (missing mode) and drops, so that the
 *   kernel's next write of the bit waits for the target to supply it;
 * - a tracer attaches /dev/bts to the target with BTS_ATTACH_MARKERS for
 *   that event: the attach's refresh sets the bit and faults;
 * - while the fault waits, another process registers an event, which
 *   takes event_mutex;
 * - then the target supplies the page, and everything finishes.
 *
 * It prints what it saw, and exits 0 once everything finished:
 *
 *   fault: the refresh faulted      (or "fault: none in 10 s")
 *   register: done while the fault waited   (or "register: blocked")
 *   attach: ok                      (or "failed", or "no answer")
 *   bit: 1                          (the target's enable word after it)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/bts.h>
#include "user_events.h"

#define PAGE	4096

/* Wait @ms for a byte on @fd; return it, or 0 on timeout. */
static char wait_byte(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char c;

	if (poll(&p, 1, ms) != 1 || read(fd, &c, 1) != 1)
		return 0;
	return c;
}

static void put_byte(int fd, char c)
{
	CHECK(write(fd, &c, 1) == 1);
}

/*
 * The target: its enable word behind a userfaultfd.  Says 'r' when ready,
 * 'F' when the kernel faults on the page; supplies it on 'R' and says
 * 'b' with the bit's value once it can read it; exits on 'Q'.
 */
static void target(int to_parent, int from_parent)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_zeropage zero = { .mode = 0 };
	struct uffd_msg msg;
	/* Written by the kernel behind the compiler's back. */
	volatile int *word;
	int ue, uffd;

	word = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(word != MAP_FAILED);
	*word = 0;
	ue = open(USER_EVENTS_DATA, O_RDWR);
	CHECK(ue >= 0);
	ue_register_at(ue, "bts_test_uffd u32 x", word);
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	CHECK(uffd >= 0);
	CHECK(ioctl(uffd, UFFDIO_API, &api) == 0);
	reg.range.start = (uintptr_t)word;
	reg.range.len = PAGE;
	CHECK(ioctl(uffd, UFFDIO_REGISTER, &reg) == 0);
	/* Gone: the next access waits for this process to supply it. */
	CHECK(madvise((void *)word, PAGE, MADV_DONTNEED) == 0);
	put_byte(to_parent, 'r');

	CHECK(read(uffd, &msg, sizeof(msg)) == sizeof(msg));
	CHECK(msg.event == UFFD_EVENT_PAGEFAULT);
	put_byte(to_parent, 'F');
	CHECK(wait_byte(from_parent, 60000) == 'R');
	zero.range.start = (uintptr_t)word;
	zero.range.len = PAGE;
	CHECK(ioctl(uffd, UFFDIO_ZEROPAGE, &zero) == 0);
	CHECK(wait_byte(from_parent, 60000) == 'B');
	put_byte(to_parent, '0' + (*word & 1));
	CHECK(wait_byte(from_parent, 60000) == 'Q');
	_exit(0);
}

/*
 * Attach a markers trace of @pid's bts_test_uffd; say on @result whether
 * it worked ('o') or not ('e'), and keep the trace until @hold gives a
 * byte.
 */
static void tracer(pid_t pid, int result, int hold)
{
	struct bts_attach a = {
		.size = sizeof(a),
		.pid = pid,
		.flags = BTS_ATTACH_MARKERS,
		.mode = BTS_MODE_CONTINUOUS,
		.nr_records = 4096,
		.markers = (uintptr_t)"bts_test_uffd",
	};
	int fd = open("/dev/bts", O_RDONLY);

	CHECK(fd >= 0);
	put_byte(result, ioctl(fd, BTS_IOC_ATTACH, &a) ? 'e' : 'o');
	wait_byte(hold, 60000);
	_exit(0);
}

/* Register another event; say 'd' on @done when it returned. */
static void registrar(int done)
{
	int ue = open(USER_EVENTS_DATA, O_RDWR);

	CHECK(ue >= 0);
	ue_register(ue, "bts_test_uffd_other u32 y", 0);
	put_byte(done, 'd');
	_exit(0);
}

int main(void)
{
	int up[2], down[2], reg[2], tr_res[2], tr_hold[2], status;
	pid_t t, tr, r;
	char c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	CHECK(pipe(up) == 0 && pipe(down) == 0 && pipe(reg) == 0 &&
	      pipe(tr_res) == 0 && pipe(tr_hold) == 0);
	t = fork();
	CHECK(t >= 0);
	if (!t)
		target(up[1], down[0]);
	CHECK(wait_byte(up[0], 10000) == 'r');
	tr = fork();
	CHECK(tr >= 0);
	if (!tr)
		tracer(t, tr_res[1], tr_hold[0]);

	c = wait_byte(up[0], 10000);
	printf("fault: %s\n", c == 'F' ? "the refresh faulted" :
					 "none in 10 s");
	r = fork();
	CHECK(r >= 0);
	if (!r)
		registrar(reg[1]);
	/* With the fault made under event_mutex, this waits for it. */
	printf("register: %s\n", wait_byte(reg[0], 3000) == 'd' ?
	       "done while the fault waited" : "blocked");

	put_byte(down[1], 'R');
	/* The attach returns once its refresh wrote the bit. */
	c = wait_byte(tr_res[0], 10000);
	printf("attach: %s\n", c == 'o' ? "ok" : c ? "failed" : "no answer");
	CHECK(waitpid(r, &status, 0) == r);
	put_byte(down[1], 'B');
	c = wait_byte(up[0], 10000);
	printf("bit: %c\n", c ? c : '?');
	/* Closing the trace clears the bit: only now. */
	put_byte(tr_hold[1], 'Q');
	CHECK(waitpid(tr, &status, 0) == tr);
	put_byte(down[1], 'Q');
	CHECK(waitpid(t, &status, 0) == t);
	return 0;
}
