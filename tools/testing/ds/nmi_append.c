// SPDX-License-Identifier: GPL-2.0
/*
 * ds_staging_ring_append() with the hardware running, against an NMI at
 * every instruction.  The harness single-steps the append (EFLAGS.TF);
 * at step k the SIGTRAP handler plays an NMI on a CPU whose hardware
 * writes the ring: a record for the interrupt and one for its return, each
 * where the index says, moving it, as the hardware writes them.  For every
 * k, from every place in the ring, with a hardware that wraps its index at
 * once or leaves it at the end, the ring must hold what it held, then the
 * new records in an order an NMI allows, each whole and once: the NMI's
 * before the appended record or after it, or, where the append overwrote
 * the NMI's first record, a loss record of one in its place.  Each of
 * those must happen for some k, or the single-stepping missed a window.
 * Prints TAP.
 */
#include <signal.h>

#include "ds_internal.h"
#include "../../../arch/x86/kernel/ds_core.c"

/* Records per sub-buffer, the fewest there can be: a ring of 2 * NR. */
#define NR		(DS_STAGING_SLACK + 1)
#define SLOTS		(2 * NR)
#define REC_SIZE	sizeof(struct bts_record)

/* The NMI's records: the interrupt and the return to where it came from. */
#define NMI_FROM	0xffffffff81001000ULL
#define NMI_TO		0xffffffff81800000ULL
#define IRET_FROM	0xffffffff81800100ULL
#define IRET_TO		0xffffffff81001000ULL

static struct bts_record ring[SLOTS];
static struct ds_staging st;
static struct ds_bts_area hw;
/* Shared with the signal handler: volatile sig_atomic_t, as C asks. */
static volatile sig_atomic_t stepping, step, nmi_at, lazy_wrap;

/* What the hardware does at a taken branch (here, an interrupt). */
static void hw_record(u64 from, u64 to)
{
	u64 index = hw.index == hw.max ? hw.base : hw.index;

	*(struct bts_record *)(unsigned long)index =
		(struct bts_record){ .from = from, .to = to };
	index += REC_SIZE;
	hw.index = index < hw.max || lazy_wrap ? index : hw.base;
}

static void on_trap(int sig)
{
	(void)sig;
	if (stepping && step++ == nmi_at) {
		hw_record(NMI_FROM, NMI_TO);
		hw_record(IRET_FROM, IRET_TO);
	}
}

/* Append @rec single-stepped, with the NMI at step @at; returns the steps. */
static int append_stepped(const struct bts_record *rec, int at)
{
	step = 0;
	nmi_at = at;
	stepping = 1;
	asm volatile("pushf\n\torl $0x100, (%%rsp)\n\tpopf" ::: "cc", "memory");
	ds_staging_ring_append(&st, &hw, rec);
	asm volatile("pushf\n\tandl $~0x100, (%%rsp)\n\tpopf" ::: "cc", "memory");
	stepping = 0;
	return step;
}

static bool same(const struct bts_record *a, const struct bts_record *b)
{
	return a->from == b->from && a->to == b->to && a->flags == b->flags;
}

enum outcome { NO_NMI, NMI_FIRST, NMI_AFTER, NMI_OVERWRITTEN, BAD };

/*
 * Check the ring after an append from slot @start: the new records from
 * @start on, and every other slot as it was.
 */
static enum outcome check(unsigned int start, const struct bts_record *sw,
			  char *why, size_t len)
{
	static const struct bts_record lost = {
		.from = BTS_PSEUDO(BTS_PSEUDO_LOST, 0), .to = 1,
	};
	const struct bts_record nmi = { .from = NMI_FROM, .to = NMI_TO };
	const struct bts_record iret = { .from = IRET_FROM, .to = IRET_TO };
	const struct bts_record *ways[][3] = {
		[NO_NMI]		= { sw },
		[NMI_FIRST]		= { &nmi, &iret, sw },
		[NMI_AFTER]		= { sw, &nmi, &iret },
		[NMI_OVERWRITTEN]	= { &lost, &iret, sw },
	};
	u64 index = hw.index == hw.max ? hw.base : hw.index;
	unsigned int n = (index - hw.base) / REC_SIZE, i, way, k;

	n = (n + SLOTS - start) % SLOTS;
	for (way = 0; way < BAD; way++) {
		unsigned int want = way == NO_NMI ? 1 : 3;

		if (n != want)
			continue;
		for (k = 0; k < want; k++)
			if (!same(&ring[(start + k) % SLOTS], ways[way][k]))
				break;
		if (k == want)
			break;
	}
	if (way == BAD) {
		snprintf(why, len, "%u new records from slot %u: no order an NMI allows",
			 n, start);
		return BAD;
	}
	for (i = n; i < SLOTS; i++) {
		unsigned int slot = (start + i) % SLOTS;

		if (ring[slot].from != 0x400000 + slot) {
			snprintf(why, len, "slot %u overwritten", slot);
			return BAD;
		}
	}
	return way;
}

int main(void)
{
	const struct bts_record sw = {
		.from = BTS_PSEUDO(BTS_PSEUDO_SWITCH, 0), .to = 42, .flags = 42,
	};
	unsigned int start, seen[BAD] = { 0 }, runs = 0;
	int at, steps, t = 0, failed = 0;
	char why[128] = "";

	signal(SIGTRAP, on_trap);
	ds_staging_init(&st, ring, NR, DS_STAGING_SLACK);
	for (lazy_wrap = 0; lazy_wrap < 2; lazy_wrap++) {
		for (start = 0; start <= SLOTS && !failed; start++) {
			for (at = 0, steps = 1; at <= steps && !failed; at++) {
				unsigned int i;
				enum outcome o;

				ds_staging_arm_ring(&st, &hw);
				for (i = 0; i < SLOTS; i++)
					ring[i] = (struct bts_record){
						.from = 0x400000 + i,
						.to = 0x500000 + i,
					};
				/* start == SLOTS: index at the end, lazily. */
				hw.index = hw.base + start * REC_SIZE;
				steps = append_stepped(&sw, at);
				o = check(start % SLOTS, &sw, why, sizeof(why));
				if (o == BAD)
					failed = 1;
				else
					seen[o]++;
				runs++;
			}
		}
	}
	printf("%sok %d - append with an NMI at each of its steps (%u runs)%s%s\n",
	       failed ? "not " : "", ++t, runs, failed ? ": " : "", why);
	printf("%sok %d - NMI before, after, and overwritten each seen (%u, %u, %u)\n",
	       seen[NMI_FIRST] && seen[NMI_AFTER] && seen[NMI_OVERWRITTEN] ?
	       "" : "not ", ++t, seen[NMI_FIRST], seen[NMI_AFTER],
	       seen[NMI_OVERWRITTEN]);
	failed |= !(seen[NMI_FIRST] && seen[NMI_AFTER] &&
		    seen[NMI_OVERWRITTEN]);
	printf("1..%d\n", t);
	return failed;
}
