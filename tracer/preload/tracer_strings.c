/* tracer_strings.c - the process string table (tracer_strings.h): open
 * addressing over a fixed mmap'd arena, lock-free lookups, inserts under
 * the process lock, and a small per-thread cache of the last strings.
 *
 * Runs inside wrapped calls: no allocation beyond the mappings made at
 * registration, raw syscalls only; a full table still writes strings
 * (with fresh ids), it only stops deduplicating them. */
#include "tracer_strings.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer_process.h"
#include "tracer_ring.h"
#include "tracer_state.h"
#include "tracer_thread.h"

/* String table: open addressing over a fixed mmap'd arena, lock-free
 * lookups, inserts under the ring-0 lock. When the table or arena is full,
 * strings are still emitted (with fresh ids) but no longer deduplicated. */
#define TRACER_STRTAB_SLOTS (1u << 16)
#define TRACER_STRTAB_ARENA (8u << 20)
/* The longest string the table keeps (longer ones are written each time). */
#define TRACER_STRTAB_LONGEST 65536u

struct tracer_strtab_slot {
    _Atomic uint32_t id;
    uint32_t len;
    uint64_t hash;
    uint32_t offset;
    uint32_t pad;
};

static struct tracer_strtab_slot *tracer_strtab;
static char *tracer_strtab_arena;
static uint32_t tracer_strtab_used;
static uint32_t tracer_strtab_count;

/* The string table's hash: eight bytes per multiply (the byte-at-a-time
 * FNV it replaces was a chain of one multiply per byte: ~400 instructions
 * of nginx's ~3200 traced per request went to hashing its path and request
 * line). In memory only: ids never depend on it. Never 0. */
uint64_t tracer_hash(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ len;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, sizeof w);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    if (i < len) {
        uint64_t w = 0;
        for (unsigned shift = 0; i < len; i++, shift += 8)
            w |= (uint64_t)(unsigned char)s[i] << shift;
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    }
    h ^= h >> 29;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 32;
    return h ? h : 1;
}

