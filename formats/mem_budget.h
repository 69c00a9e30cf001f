/* mem_budget.h - the memory a reader may take for what a file decodes to
 * (the plan, a trace's string table), shared by the plan and trace
 * readers: a small compressed file can declare gigabytes within every
 * per-field limit, so a reader counts what it allocates and refuses,
 * naming the record, before it takes more than the machine has. It must
 * never allocate itself, and never let a charge wrap around. */
#ifndef PREPLAY_MEM_BUDGET_H
#define PREPLAY_MEM_BUDGET_H

#include <stdint.h>

struct mem_budget {
    uint64_t used; /* bytes charged so far */
    uint64_t max;  /* the most that may be charged (live: what was available
                    * at the last charge) */
    int live;      /* each charge must fit in what is available then */
};

/* MemAvailable from /proc/meminfo, or less when the process's memory
 * cgroup (v2 memory.max - memory.current, v1 memory.limit_in_bytes -
 * memory.usage_in_bytes) has less room; UINT64_MAX when neither is known. */
uint64_t mem_budget_available(void);
/* A budget of max bytes; 0: a live budget, shared by every live budget of
 * the process: together they stay within 7/8 of what was available when
 * the first of those open now began (the rest is the process's own), and each charge within what is
 * available at the time (readers open side by side, as in a merge, would each be granted the same
 * free memory before any of them wrote to it: 2 traces of a 4 GiB string table got a `dump` killed
 * in a 2 GiB cgroup). Charge growth, not each small allocation: a live charge reads /proc. */
void mem_budget_init(struct mem_budget *b, uint64_t max);
/* Charges bytes: 0, or -1 (nothing charged) when used would pass max
 * (live: when the live budgets together would pass theirs, or bytes are
 * more than is available now; max becomes what this one could have). */
int mem_budget_charge(struct mem_budget *b, uint64_t bytes);
/* Gives back bytes charged earlier (a table freed one entry): at most what
 * is charged. */
void mem_budget_uncharge(struct mem_budget *b, uint64_t bytes);
/* Gives a live budget's charges back to the process's (its owner freed
 * the memory); a fixed budget just forgets them. */
void mem_budget_release(struct mem_budget *b);
/* The budget in MB (10^6 bytes) for messages: "the N MB available". */
double mem_budget_mb(const struct mem_budget *b);

#endif
