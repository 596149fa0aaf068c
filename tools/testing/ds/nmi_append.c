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
 *
 * Then ds_staging_try_append(), the sub-buffer's append for a hardware that
 * records nothing in the kernel, against an NMI at every instruction that
 * drains the sub-buffer (ds_staging_take()): what the drain took and what
 * the other half holds after must be the hardware's records, then the
 * appended ones, each whole and once; records that would reach the
 * threshold are refused whole.  An append that moves the index with a
 * plain store is run through the same check, which must catch it.
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

/* The sub-buffer's append: a hardware that filters out CPL 0 (user-only). */
#define APPEND_NR	3
/* Room below the threshold for two appends, and refusals above it. */
#define SUB_NR		(DS_STAGING_SLACK + 2 * APPEND_NR)
#define HALF_BYTES	(SUB_NR * REC_SIZE)

static struct bts_record sub_buf[2 * SUB_NR], taken[2 * SUB_NR];
/* Shared with the signal handler: volatile sig_atomic_t, as C asks. */
static volatile sig_atomic_t nr_taken, drained;

/* An NMI that drains: the threshold PMI, whose handler splays the half. */
static void on_trap_drain(int sig)
{
	const struct bts_record *recs;
	bool overran;
	u32 n;

	(void)sig;
	if (stepping && step++ == nmi_at) {
		n = ds_staging_take(&st, &hw, &recs, &overran);
		memcpy(taken, recs, n * REC_SIZE);
		nr_taken = n;
		drained = 1;
	}
}

/* ds_staging_try_append() as it must not be: the index stored, not swapped. */
static bool append_planted(const struct ds_staging *s, struct ds_bts_area *h,
			   const struct bts_record *rec, unsigned int nr)
{
	u64 second = (u64)(unsigned long)(s->buf + s->nr);
	u64 len = (u64)nr * REC_SIZE, index = READ_ONCE(h->index);

	if (index + len >= ds_staging_threshold(s, index >= second))
		return false;
	memcpy((void *)(unsigned long)index, rec, len);
	WRITE_ONCE(h->index, index + len);
	return true;
}

typedef bool (*append_fn)(const struct ds_staging *, struct ds_bts_area *,
			  const struct bts_record *, unsigned int);

static bool try_append_stepped(append_fn fn, const struct bts_record *rec,
			       int at, int *steps)
{
	bool ok;

	step = 0;
	nmi_at = at;
	nr_taken = 0;
	drained = 0;
	stepping = 1;
	asm volatile("pushf\n\torl $0x100, (%%rsp)\n\tpopf" ::: "cc", "memory");
	ok = fn(&st, &hw, rec, APPEND_NR);
	asm volatile("pushf\n\tandl $~0x100, (%%rsp)\n\tpopf" ::: "cc", "memory");
	stepping = 0;
	*steps = step;
	return ok;
}

enum sub_outcome { SUB_NO_NMI, SUB_DRAIN_BEFORE, SUB_DRAIN_AFTER, SUB_REFUSED,
		   SUB_BAD };

/*
 * After an append from @start records into half 0, with @sw appended if
 * @ok: the drain's records, then the active half's, must be the @start
 * hardware records and, if @ok, @sw; a refusal only where @sw would have
 * reached half 0's threshold, and the index short of the threshold.
 */