void tracer_strings_init(void)
{
    void *slots =
        (void *)syscall(SYS_mmap, NULL, TRACER_STRTAB_SLOTS * sizeof(struct tracer_strtab_slot),
                        PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *arena = (void *)syscall(SYS_mmap, NULL, TRACER_STRTAB_ARENA, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (slots == MAP_FAILED || arena == MAP_FAILED)
        return;
    tracer_strtab = slots;
    tracer_strtab_arena = arena;
    tracer_strtab_used = 0;
    tracer_strtab_count = 0;
}

static uint32_t tracer_strtab_find(const char *s, size_t len, uint64_t h, uint32_t *slot_out)
{
    uint32_t mask = TRACER_STRTAB_SLOTS - 1;
    for (uint32_t i = (uint32_t)h & mask, n = 0; n < 64; i = (i + 1) & mask, n++) {
        struct tracer_strtab_slot *sl = &tracer_strtab[i];
        uint32_t id = atomic_load_explicit(&sl->id, memory_order_acquire);
        if (!id) {
            *slot_out = i;
            return 0;
        }
        if (sl->hash == h && sl->len == len && !memcmp(tracer_strtab_arena + sl->offset, s, len))
            return id;
    }
    *slot_out = UINT32_MAX;
    return 0;
}

/* Each thread's last few interned strings: a server interns the same path
 * and request line request after request, and a hit here costs a length
 * test and a compare instead of the hash and the table's probe. An entry
 * holds for the region generation that interned it (a forked child starts
 * a new string table). Entries are written with the busy mark up, so a
 * signal handler's traced call (which finds the mark up and records
 * nothing) never sees one half-written. */
#define TRACER_INTERN_CACHE_ENTRIES 4
#define TRACER_INTERN_CACHE_BYTES 112

struct tracer_intern_cached {
    uint32_t generation; /* 0: empty */
    uint32_t id;
    uint32_t len;
    char s[TRACER_INTERN_CACHE_BYTES];
};

static __thread struct {
    struct tracer_intern_cached entry[TRACER_INTERN_CACHE_ENTRIES];
    uint32_t next; /* the entry the next miss replaces */
} tracer_intern_cache __attribute__((tls_model("initial-exec")));

/* A signal handler may add an entry (tracer_intern_cache_add) while we
 * compare: a hit counts only when no entry was written meanwhile. */
static uint32_t tracer_intern_cache_find(const char *s, size_t len)
{
    uint32_t writes = tracer_intern_cache.next;
    atomic_signal_fence(memory_order_seq_cst);
    for (unsigned i = 0; i < TRACER_INTERN_CACHE_ENTRIES; i++) {
        const struct tracer_intern_cached *e = &tracer_intern_cache.entry[i];
        if (e->len == len && e->generation == tracer_global.generation && !memcmp(e->s, s, len)) {
            uint32_t id = e->id;
            atomic_signal_fence(memory_order_seq_cst);
            return tracer_intern_cache.next == writes ? id : 0;
        }
    }
    return 0;
}

static void tracer_intern_cache_add(struct tracer_thread *t, const char *s, size_t len, uint32_t id)
{
    if (len > TRACER_INTERN_CACHE_BYTES || !id)
        return;
    tracer_busy_enter(t);
    struct tracer_intern_cached *e =
        &tracer_intern_cache.entry[tracer_intern_cache.next++ % TRACER_INTERN_CACHE_ENTRIES];
    e->generation = tracer_global.generation;
    e->id = id;
    e->len = (uint32_t)len;
    memcpy(e->s, s, len);
    tracer_busy_leave(t);
}

/* Writes string `id` to ring 0: one STRING record, or pieces of
 * TRACER_STRING_PIECE_BYTES for a long one (shm_layout.h). The caller
 * holds the process lock, so the pieces follow each other. 0, or -1 when
 * a record was dropped (the string is then not defined). */
static int tracer_strings_write(uint32_t id, const char *s, size_t len)
{
    struct trace_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = TRACE_EV_STRING;
    ev.tid = tracer_gettid();
    ev.u.string.id = id;
    size_t off = 0;
    do {
        size_t n = len - off > TRACER_STRING_PIECE_BYTES ? TRACER_STRING_PIECE_BYTES : len - off;
        ev.op = off + n < len ? TRACER_STRING_OP_MORE : 0;
        ev.u.string.len = (uint32_t)n;
        if (tracer_ring0_append(&ev, s + off, n) != 0)
            return -1;
        off += n;
    } while (off < len);
    return 0;
}

uint32_t tracer_intern(const char *s, size_t len)
{
    if (!tracer_global.active || !s)
        return 0;
    if (len > TRACER_STRING_MAX)
        len = TRACER_STRING_MAX;
    struct tracer_thread *t = &tracer_tls;
    uint32_t cached = tracer_intern_cache_find(s, len);
    if (cached)
        return cached;
    /* a long string is not looked up: its hash would only serve the table */
    uint64_t h = len <= TRACER_STRTAB_LONGEST ? tracer_hash(s, len) : 0;
    uint32_t slot = UINT32_MAX;
    /* a long string (a big statement) is not kept in the table: it would
     * crowd out the many short ones, and a repeat of it is rare */
    if (tracer_strtab && len <= TRACER_STRTAB_LONGEST) {
        uint32_t id = tracer_strtab_find(s, len, h, &slot);
        if (id) {
            tracer_intern_cache_add(t, s, len, id);
            return id;
        }
    }
    tracer_busy_enter(t);
    uint32_t id = 0;
    if (tracer_process_lock() == 0) {
        if (tracer_strtab && len <= TRACER_STRTAB_LONGEST) /* re-check under the lock */
            id = tracer_strtab_find(s, len, h, &slot);
        if (!id) {
            uint32_t new_id =
                (uint32_t)(atomic_fetch_add_explicit(&tracer_global.control->next_string_id, 1,
                                                     memory_order_relaxed) +
                           1);
            if (tracer_strings_write(new_id, s, len) == 0) {
                id = new_id;
                if (tracer_strtab && slot != UINT32_MAX &&
                    tracer_strtab_used + len <= TRACER_STRTAB_ARENA &&
                    tracer_strtab_count < TRACER_STRTAB_SLOTS / 2) {
                    struct tracer_strtab_slot *sl = &tracer_strtab[slot];
                    memcpy(tracer_strtab_arena + tracer_strtab_used, s, len);
                    sl->offset = tracer_strtab_used;
                    sl->len = (uint32_t)len;
                    sl->hash = h;
                    tracer_strtab_used += (uint32_t)len;
                    tracer_strtab_count++;
                    atomic_store_explicit(&sl->id, id, memory_order_release);
                }
            }
        }
        tracer_process_unlock();
    }
    tracer_busy_leave(t);
    tracer_intern_cache_add(t, s, len, id);
    return id;
}

void tracer_strings_after_fork(void)
{
    if (tracer_strtab) {
        syscall(SYS_munmap, tracer_strtab, TRACER_STRTAB_SLOTS * sizeof(struct tracer_strtab_slot));
        syscall(SYS_munmap, tracer_strtab_arena, TRACER_STRTAB_ARENA);
        tracer_strtab = NULL;
    }
    tracer_strings_init();
}
