/* fd_table.c - per-descriptor state of the tracer (see fd_table.h). Uses
 * raw syscalls only; never called with a lock held. */
#include "fd_table.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "h2_label.h"
#include "tracer_core.h"

struct tracer_fd *tracer_fds;
_Atomic int tracer_fds_state;

static struct tracer_fd *tracer_fd_table(void)
{
    int st = atomic_load_explicit(&tracer_fds_state, memory_order_acquire);
    if (TRACER_LIKELY(st == 2))
        return tracer_fds;
    if (st < 0)
        return NULL;
    int expect = 0;
    if (atomic_compare_exchange_strong(&tracer_fds_state, &expect, 1)) {
        void *p = (void *)syscall(SYS_mmap, NULL, sizeof(struct tracer_fd) * TRACER_FD_MAX,
                                  PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            atomic_store(&tracer_fds_state, -1);
            return NULL;
        }
        tracer_fds = p;
        atomic_store_explicit(&tracer_fds_state, 2, memory_order_release);
        return tracer_fds;
    }
    while ((st = atomic_load_explicit(&tracer_fds_state, memory_order_acquire)) == 1)
        ;
    return st == 2 ? tracer_fds : NULL;
}

struct tracer_fd *tracer_fd_get_mapping(int fd)
{
    if (fd < 0 || fd >= TRACER_FD_MAX)
        return NULL;
    struct tracer_fd *t = tracer_fd_table();
    return t ? &t[fd] : NULL;
}

static void tracer_fd_fill_from_stat(struct tracer_fd *f, const struct stat *st)
{
    f->dev = st->st_dev;
    f->ino = st->st_ino;
    if (S_ISREG(st->st_mode) || S_ISBLK(st->st_mode)) {
        f->kind = TRACER_FD_FILE;
        f->size = (uint64_t)st->st_size;
    } else if (S_ISSOCK(st->st_mode)) {
        f->kind = TRACER_FD_SOCKET;
    } else {
        f->kind = TRACER_FD_OTHER;
    }
}

/* The string id of the kernel's name for fd (/proc/self/fd/N): a path
 * (" (deleted)" dropped), or what the descriptor is when it has none:
 * "pipe", "anon_inode:[signalfd]". The inode number the kernel appends to
 * a pipe's name is dropped: every record carries dev and ino, and a server
 * making a pipe per request must not grow the string table per request.
 * 0 when the kernel cannot say, for a socket, and, with `filtered`, when
 * --path-prefix leaves the name out (a pipe's always). */
static uint32_t tracer_fd_kernel_name(int fd, int filtered)
{
    char link[32] = "/proc/self/fd/", digits[12], path[4096];
    int nd = 0, len = (int)strlen(link);
    do /* raw syscalls, no stdio: fork children and signal handlers get here */
        digits[nd++] = (char)('0' + fd % 10);
    while ((fd /= 10) > 0);
    while (nd)
        link[len++] = digits[--nd];
    link[len] = 0;
    long n = syscall(SYS_readlink, link, path, sizeof path);
    if (n <= 0 || n >= (long)sizeof path)
        return 0;
    path[n] = 0; /* readlink does not end it */
    if (!strncmp(path, "socket:", 7))
        return 0;
    if (!strncmp(path, "pipe:", 5))
        n = 4;
    /* an unlinked file: the name it was opened by (apache2's proxy.PID
     * lock file, removed while its children still hold it) */
    static const char deleted[] = " (deleted)";
    if (n > (long)sizeof deleted && path[0] == '/' &&
        !memcmp(path + n - (sizeof deleted - 1), deleted, sizeof deleted - 1))
        n -= (long)sizeof deleted - 1;
    const char *filter =
        filtered && tracer_global.control ? tracer_global.control->path_filter : "";
    if (filter[0] && ((size_t)n < strlen(filter) || strncmp(path, filter, strlen(filter)) != 0))
        return 0;
    return tracer_intern(path, (size_t)n);
}

struct tracer_fd *tracer_fd_classify_unknown(int fd, struct tracer_fd *f)
{
    struct stat st;
    if (syscall(SYS_fstat, fd, &st) != 0)
        return f;
    tracer_fd_fill_from_stat(f, &st);
    /* recording without the file family (--only): a file's name, position
     * and mode serve only file records, and a file the app opened while the
     * family was off is unknown at every transfer (nginx under --only net:
     * readlink, lseek and fcntl per request, +40 % of its CPU) */
    if (f->kind != TRACER_FD_SOCKET && !(tracer_global.only_mask & TRACER_ONLY_FILE))
        return f;
    /* made or inherited where we could not see: named as the kernel names
     * it, once (info, and --path-prefix for a file under the prefix) */
    if (f->kind != TRACER_FD_SOCKET && !f->path_id)
        f->path_id = tracer_fd_kernel_name(fd, 1);
    if (f->kind == TRACER_FD_FILE) {
        /* position and mode unknown for inherited descriptors: ask once */
        off_t pos = (off_t)syscall(SYS_lseek, fd, 0, SEEK_CUR);
        f->offset = pos >= 0 ? pos : 0;
        long fl = syscall(SYS_fcntl, fd, F_GETFL);
        if (fl >= 0 && (fl & O_APPEND))
            f->flags |= TRACER_FDF_APPEND;
    }
    return f;
}

