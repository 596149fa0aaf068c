// SPDX-License-Identifier: GPL-2.0
/*
 * A 32-bit program without a C library: a hand-written _start, system
 * calls through int $0x80, a loop of known count, recursion and calls
 * through a table.  A 32-bit task gets the same 64-bit records as any
 * other (bts.h), with addresses below 4 GiB.  The exit status is 0 when
 * the results are right.
 *
 *	triangle(20):	for i < 20, for j <= i: 210 inner iterations
 *	rec(6):		rec entered 7 times
 *	ops[i % 3](x):	6 indirect calls
 *	getpid:		3 system calls, then write and exit
 */
#define noipa __attribute__((noipa))

#define NR_exit		1
#define NR_write	4
#define NR_getpid	20

asm(".text\n"
"	.globl _start\n"
"	.type _start, @function\n"
"_start:\n"
"	xor %ebp, %ebp\n"
"	and $-16, %esp\n"
"	call main32\n"
"	mov %eax, %ebx\n"
"	mov $1, %eax\n"			/* exit */
"	int $0x80\n"
"	hlt\n"
"	.size _start, .-_start\n");

static long sys3(long nr, long a, long b, long c)
{
	long ret;

	asm volatile("int $0x80"
		     : "=a" (ret) : "a" (nr), "b" (a), "c" (b), "d" (c)
		     : "memory");
	return ret;
}

noipa int triangle(int n)
{
	int i, j, s = 0;

	for (i = 0; i < n; i++)
		for (j = 0; j <= i; j++)
			s += i ^ j;
	return s;
}

noipa int rec(int n)
{
	int r;

	if (!n)
		return 1;
	r = rec(n - 1);
	/* Not a tail call, and not a loop: gcc must keep the recursion. */
	asm volatile("" : "+r" (r));
	return r + n;
}

noipa int op_inc(int x)
{
	return x + 1;
}

noipa int op_dbl(int x)
{
	return x * 2;
}

noipa int op_neg(int x)
{
	return -x;
}

int (*ops[])(int) = { op_inc, op_dbl, op_neg };

noipa int main32(void)
{
	static const char msg[] = "m32 ok\n";
	int i, acc, bad = 0;
	long pid = sys3(NR_getpid, 0, 0, 0);

	for (i = 0; i < 2; i++)
		bad |= sys3(NR_getpid, 0, 0, 0) != pid;
	bad |= triangle(20) != 2476;
	acc = rec(6);
	for (i = 0; i < 6; i++)
		acc = ops[i % 3](acc);
	/* rec(6) = 22; 22 -> 23 -> 46 -> -46 -> -45 -> -90 -> 90 */
	bad |= acc != 90;
	if (!bad)
		sys3(NR_write, 1, (long)msg, sizeof(msg) - 1);
	return bad;
}
