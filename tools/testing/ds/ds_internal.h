/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace stand-in for arch/x86/kernel/ds_internal.h: the same include
 * guard, so that ds_core.c built here gets these definitions and never the
 * kernel's headers.
 */
#ifndef __X86_KERNEL_DS_INTERNAL_H
#define __X86_KERNEL_DS_INTERNAL_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../../include/uapi/linux/bts.h"
#include "../../../arch/x86/include/asm/ds_types.h"

typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int64_t s64;

#define BIT(n)		(1UL << (n))
#define BIT_ULL(n)	(1ULL << (n))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define min(a, b) ({							\
	__auto_type __a = (a);						\
	__auto_type __b = (b);						\
	__a < __b ? __a : __b;						\
})
#define min_t(type, a, b)	min((type)(a), (type)(b))
#define max(a, b) ({							\
	__auto_type __a = (a);						\
	__auto_type __b = (b);						\
	__a > __b ? __a : __b;						\
})

/* The kernel's release store, as a C11 atomic; pairs: see ds_core.c. */
#define smp_store_release(p, v)	__atomic_store_n(p, v, __ATOMIC_RELEASE)
/* The kernel's acquire load, as a C11 atomic; pairs: see ds_core.c. */
#define smp_load_acquire(p)	__atomic_load_n(p, __ATOMIC_ACQUIRE)

/*
 * The kernel's try_cmpxchg(): a full barrier, as a sequentially consistent
 * C11 compare-and-exchange; *old gets the value found on failure.
 */
#define try_cmpxchg(p, old, new)					\
	__atomic_compare_exchange_n(p, old, new, false, __ATOMIC_SEQ_CST, \
				    __ATOMIC_SEQ_CST)

/*
 * The kernel's try_cmpxchg_local(), atomic against the CPU's own interrupts
 * only: here, as try_cmpxchg().
 */
#define try_cmpxchg_local(p, old, new)	try_cmpxchg(p, old, new)

/* The kernel's READ_ONCE(), as a relaxed C11 atomic load. */
#define READ_ONCE(x)	__atomic_load_n(&(x), __ATOMIC_RELAXED)
/* The kernel's WRITE_ONCE(), as a relaxed C11 atomic store. */
#define WRITE_ONCE(x, v)	__atomic_store_n(&(x), v, __ATOMIC_RELAXED)
/* The kernel's read barrier, as a C11 fence; pairs: see ds_core.c. */
#define smp_rmb()	__atomic_thread_fence(__ATOMIC_ACQUIRE)
/* The kernel's write barrier, as a C11 fence; pairs: see ds_core.c. */
#define smp_wmb()	__atomic_thread_fence(__ATOMIC_RELEASE)

/* The harness treats a kernel warning as a failed run. */
#define WARN_ON_ONCE(cond) ({						\
	bool __c = (cond);						\
	if (__c) {							\
		fprintf(stderr, "WARNING: %s:%d: %s\n", __FILE__,	\
			__LINE__, #cond);				\
		abort();						\
	}								\
	__c;								\
})

#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* The kernel's compiler barrier, as a C11 signal fence. */
#define barrier()	__atomic_signal_fence(__ATOMIC_SEQ_CST)

/* Module metadata means nothing in the harness. */
#define MODULE_DESCRIPTION(desc)	static_assert(sizeof(desc), "")
#define MODULE_LICENSE(lic)		static_assert(sizeof(lic), "")
#define noinline			__attribute__((noipa))

#endif /* __X86_KERNEL_DS_INTERNAL_H */