struct tracer_fd *tracer_fd_classify_after_unknown(int fd, struct tracer_fd *f, int wrote,
                                                   int64_t at, int64_t done)
{
    f = tracer_fd_classify_unknown(fd, f);
    if (f->kind != TRACER_FD_FILE || done <= 0)
        return f;
    int64_t start = at;
    if (at < 0) { /* the transfer moved the offset lseek read: undo it */
        start = f->offset - done >= 0 ? f->offset - done : 0;
        f->offset = start;
    }
    /* A write that ends at the end of the file most likely grew it from
     * where it began (a new or truncated file, a log): the size before it,
     * as the record says, cannot be read any more. */
    if (wrote && (uint64_t)(start + done) >= f->size)
        f->size = (uint64_t)start;
    return f;
}

/* Ring walks are bounded: a ring is never longer than the fd table, and a
 * damaged ring (threads racing on dup/close) must not hang the app. */
#define TRACER_FD_RING_STEPS 4096

/* Takes fd out of the ring of descriptors sharing its description. */
static void tracer_fd_unlink(int fd, struct tracer_fd *f)
{
    if (!f->dup_next_plus1)
        return;
    int next = f->dup_next_plus1 - 1;
    int prev = next;
    for (int steps = 0; steps < TRACER_FD_RING_STEPS; steps++) {
        struct tracer_fd *p = tracer_fd_get(prev);
        if (!p || !p->dup_next_plus1)
            break;
        if (p->dup_next_plus1 - 1 == fd) {
            /* a ring of two becomes a lone descriptor again */
            p->dup_next_plus1 = next == prev ? 0 : next + 1;
            break;
        }
        prev = p->dup_next_plus1 - 1;
    }
    f->dup_next_plus1 = 0;
}

/* The entry after `p` in the ring of descriptors sharing f's open file
 * description (start with p = f), or NULL when the walk is back at f, meets
 * a broken link, or has taken TRACER_FD_RING_STEPS steps (`steps` counts). */
static struct tracer_fd *tracer_fd_ring_next(const struct tracer_fd *f, const struct tracer_fd *p,
                                             int *steps)
{
    int cur = p->dup_next_plus1 - 1;
    if (cur < 0 || cur == (int)(f - tracer_fds) || ++*steps > TRACER_FD_RING_STEPS)
        return NULL;
    struct tracer_fd *next = tracer_fd_get(cur);
    return next && next->dup_next_plus1 ? next : NULL;
}

void tracer_fd_sync_shared(struct tracer_fd *f)
{
    if (TRACER_LIKELY(!f->dup_next_plus1))
        return;
    int steps = 0;
    for (struct tracer_fd *p = f; (p = tracer_fd_ring_next(f, p, &steps)) != NULL;) {
        p->offset = f->offset;
        p->size = f->size;
    }
}

/* The layout getdents64 fills (linux_dirent64). */
struct tracer_dirent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

