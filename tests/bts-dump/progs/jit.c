// SPDX-License-Identifier: GPL-2.0
/*
 * A JIT compiler in miniature: it copies a counted loop's machine code
 * into an anonymous executable mapping, names it in /tmp/perf-PID.map as
 * JIT compilers do for perf, and calls it CALLS times with COUNT: each
 * call takes the loop's jnz COUNT - 1 times.  The file stays, as JITs
 * leave it, for whoever symbolizes the trace later.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CALLS	3
#define COUNT	5
/* Where in the page the code goes: not at its start. */
#define AT	0x40

static const unsigned char countdown[] = {
	0x89, 0xf9,			/* mov %edi,%ecx */
	0xff, 0xc9,			/* 1: dec %ecx */
	0x75, 0xfc,			/* jnz 1b */
	0xb8, 0x2a, 0x00, 0x00, 0x00,	/* mov $42,%eax */
	0xc3,				/* ret */
};

int main(void)
{
	unsigned char *page;
	int (*fn)(int);
	char path[64];
	int i, sum = 0;
	FILE *f;

	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 2;
	memcpy(page + AT, countdown, sizeof(countdown));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC))
		return 2;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 2;
	fprintf(f, "%lx %zx jit_countdown\n", (unsigned long)(page + AT),
		sizeof(countdown));
	if (fclose(f))
		return 2;
	fn = (int (*)(int))(void *)(page + AT);
	for (i = 0; i < CALLS; i++)
		sum += fn(COUNT);
	return sum == CALLS * 42 ? 0 : 1;
}
