/* cpuclock_loader.h - collector side of the per-thread CPU clock: loads the
 * sched_switch BPF program (embedded in the library at build time, no file
 * lookup at run time) and owns the shared slot table it writes.
 *
 * Used by the collector (a root process), never by the traced app: it links
 * libbpf, which must never be pulled into libpreplay_trace.so. The program runs
 * on every context switch of the machine while loaded; it is detached and freed
 * when cpuclock_bpf_unload() runs or the collector exits (its link fd closes).
 * Apps that already mapped the table keep the memory but see no more updates.
 */
#ifndef PREPLAY_CPUCLOCK_LOADER_H
#define PREPLAY_CPUCLOCK_LOADER_H

#include <stddef.h>

#include "cpuclock.h"

#ifdef __cplusplus
extern "C" {
#endif

struct cpuclock_bpf;

/* Whether traced apps time their records with the TSC (the table's TSC
 * block) or with clock_gettime. AUTO: the TSC when the kernel keeps time
 * with it (its clocksource is "tsc"). TSC: also when the kernel uses
 * another clocksource, if the CPU says the TSC is invariant (constant_tsc,
 * nonstop_tsc) - for VMs booted on kvm-clock whose TSC is sound; the
 * collector's recalibration still bounds and reports any drift or step.
 * MONOTONIC: never the TSC. */
enum cpuclock_tsc_policy {
    CPUCLOCK_TSC_AUTO = 0,
    CPUCLOCK_TSC_FORCE,
    CPUCLOCK_TSC_NEVER,
};

/* The policy the next cpuclock_bpf_load applies (default AUTO). */
void cpuclock_bpf_set_tsc_policy(enum cpuclock_tsc_policy policy);

/* Loads and attaches the program, writes the table header (pid namespace, TSC
 * parameters calibrated here) and checks that the program really sees this
 * process's context switches (a short sleep must bump a claimed slot). Returns
 * the loaded object, or NULL with a one-line reason in err, e.g.
 * "BPF unavailable: Operation not permitted (needs root or CAP_BPF+CAP_PERFMON)".
 * One object per process. */
struct cpuclock_bpf *cpuclock_bpf_load(char *err, size_t errlen);

/* The map fd to send to traced processes (SCM_RIGHTS); owned by the object.
 * -1 when nothing is loaded. */
int cpuclock_bpf_map_fd(void);

/* The loader's own mapping of the table (header.tsc is the shared TSC block:
 * call cpuclock_tsc_recalibrate(&table->header->tsc, ...) about once a second). */
struct cpuclock_table *cpuclock_bpf_table(void);

/* NULL when the loaded table carries a calibrated TSC block (traced apps
 * time their records with rdtsc); else why not (they use clock_gettime). */
const char *cpuclock_bpf_tsc_note(void);

/* Without the BPF clock: creates the clock page, a one-page memfd holding a
 * struct cpuclock_header with no slots (slot_count 0) whose TSC block the
 * policy above calibrated, for traced apps to time their records with
 * rdtsc (cpuclock_attach_page). Returns the descriptor, with the mapping in
 * `page` (page->header; the owner recalibrates page->header->tsc), or -1
 * with why in `why` (the TSC may not time the traces here, or no memfd). */
int cpuclock_clock_page_create(struct cpuclock_table *page, char *why, size_t whylen);
void cpuclock_clock_page_free(struct cpuclock_table *page, int fd);

/* Detaches and frees the program and the loader's mapping. Idempotent. */
void cpuclock_bpf_unload(void);

/* 1 when the library was built with libbpf and the embedded BPF object. */
int cpuclock_bpf_built(void);

#ifdef __cplusplus
}
#endif
#endif