static enum sub_outcome check_sub(unsigned int start, const struct bts_record *sw,
				  bool ok, char *why, size_t len)
{
	u64 fill = (u64)(start + APPEND_NR) * REC_SIZE;
	unsigned int n, i, all = 0;
	struct bts_record seq[4 * SUB_NR];
	bool fits = fill < HALF_BYTES - DS_STAGING_SLACK * REC_SIZE;

	if (hw.index < hw.base || hw.index > hw.max ||
	    (ok && hw.index >= hw.threshold)) {
		snprintf(why, len,
			 "from slot %u: the index outside the half, or taken to its threshold",
			 start);
		return SUB_BAD;
	}
	n = (hw.index - hw.base) / REC_SIZE;
	for (i = 0; i < (unsigned int)nr_taken; i++)
		seq[all++] = taken[i];
	for (i = 0; i < n; i++)
		seq[all++] = ((struct bts_record *)(unsigned long)hw.base)[i];
	/* A drain first leaves more room: refusing then costs only time. */
	if (!ok && fits) {
		snprintf(why, len, "from slot %u: refused with room", start);
		return SUB_BAD;
	}
	if (all != start + (ok ? APPEND_NR : 0)) {
		snprintf(why, len, "from slot %u: %u records, not %u", start, all,
			 start + (ok ? APPEND_NR : 0));
		return SUB_BAD;
	}
	for (i = 0; i < all; i++) {
		bool want = i < start ? seq[i].from == 0x400000 + i :
					same(&seq[i], &sw[i - start]);

		if (!want) {
			snprintf(why, len, "from slot %u: record %u not as written",
				 start, i);
			return SUB_BAD;
		}
	}
	if (!ok)
		return SUB_REFUSED;
	if (!drained)
		return SUB_NO_NMI;
	return (unsigned int)nr_taken == start ? SUB_DRAIN_BEFORE : SUB_DRAIN_AFTER;
}

/* Every start in half 0 and every step; returns 1 if a run was bad. */
static int run_sub(append_fn fn, unsigned int seen[SUB_BAD], unsigned int *runs,
		   char *why, size_t len)
{
	const struct bts_record sw[APPEND_NR] = {
		{ .from = BTS_PSEUDO(BTS_PSEUDO_DETAIL, 0), .to = 1, .flags = 2 },
		{ .from = BTS_PSEUDO(BTS_PSEUDO_DETAIL, 1), .to = 3, .flags = 4 },
		{ .from = BTS_PSEUDO(BTS_PSEUDO_MARKER, 0), .to = 5, .flags = 6 },
	};
	enum sub_outcome o;
	unsigned int start, i;
	int at, steps;
	bool ok;

	signal(SIGTRAP, on_trap_drain);
	ds_staging_init(&st, sub_buf, SUB_NR, DS_STAGING_SLACK);
	for (start = 0; start < SUB_NR; start++) {
		for (at = 0, steps = 1; at <= steps; at++) {
			st.active = 0;
			ds_staging_arm(&st, &hw);
			for (i = 0; i < 2 * SUB_NR; i++)
				sub_buf[i] = (struct bts_record){
					.from = 0x400000 + i,
					.to = 0x500000 + i,
				};
			hw.index = hw.base + start * REC_SIZE;
			ok = try_append_stepped(fn, sw, at, &steps);
			o = check_sub(start, sw, ok, why, len);
			(*runs)++;
			if (o == SUB_BAD)
				return 1;
			seen[o]++;
		}
	}
	return 0;
}

int main(void)
{
	const struct bts_record sw = {
		.from = BTS_PSEUDO(BTS_PSEUDO_SWITCH, 0), .to = 42, .flags = 42,
	};
	unsigned int sub_seen[SUB_BAD] = { 0 }, sub_runs = 0, planted_runs = 0;
	unsigned int planted_seen[SUB_BAD] = { 0 };
	char planted_why[128] = "";
	int bad;
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

	bad = run_sub(ds_staging_try_append, sub_seen, &sub_runs, why,
		      sizeof(why));
	printf("%sok %d - sub-buffer append with a drain at each of its steps (%u runs)%s%s\n",
	       bad ? "not " : "", ++t, sub_runs, bad ? ": " : "", bad ? why : "");
	failed |= bad;
	bad = !(sub_seen[SUB_NO_NMI] && sub_seen[SUB_DRAIN_BEFORE] &&
		sub_seen[SUB_DRAIN_AFTER] && sub_seen[SUB_REFUSED]);
	printf("%sok %d - %s, each seen (%u, %u, %u)\n",
	       bad ? "not " : "", ++t,
	       "drain before and after the exchange, and a refusal", sub_seen[SUB_DRAIN_BEFORE],
	       sub_seen[SUB_DRAIN_AFTER], sub_seen[SUB_REFUSED]);
	failed |= bad;
	bad = run_sub(append_planted, planted_seen, &planted_runs, planted_why,
		      sizeof(planted_why));
	printf("%sok %d - the check catches an append that stores the index (%s)\n",
	       bad ? "" : "not ", ++t, bad ? planted_why : "not caught");
	failed |= !bad;
	printf("1..%d\n", t);
	return failed;
}
