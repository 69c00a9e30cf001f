// cpuclock_sched_switch.bpf.c - the kernel half of the per-thread CPU clock.
//
// Runs on every context switch of the machine (tp_btf/sched_switch) and keeps,
// for the threads that claimed a slot of the mmap-able array `cpuclock_slots`,
// their CPU time at the last switch (the scheduler's own sum_exec_runtime, so
// the value equals CLOCK_THREAD_CPUTIME_ID at that moment) and the
// CLOCK_MONOTONIC time they were last switched in and out. The traced thread
// reads its slot without a syscall (tracer/cpuclock/cpuclock.h).
//
// For threads that did not claim a slot (every other thread of the system) it
// must do no more than test one bit each of prev and next in the 8 KiB
// claimed-bitmap (cache-resident, where the 2 MiB slot array is not); it must
// never loop, never take locks, and never touch a slot whose tid is not the
// task's. Slot layout, bitmap and indexing must match cpuclock.h.

typedef unsigned int __u32;
typedef unsigned long long __u64;
typedef int __s32;

#include <stdbool.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

// Minimal CO-RE views of the kernel structures: libbpf relocates the field
// offsets against the running kernel's BTF (/sys/kernel/btf/vmlinux), so no
// generated vmlinux.h is needed at build time.
struct sched_entity {
    __u64 sum_exec_runtime;
} __attribute__((preserve_access_index));

struct task_struct {
    int pid;
    struct sched_entity se;
} __attribute__((preserve_access_index));

#define CPUCLOCK_SLOT_COUNT 65536u
#define CPUCLOCK_HEADER_ENTRIES 4u
#define CPUCLOCK_BITMAP_ENTRIES (CPUCLOCK_SLOT_COUNT / 256u)

struct cpuclock_slot {
    __u32 tid;
    __u32 seq;
    __u64 total_ns;
    __u64 on_cpu_since_ns;
    __u64 off_cpu_since_ns;
};

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, CPUCLOCK_SLOT_COUNT + CPUCLOCK_HEADER_ENTRIES + CPUCLOCK_BITMAP_ENTRIES);
    __type(key, __u32);
    __type(value, struct cpuclock_slot);
} cpuclock_slots SEC(".maps");

// Bitmap entry views: an array element of the map is 32 bytes, 256 bits.
struct cpuclock_bits {
    __u64 word[4];
};

static __always_inline struct cpuclock_slot *cpuclock_slot_of(__u32 tid)
{
    __u32 index = tid & (CPUCLOCK_SLOT_COUNT - 1);
    __u32 bits_index = CPUCLOCK_SLOT_COUNT + CPUCLOCK_HEADER_ENTRIES + (index >> 8);
    struct cpuclock_bits *bits = bpf_map_lookup_elem(&cpuclock_slots, &bits_index);
    if (!bits || !((*(volatile __u64 *)&bits->word[(index >> 6) & 3]) & (1ull << (index & 63))))
        return 0;
    struct cpuclock_slot *slot = bpf_map_lookup_elem(&cpuclock_slots, &index);
    if (!slot || *(volatile __u32 *)&slot->tid != tid)
        return 0;
    return slot;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(cpuclock_on_sched_switch, bool preempt, struct task_struct *prev,
             struct task_struct *next)
{
    __u32 prev_tid = (__u32)prev->pid;
    __u32 next_tid = (__u32)next->pid;
    struct cpuclock_slot *slot;
    __u64 now = 0;

    // tid 0 is the idle task: never a traced thread, and slot 0's tid 0 means "free".
    // seq is bumped with a plain increment, not an atomic one (a locked
    // instruction per traced task per switch): only this program writes it,
    // and never for one task on two CPUs at once - a task's switch-out has
    // completed (the scheduler's on_cpu hand-off) before another CPU can
    // switch it in.
    if (prev_tid != 0 && (slot = cpuclock_slot_of(prev_tid)) != 0) {
        now = bpf_ktime_get_ns();
        // The scheduler updated sum_exec_runtime for prev before this tracepoint.
        slot->total_ns = prev->se.sum_exec_runtime;
        slot->off_cpu_since_ns = now;
        *(volatile __u32 *)&slot->seq = slot->seq + 1;
    }
    if (next_tid != 0 && (slot = cpuclock_slot_of(next_tid)) != 0) {
        if (now == 0)
            now = bpf_ktime_get_ns();
        slot->total_ns = next->se.sum_exec_runtime;
        slot->on_cpu_since_ns = now;
        *(volatile __u32 *)&slot->seq = slot->seq + 1;
    }
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