void tracer_fd_after_fork(void)
{
    if (atomic_load_explicit(&tracer_fds_state, memory_order_acquire) != 2)
        return;
    /* only the descriptors open now: the table's pages are not touched */
    int dir =
        (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return; /* no /proc: the child's records keep naming the parent's CONNs */
    char buf[2048];
    long n;
    while ((n = syscall(SYS_getdents64, dir, buf, sizeof buf)) > 0) {
        for (long at = 0; at < n;) {
            const struct tracer_dirent64 *d = (const void *)(buf + at);
            at += d->reclen;
            int fd = 0, digits = 0;
            for (const char *c = d->name; *c >= '0' && *c <= '9' && fd < TRACER_FD_MAX;
                 c++, digits++)
                fd = fd * 10 + (*c - '0');
            if (!digits || fd == dir || fd >= TRACER_FD_MAX)
                continue;
            struct tracer_fd *f = &tracer_fds[fd];
            if (f->kind == TRACER_FD_SOCKET)
                f->flags &= (uint16_t)~TRACER_FDF_IDENT_DONE;
            /* an id of the parent's string table, for a file the parent's
             * filter admitted (the kernel's name may differ from the path
             * it was opened by: a symlink) */
            if (f->path_id)
                f->path_id = tracer_fd_kernel_name(fd, 0);
        }
    }
    syscall(SYS_close, dir);
}

/* HTTP/2 parser states are never unmapped: a thread still receiving on a
 * connection another thread closes must find mapped memory. A state given
 * back has its pages dropped (MADV_DONTNEED: zeros, no memory) and waits
 * on this list, linked through its first bytes, for the next connection.
 * The list is under the process's lock (tracer_process_lock): when that
 * cannot be taken (a signal handler's call nested in ours, a fork child
 * with no region), the state is mapped anew, or given back to no list
 * (its mapping stays, unused). */
static void *tracer_h2_pool;

struct tracer_h2 *tracer_h2_state_get(void)
{
    void *s = NULL;
    if (tracer_process_lock() == 0) {
        if (tracer_h2_pool) {
            s = tracer_h2_pool;
            tracer_h2_pool = *(void **)s;
        }
        tracer_process_unlock();
    }
    if (!s) {
        s = (void *)syscall(SYS_mmap, NULL, tracer_h2_state_size(), PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (s == MAP_FAILED)
            return NULL;
    }
    return s;
}

static void tracer_h2_state_put(struct tracer_h2 *h)
{
    syscall(SYS_madvise, h, tracer_h2_state_size(), MADV_DONTNEED);
    if (tracer_process_lock() != 0)
        return;
    *(void **)h = tracer_h2_pool;
    tracer_h2_pool = h;
    tracer_process_unlock();
}

void tracer_fd_clear(struct tracer_fd *f)
{
    if (f->h2)
        tracer_h2_state_put(f->h2);
    memset(f, 0, sizeof *f);
}

void tracer_fd_reset(int fd)
{
    struct tracer_fd *f = tracer_fd_get(fd);
    if (!f)
        return;
    tracer_fd_unlink(fd, f);
    tracer_fd_clear(f);
}

struct tracer_fd *tracer_fd_opened_deferred(int fd, uint32_t path_id, int append, uint32_t owner)
{
    struct tracer_fd *f = tracer_fd_get(fd);
    if (!f)
        return NULL;
    tracer_fd_unlink(fd, f); /* fd reused after a close we did not see */
    tracer_fd_clear(f);
    f->path_id = path_id;
    f->flags = TRACER_FDF_OPEN_PENDING | (append ? TRACER_FDF_APPEND : 0);
    f->open_owner = owner;
    return f;
}

struct tracer_fd *tracer_fd_settle_open(int fd, const struct stat *st, int trunc, uint32_t owner)
{
    struct tracer_fd *f = tracer_fd_get(fd);
    if (!f || !(f->flags & TRACER_FDF_OPEN_PENDING) || f->open_owner != owner)
        return NULL;
    f->flags &= (uint16_t)~TRACER_FDF_OPEN_PENDING;
    if (f->kind != TRACER_FD_UNKNOWN)
        return f; /* another thread's call classified it already */
    if (!st) {
        tracer_fd_reset(fd); /* closed behind our back */
        return NULL;
    }
    /* the offset stays as opened (0) or as a dup's I/O moved it meanwhile */
    tracer_fd_fill_from_stat(f, st);
    if (trunc && f->kind == TRACER_FD_FILE)
        f->size = 0;
    /* descriptors dup'd from it meanwhile were copied unclassified */
    int steps = 0;
    for (struct tracer_fd *p = f; (p = tracer_fd_ring_next(f, p, &steps)) != NULL;) {
        if (p->kind == TRACER_FD_UNKNOWN) {
            p->kind = f->kind;
            p->dev = f->dev;
            p->ino = f->ino;
            p->size = f->size;
            p->offset = f->offset;
        }
    }
    return f;
}

struct tracer_fd *tracer_fd_opened_file(int fd, uint32_t path_id, int append)
{
    if (!tracer_fd_opened_deferred(fd, path_id, append, 0))
        return NULL;
    struct stat st;
    return tracer_fd_settle_open(fd, syscall(SYS_fstat, fd, &st) == 0 ? &st : NULL, 0, 0);
}

void tracer_fd_dup(int oldfd, int newfd)
{
    /* a deferred open's entry is copied unclassified: its settling fills
     * the copies (tracer_fd_settle_open) without an fstat of ours */
    struct tracer_fd *a = tracer_fd_get(oldfd);
    if (!a || !(a->flags & TRACER_FDF_OPEN_PENDING))
        a = tracer_fd_classify(oldfd);
    struct tracer_fd *b = tracer_fd_get(newfd);
    if (!b || oldfd == newfd)
        return;
    tracer_fd_unlink(newfd, b); /* dup2/dup3 closed whatever newfd was */
    tracer_fd_clear(b);
    if (!a)
        return;
    *b = *a;
    /* the open is oldfd's, and so is the HTTP/2 parser */
    b->flags &= (uint16_t) ~(TRACER_FDF_OPEN_PENDING | TRACER_FDF_H2);
    b->h2 = NULL;
    /* both now name one open file description: link newfd in after oldfd */
    b->dup_next_plus1 = a->dup_next_plus1 ? a->dup_next_plus1 : oldfd + 1;
    a->dup_next_plus1 = newfd + 1;
}
