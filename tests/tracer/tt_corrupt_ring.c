/* tt_corrupt_ring.c - scribbles over its own trace ring, as a stray pointer
 * into the shared region would: N traced 1-byte writes to /dev/null, then a
 * record header of size 12 (not a multiple of 8) put at its ring's head and
 * published, then exit_group without another traced call. It prints
 * "ring I byte B pid P" (raw write(2) through syscall(), which the tracer
 * does not see) so test_corrupt_ring.py knows what the collector must name.
 * usage: tt_corrupt_ring N */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shm_layout.h"

/* The start of the preplay region's mapping (the collector's memfd), 0 if
 * this process has none (not traced). */
static unsigned long region_base(void)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    unsigned long base = 0, start, offset;
    while (maps && !base && fgets(line, sizeof line, maps))
        if (strstr(line, "preplay-region") &&
            sscanf(line, "%lx-%*x %*s %lx", &start, &offset) == 2 && offset == 0)
            base = start;
    if (maps)
        fclose(maps);
    return base;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tt_corrupt_ring N\n");
        return 2;
    }
    long n = atol(argv[1]);
    unsigned long base = region_base();
    if (!base) {
        fprintf(stderr,
                "tt_corrupt_ring: no preplay-region mapping (run it under preplay record)\n");
        return 1;
    }
    int fd = open("/dev/null", O_WRONLY);
    for (long i = 0; i < n; i++)
        if (write(fd, "x", 1) != 1)
            return 1;
    /* from here on, no traced call: this thread's ring is as it stands */
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    for (unsigned i = 1; i < TRACER_RING_COUNT; i++) {
        struct tracer_ring *r = tracer_region_ring((void *)base, i);
        if (atomic_load(&r->state) != TRACER_RING_ACTIVE || r->tid != tid)
            continue;
        uint64_t head = atomic_load(&r->head);
        uint64_t pos = head % TRACER_RING_DATA_BYTES;
        if (TRACER_RING_DATA_BYTES - pos < 16)
            return 1; /* the ring's very end: not in this test's few writes */
        struct tracer_record_header *h = (struct tracer_record_header *)(r->data + pos);
        h->size = 12;
        h->kind = TRACER_REC_EVENT;
        atomic_store(&r->head, head + 16);
        char msg[96];
        int len = snprintf(msg, sizeof msg, "ring %u byte %llu pid %d\n", i,
                           (unsigned long long)head, (int)getpid());
        syscall(SYS_write, 1, msg, (size_t)len);
        syscall(SYS_exit_group, 0);
    }
    fprintf(stderr, "tt_corrupt_ring: no ring of thread %u\n", tid);
    return 1;
}
