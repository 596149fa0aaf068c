// SPDX-License-Identifier: GPL-2.0
/*
 * Indirect jumps through tables: a dense switch, which gcc compiles to a
 * jump table ("notrack jmp *%rax" with -fcf-protection; the driver checks
 * objdump for an indirect jmp in dispatch()), and a threaded interpreter
 * with computed gotos.  The opcode sequence is fixed, and with it the
 * targets.
 */
#include "common.h"

static const unsigned char code[] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 1, 4, 1, 5, 9, 2, 6, 5, 3,
	5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3, 3, 8, 3, 2, 7,
};

noipa unsigned int dispatch(unsigned int op, unsigned int x)
{
	switch (op) {
	case 0:
		return x + 3;
	case 1:
		return x * 5;
	case 2:
		return x ^ 0x55;
	case 3:
		return x >> 1;
	case 4:
		return x - 7;
	case 5:
		return ~x;
	case 6:
		return x * x;
	case 7:
		return x | 0x100;
	case 8:
		return x + (x << 4);
	case 9:
		return x & 0xfff;
	default:
		return 0;
	}
}

/* The same program, each opcode jumping straight to the next one. */
noipa unsigned int threaded(unsigned int x)
{
	static void * const labels[] = {
		&&op0, &&op1, &&op2, &&op3, &&op4,
		&&op5, &&op6, &&op7, &&op8, &&op9,
	};
	const unsigned char *pc = code;

#define NEXT	do {							\
		if (pc == code + sizeof(code))				\
			return x;					\
		goto *labels[*pc++];					\
	} while (0)

	NEXT;
op0:	x += 3; NEXT;
op1:	x *= 5; NEXT;
op2:	x ^= 0x55; NEXT;
op3:	x >>= 1; NEXT;
op4:	x -= 7; NEXT;
op5:	x = ~x; NEXT;
op6:	x *= x; NEXT;
op7:	x |= 0x100; NEXT;
op8:	x += x << 4; NEXT;
op9:	x &= 0xfff; NEXT;
#undef NEXT
}

/* Where the gdb test stops recording. */
noipa void stop_here(void)
{
	asm volatile("");
}

int main(void)
{
	unsigned int x = 1, i;

	for (i = 0; i < sizeof(code); i++)
		x = dispatch(code[i], x);
	CHECK(x == threaded(1));
	stop_here();
	printf("jumptable ok %#x\n", x);
	return 0;
}
