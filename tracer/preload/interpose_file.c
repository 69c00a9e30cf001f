/* interpose_file.c - wrappers for descriptor creation and the data path of
 * files and sockets used through file calls: open*, creat, shm_open, close, dup*,
 * read/write and their p/v/v2 variants (plus glibc's fortified __*_chk
 * forms), fsync, fdatasync, syncfs, sync_file_range, lseek, ftruncate,
 * fallocate, posix_fallocate, sendfile, copy_file_range, splice.
 * Each wrapper calls the real function exactly once with the caller's
 * arguments, keeps its result and errno, and describes it to io_events. */
#include "interpose_file.h"

#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io_events.h"

TRACER_REAL(int, open, (const char *, int, ...))
TRACER_REAL(int, shm_open, (const char *, int, mode_t))
TRACER_REAL(int, open64, (const char *, int, ...))
TRACER_REAL(int, openat, (int, const char *, int, ...))
TRACER_REAL(int, openat64, (int, const char *, int, ...))
TRACER_REAL(int, __open_2, (const char *, int))
TRACER_REAL(int, __open64_2, (const char *, int))
TRACER_REAL(int, __openat_2, (int, const char *, int))
TRACER_REAL(int, __openat64_2, (int, const char *, int))
TRACER_REAL(int, creat, (const char *, mode_t))
TRACER_REAL(int, creat64, (const char *, mode_t))
TRACER_REAL(int, close, (int))
TRACER_REAL(int, dup, (int))
TRACER_REAL(int, dup2, (int, int))
TRACER_REAL(int, dup3, (int, int, int))
TRACER_REAL(ssize_t, read, (int, void *, size_t))
TRACER_REAL(ssize_t, __read_chk, (int, void *, size_t, size_t))
TRACER_REAL(ssize_t, write, (int, const void *, size_t))
TRACER_REAL(ssize_t, pread, (int, void *, size_t, off_t))
TRACER_REAL(ssize_t, pread64, (int, void *, size_t, off_t))
TRACER_REAL(ssize_t, __pread_chk, (int, void *, size_t, off_t, size_t))
TRACER_REAL(ssize_t, __pread64_chk, (int, void *, size_t, off_t, size_t))
TRACER_REAL(ssize_t, pwrite, (int, const void *, size_t, off_t))
TRACER_REAL(ssize_t, pwrite64, (int, const void *, size_t, off_t))
TRACER_REAL(ssize_t, readv, (int, const struct iovec *, int))
TRACER_REAL(ssize_t, writev, (int, const struct iovec *, int))
TRACER_REAL(ssize_t, preadv, (int, const struct iovec *, int, off_t))
TRACER_REAL(ssize_t, preadv64, (int, const struct iovec *, int, off_t))
TRACER_REAL(ssize_t, pwritev, (int, const struct iovec *, int, off_t))
TRACER_REAL(ssize_t, pwritev64, (int, const struct iovec *, int, off_t))
TRACER_REAL(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int))
TRACER_REAL(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int))
TRACER_REAL(int, fsync, (int))
TRACER_REAL(int, fdatasync, (int))
TRACER_REAL(off_t, lseek, (int, off_t, int))
TRACER_REAL(off_t, lseek64, (int, off_t, int))
TRACER_REAL(int, ftruncate, (int, off_t))
TRACER_REAL(int, ftruncate64, (int, off_t))
TRACER_REAL(int, fallocate, (int, int, off_t, off_t))
TRACER_REAL(int, fallocate64, (int, int, off_t, off_t))
TRACER_REAL(int, posix_fallocate, (int, off_t, off_t))
TRACER_REAL(int, posix_fallocate64, (int, off_t, off_t))
TRACER_REAL(int, sync_file_range, (int, off_t, off_t, unsigned))
TRACER_REAL(int, syncfs, (int))
TRACER_REAL(ssize_t, sendfile, (int, int, off_t *, size_t))
TRACER_REAL(ssize_t, sendfile64, (int, int, off_t *, size_t))
TRACER_REAL(ssize_t, copy_file_range, (int, off_t *, int, off_t *, size_t, unsigned))
TRACER_REAL(ssize_t, splice, (int, loff_t *, int, loff_t *, size_t, unsigned))

static size_t tracer_iov_total(const struct iovec *iov, int iovcnt)
{
    size_t n = 0;
    for (int i = 0; iov && i < iovcnt; i++)
        n += iov[i].iov_len;
    return n;
}

/* ---- open family --------------------------------------------------------- */

static int tracer_open_needs_mode(int flags)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

/* dir (its dlen bytes at out) + "/" + path, leading "./" dropped, in out;
 * `path` itself when the result would not fit. */
static const char *tracer_path_join(char *out, size_t dlen, const char *path, size_t cap)
{
    while (path[0] == '.' && path[1] == '/')
        for (path += 2; *path == '/'; path++) {
        }
    size_t plen = strlen(path);
    size_t at = dlen;
    if (at > 1)
        out[at++] = '/'; /* the root is "/" already */
    if (at + plen + 1 > cap)
        return path;
    memcpy(out + at, path, plen + 1);
    return out;
}

/* A relative path made absolute: the directory's path + "/" + path, the
 * directory being dirfd's (one readlink of /proc/self/fd/N) or, for
 * AT_FDCWD, the working directory (one getcwd: postgres, for one, opens
 * its data files relative to the data directory). Returns `path` itself
 * when there is nothing to resolve or it cannot be resolved (fd not a
 * directory we can name, result too long). ".." is kept as written. Raw
 * syscalls and no stdio: it runs inside open wrappers, possibly from a
 * signal handler. */
static const char *tracer_resolve_at(int dirfd, const char *path, char *out, size_t cap)
{
    if (!path || path[0] == '/' || (dirfd < 0 && dirfd != AT_FDCWD))
        return path;
    if (dirfd == AT_FDCWD) { /* the working directory, as the kernel has it now */
        long clen = syscall(SYS_getcwd, out, cap);
        return clen > 1 && out[0] == '/' ? tracer_path_join(out, (size_t)clen - 1, path, cap)
                                         : path;
    }
    char link[32] = "/proc/self/fd/";
    size_t n = 14;
    char digits[12];
    int nd = 0;
    for (unsigned v = (unsigned)dirfd; nd == 0 || v; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    while (nd)
        link[n++] = digits[--nd];
    link[n] = 0;
    long dlen = syscall(SYS_readlink, link, out, cap);
    if (dlen <= 0 || out[0] != '/')
        return path;
    return tracer_path_join(out, (size_t)dlen, path, cap);
}

uint32_t tracer_open_path_id(int dirfd, const char *path, int *filtered)
{
    char resolved[4096];
    path = tracer_resolve_at(dirfd, path, resolved, sizeof resolved);
    const char *filter = tracer_global.control->path_filter;
    *filtered = filter[0] && path && strncmp(path, filter, strlen(filter)) != 0;
    return (!*filtered && path) ? tracer_intern(path, strlen(path)) : 0;
}

/* The identity an OPEN record takes from the descriptor's entry. */
static void tracer_open_identity(struct trace_event *ev, const struct tracer_fd *f)
{
    if (f) {
        ev->u.file.dev = f->dev;
        ev->u.file.ino = f->ino;
        ev->u.file.file_size = f->size;
    }
}

/* An OPEN record's fields but the identity (ev zero-filled). */
static void tracer_open_fill(struct trace_event *ev, int fd, int err, uint32_t path_id, int flags,
                             uint16_t event_flags)
{
    ev->flags |= event_flags;
    ev->u.file.fd = fd;
    ev->u.file.path_id = path_id;
    ev->u.file.open_flags = (uint32_t)flags;
    ev->u.file.offset = -1;
    ev->u.file.result = fd >= 0 ? fd : -err;
    if (fd < 0)
        ev->flags |= TRACE_F_ERROR;
}

void tracer_open_record(struct tracer_thread *t, int fd, int err, uint32_t path_id, int flags,
                        const struct tracer_fd *f, uint16_t event_flags, uint64_t begin,
                        uint64_t end)
{
    struct trace_event *ev = tracer_event_new(t, TRACE_EV_FILE, TRACE_FILE_OPEN, begin, end);
    if (!ev)
        return;
    tracer_open_fill(ev, fd, err, path_id, flags, event_flags);
    tracer_open_identity(ev, f);
    tracer_commit(t);
}

/* Puts a deferred open's record in the thread's ring without publishing
 * it, so that it reaches the trace even when the process ends before the
 * thread settles it (exit() in another thread, _exit, SIGKILL): the
 * collector takes a ring's staged record from a process that is gone
 * (collector_drain_region). Until then nothing else is written to the
 * ring (the thread's next traced call settles the open first), and
 * settling fills in the identity and publishes it, or drops it. 0 when
 * the record does not fit at once (a full ring, or the ring's end): the
 * open is then not deferred (tracer_open_defer). The busy mark is held. */
static int tracer_open_stage(struct tracer_thread *t, struct tracer_open_pending *p)
{
    enum { NEED = TRACER_EVENT_RECORD_BYTES(file) };
    uint64_t head;
    p->staged = NULL;
    struct tracer_record_header *h = t->ring ? tracer_reserve_fast_at(t, NEED, &head) : NULL;
    if (!h)
        return 0;
    tracer_record_header_set(h, NEED, TRACER_REC_EVENT, p->cpu);
    struct trace_event *ev = (struct trace_event *)(h + 1);
    tracer_event_head_set(ev, TRACER_EVENT_BYTES(file), t, TRACE_EV_FILE, TRACE_FILE_OPEN, p->begin,
                          p->end);
    tracer_open_fill(ev, p->fd, 0, p->path_id, (int)p->open_flags, 0);
    atomic_store_explicit(&t->ring->staged_head, head + 1, memory_order_release);
    p->staged = ev;
    p->staged_end = head + NEED;
    return 1;
}

/* After an open that returned a descriptor, its record waits for the
 * file's identity instead of an fstat of ours (tracer_open_settle): the
 * event's times and CPU are kept, and the CPU mark moves past the open as
 * if it had been written. Not with --stacks (the record's stack would be
 * the later call's). Both change the wait with the busy mark up: a
 * signal handler's traced call then records nothing (counted as lost)
 * rather than settle a half-written wait or write its events before the
 * open's. */
static int tracer_open_defer(struct tracer_thread *t, int fd, uint32_t path_id, int flags,
                             uint64_t begin, uint64_t end)
{
    if (tracer_global.stack_depth || t->open_pending.active)
        return 0;
    if (!tracer_fd_opened_deferred(fd, path_id, (flags & O_APPEND) != 0, t->tid))
        return 0;
    tracer_busy_enter(t);
    if (t->open_pending.active) { /* a signal handler's open waits already */
        tracer_busy_leave(t);
        return 0;
    }
    struct tracer_open_pending *p = &t->open_pending;
    p->fd = fd;
    p->path_id = path_id;
    p->open_flags = (uint32_t)flags;
    p->begin = begin;
    p->end = end;
    p->cpu = t->pending_cpu;
    p->window = t->window;
    if (!tracer_open_stage(t, p)) {
        /* unstaged, an end before settling would lose the record: it is
         * written now, with an fstat of ours (the caller resets the entry) */
        tracer_busy_leave(t);
        return 0;
    }
    p->active = 1;
    t->window = TRACER_WINDOW_RESERVED;
    t->recorded = 1; /* the next CPU segment starts at the open's end */
    tracer_event_end(t, end);
    tracer_busy_leave(t);
    return 1;
}

void tracer_open_settle(struct tracer_thread *t, const struct stat *st)
{
    int saved_errno = errno;
    /* our fstat, when needed, before the busy mark: a signal that lands on
     * its return is the handler's to record (and to settle this open
     * first, which leaves us nothing to do) */
    struct stat own;
    if (!st && syscall(SYS_fstat, t->open_pending.fd, &own) == 0)
        st = &own;
    tracer_busy_enter(t);
    if (t->open_pending.active) {
        struct tracer_open_pending p = t->open_pending;
        t->open_pending.active = 0;
        t->window = p.window;
        struct tracer_fd *f =
            tracer_fd_settle_open(p.fd, st, (p.open_flags & O_TRUNC) != 0, t->tid);
        /* f NULL: the descriptor was closed before this thread made a
         * traced call (by another thread, or where we could not see); the
         * record says where it was opened, without identity */
        /* the staged record (tracer_open_defer staged it) is published, or
         * dropped for a descriptor that is no file: the next record goes
         * where it is */
        if (!f || f->kind == TRACER_FD_FILE) {
            tracer_open_identity(p.staged, f);
            tracer_publish(t, p.staged_end); /* staged_head is stale from here */
        }
        atomic_store_explicit(&t->ring->staged_head, 0, memory_order_release);
    }
    tracer_busy_leave(t);
    errno = saved_errno;
}

static int tracer_opened(struct tracer_thread *t, int dirfd, const char *path, int flags, int fd,
                         int err, uint64_t begin)
{
    uint64_t end = tracer_ring_now();
    int filtered;
    uint32_t path_id = tracer_open_path_id(dirfd, path, &filtered);
    struct tracer_fd *f = NULL;
    if (fd >= 0) {
        if (!filtered && tracer_open_defer(t, fd, path_id, flags, begin, end))
            return fd;
        f = tracer_fd_opened_file(fd, path_id, (flags & O_APPEND) != 0);
        if (f && f->kind == TRACER_FD_FILE && (flags & O_TRUNC))
            f->size = 0;
    }
    if (!filtered && (!f || f->kind == TRACER_FD_FILE))
        tracer_open_record(t, fd, err, path_id, flags, f, 0, begin, end);
    tracer_event_end(t, end);
    return fd;
}

/* The mode argument of the variadic open forms, read only when the flags
 * say it was passed. Declares `mode`. */
#define TRACER_OPEN_MODE(flags)                                                                    \
    mode_t mode = 0;                                                                               \
    if (tracer_open_needs_mode(flags)) {                                                           \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        mode = (mode_t)va_arg(ap, int);                                                            \
        va_end(ap);                                                                                \
    }

#define TRACER_OPEN_BODY(realcall, dirfd)                                                          \
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE);                                      \
    if (!t)                                                                                        \
        return realcall;                                                                           \
    uint64_t begin = tracer_event_begin(t);                                                        \
    int fd = realcall;                                                                             \
    int err = errno;                                                                               \
    tracer_opened(t, dirfd, path, flags, fd, err, begin);                                          \
    errno = err;                                                                                   \
    return fd;

TRACER_EXPORT int open(const char *path, int flags, ...)
{
    TRACER_OPEN_MODE(flags);
    TRACER_OPEN_BODY(tracer_real_open()(path, flags, mode), AT_FDCWD);
}

TRACER_EXPORT int open64(const char *path, int flags, ...)
{
    TRACER_OPEN_MODE(flags);
    TRACER_OPEN_BODY(tracer_real_open64()(path, flags, mode), AT_FDCWD);
}

TRACER_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    TRACER_OPEN_MODE(flags);
    TRACER_OPEN_BODY(tracer_real_openat()(dirfd, path, flags, mode), dirfd);
}

TRACER_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    TRACER_OPEN_MODE(flags);
    TRACER_OPEN_BODY(tracer_real_openat64()(dirfd, path, flags, mode), dirfd);
}

TRACER_EXPORT int __open_2(const char *path, int flags)
{
    TRACER_OPEN_BODY(tracer_real___open_2()(path, flags), AT_FDCWD);
}

TRACER_EXPORT int __open64_2(const char *path, int flags)
{
    TRACER_OPEN_BODY(tracer_real___open64_2()(path, flags), AT_FDCWD);
}

TRACER_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    TRACER_OPEN_BODY(tracer_real___openat_2()(dirfd, path, flags), dirfd);
}

TRACER_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    TRACER_OPEN_BODY(tracer_real___openat64_2()(dirfd, path, flags), dirfd);
}

/* glibc opens POSIX shared memory with its internal open, which LD_PRELOAD
 * cannot see: the OPEN record names the file in /dev/shm the call opens
 * (PostgreSQL's dynamic shared memory, then ftruncated and closed). */
TRACER_EXPORT int shm_open(const char *name, int flags, mode_t mode)
{
    static const char dir[] = "/dev/shm/"; /* no stdio: a signal handler may open */
    char shm_path[256];
    const char *path = name;
    if (name) {
        const char *base = name + (name[0] == '/');
        size_t n = strlen(base);
        if (sizeof dir - 1 + n < sizeof shm_path) {
            memcpy(shm_path, dir, sizeof dir - 1);
            memcpy(shm_path + sizeof dir - 1, base, n + 1);
            path = shm_path;
        }
    }
    TRACER_OPEN_BODY(tracer_real_shm_open()(name, flags, mode), AT_FDCWD);
}

TRACER_EXPORT int creat(const char *path, mode_t mode)
{
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    TRACER_OPEN_BODY(tracer_real_creat()(path, mode), AT_FDCWD);
}

TRACER_EXPORT int creat64(const char *path, mode_t mode)
{
    int flags = O_CREAT | O_WRONLY | O_TRUNC;
    TRACER_OPEN_BODY(tracer_real_creat64()(path, mode), AT_FDCWD);
}

/* ---- fstat: the identity a deferred OPEN record waits for ------------------ */

TRACER_REAL(int, fstat, (int, struct stat *))
TRACER_REAL(int, fstat64, (int, struct stat64 *))
TRACER_REAL(int, fstatat, (int, const char *, struct stat *, int))
TRACER_REAL(int, fstatat64, (int, const char *, struct stat64 *, int))
TRACER_REAL(int, statx, (int, const char *, int, unsigned, struct statx *))

/* Does an fstatat path name dirfd itself (with AT_EMPTY_PATH)? NULL does
 * too since Linux 6.11, though glibc declares the argument nonnull: the
 * pointer is laundered so that the test is not optimised away. */
static inline int tracer_stat_path_is_fd(const char *path, int flags)
{
    __asm__("" : "+r"(path));
    return (flags & AT_EMPTY_PATH) && (!path || !path[0]);
}

_Static_assert(sizeof(struct stat) == sizeof(struct stat64), "fstat64 fills a struct stat");

/* The app's fstat of `fd` succeeded with `st`: when this thread's deferred
 * open is that descriptor, its record takes the identity from there. Any
 * other stat call records nothing and leaves the open waiting. */
static inline void tracer_fstat_seen(int fd, const struct stat *st)
{
    tracer_open_settle_if(&tracer_tls, fd, st);
}

TRACER_EXPORT int fstat(int fd, struct stat *st)
{
    int rc = tracer_real_fstat()(fd, st);
    if (rc == 0)
        tracer_fstat_seen(fd, st);
    return rc;
}

TRACER_EXPORT int fstat64(int fd, struct stat64 *st)
{
    int rc = tracer_real_fstat64()(fd, st);
    if (rc == 0)
        tracer_fstat_seen(fd, (const struct stat *)st); /* one layout on 64-bit Linux */
    return rc;
}

TRACER_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    int rc = tracer_real_fstatat()(dirfd, path, st, flags);
    if (rc == 0 && tracer_stat_path_is_fd(path, flags))
        tracer_fstat_seen(dirfd, st);
    return rc;
}

TRACER_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
    int rc = tracer_real_fstatat64()(dirfd, path, st, flags);
    if (rc == 0 && tracer_stat_path_is_fd(path, flags))
        tracer_fstat_seen(dirfd, (const struct stat *)st);
    return rc;
}

/* statx(fd, "", AT_EMPTY_PATH, ...) (Rust's std, recent coreutils): the
 * fields an OPEN record needs, when the app asked for them all. */
TRACER_EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *stx)
{
    int rc = tracer_real_statx()(dirfd, path, flags, mask, stx);
    const unsigned need = STATX_TYPE | STATX_INO | STATX_SIZE;
    if (rc == 0 && tracer_stat_path_is_fd(path, flags) && (stx->stx_mask & need) == need) {
        struct stat st;
        memset(&st, 0, sizeof st);
        st.st_dev = makedev(stx->stx_dev_major, stx->stx_dev_minor);
        st.st_ino = stx->stx_ino;
        st.st_mode = stx->stx_mode;
        st.st_size = (off_t)stx->stx_size;
        tracer_fstat_seen(dirfd, &st);
    }
    return rc;
}

/* ---- close and dup -------------------------------------------------------- */

TRACER_EXPORT int close(int fd)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_ALL);
    if (!t) {
        tracer_fd_reset(fd);
        return tracer_real_close()(fd);
    }
    struct tracer_fd *f = tracer_fd_get(fd);
    /* another thread's open still waiting for its identity: take it now,
     * while the descriptor is open, so that the CLOSE record has it */
    if (TRACER_UNLIKELY(f && (f->flags & TRACER_FDF_OPEN_PENDING)))
        f = tracer_fd_classify(fd);
    struct tracer_fd copy; /* what the record needs: the identity, not the parsing state */
    int kind = f ? f->kind : TRACER_FD_UNKNOWN;
    if (f)
        memcpy(&copy, f, TRACER_FD_IDENTITY_BYTES);
    uint64_t begin = tracer_event_begin(t);
    int rc = tracer_real_close()(fd);
    int err = errno;
    uint64_t end = tracer_ring_now();
    if (rc == 0 || err != EBADF)
        tracer_fd_reset(fd);
    if (kind == TRACER_FD_SOCKET && copy.conn_id && (tracer_global.only_mask & TRACER_ONLY_NET) &&
        !tracer_net_filtered(&copy)) {
        tracer_conn_lifecycle(t, fd, copy.conn_id, copy.proto, TRACE_CONN_CLOSE, rc == 0 ? 0 : -err,
                              begin, end);
    } else if (kind == TRACER_FD_FILE && (tracer_global.only_mask & TRACER_ONLY_FILE) &&
               !tracer_path_filtered(&copy)) {
        tracer_file_simple(t, fd, &copy, TRACE_FILE_CLOSE, rc == 0 ? 0 : -err, begin, end);
    }
    tracer_event_end(t, end);
    errno = err;
    return rc;
}

TRACER_EXPORT int dup(int fd)
{
    struct tracer_thread *t = tracer_dup_enter(fd);
    uint64_t begin = t ? tracer_event_begin(t) : 0;
    int r = tracer_real_dup()(fd);
    int err = errno;
    tracer_dup_done(t, fd, r, err, begin);
    errno = err;
    return r;
}

TRACER_EXPORT int dup2(int fd, int fd2)
{
    tracer_open_settle_if(&tracer_tls, fd2, NULL); /* its entry is about to be replaced */
    struct tracer_thread *t = tracer_dup_enter(fd);
    uint64_t begin = t ? tracer_event_begin(t) : 0;
    int r = tracer_real_dup2()(fd, fd2);
    int err = errno;
    tracer_dup_done(t, fd, r, err, begin);
    errno = err;
    return r;
}

TRACER_EXPORT int dup3(int fd, int fd2, int flags)
{
    tracer_open_settle_if(&tracer_tls, fd2, NULL); /* its entry is about to be replaced */
    struct tracer_thread *t = tracer_dup_enter(fd);
    uint64_t begin = t ? tracer_event_begin(t) : 0;
    int r = tracer_real_dup3()(fd, fd2, flags);
    int err = errno;
    tracer_dup_done(t, fd, r, err, begin);
    errno = err;
    return r;
}

/* ---- data path ------------------------------------------------------------ */

#define TRACER_IO_BODY(realcall, DIR, OFFSET, SIZE, IOV, IOVCNT)                                   \
    TRACER_TRANSFER_BODY(realcall, ssize_t, DIR, OFFSET, SIZE, IOV, IOVCNT, 0, 0, NULL, 0)

TRACER_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
    TRACER_IO_BODY(tracer_real_read()(fd, buf, n), TRACER_IO_IN, -1, n, TRACER_ONE_IOV(buf, n), 1);
}

TRACER_EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    TRACER_IO_BODY(tracer_real___read_chk()(fd, buf, n, buflen), TRACER_IO_IN, -1, n,
                   TRACER_ONE_IOV(buf, n), 1);
}

TRACER_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
    TRACER_IO_BODY(tracer_real_write()(fd, buf, n), TRACER_IO_OUT, -1, n, TRACER_ONE_IOV(buf, n), 1)
}

TRACER_EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    TRACER_IO_BODY(tracer_real_pread()(fd, buf, n, off), TRACER_IO_IN, off, n, NULL, 0);
}

TRACER_EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
    TRACER_IO_BODY(tracer_real_pread64()(fd, buf, n, off), TRACER_IO_IN, off, n, NULL, 0);
}

TRACER_EXPORT ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    TRACER_IO_BODY(tracer_real___pread_chk()(fd, buf, n, off, buflen), TRACER_IO_IN, off, n, NULL,
                   0);
}

TRACER_EXPORT ssize_t __pread64_chk(int fd, void *buf, size_t n, off_t off, size_t buflen)
{
    TRACER_IO_BODY(tracer_real___pread64_chk()(fd, buf, n, off, buflen), TRACER_IO_IN, off, n, NULL,
                   0);
}

TRACER_EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    TRACER_IO_BODY(tracer_real_pwrite()(fd, buf, n, off), TRACER_IO_OUT, off, n, NULL, 0);
}

TRACER_EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    TRACER_IO_BODY(tracer_real_pwrite64()(fd, buf, n, off), TRACER_IO_OUT, off, n, NULL, 0);
}

TRACER_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
    TRACER_IO_BODY(tracer_real_readv()(fd, iov, cnt), TRACER_IO_IN, -1, tracer_iov_total(iov, cnt),
                   iov, cnt)
}

TRACER_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    TRACER_IO_BODY(tracer_real_writev()(fd, iov, cnt), TRACER_IO_OUT, -1,
                   tracer_iov_total(iov, cnt), iov, cnt);
}

TRACER_EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
    TRACER_IO_BODY(tracer_real_preadv()(fd, iov, cnt, off), TRACER_IO_IN, off,
                   tracer_iov_total(iov, cnt), NULL, 0);
}

TRACER_EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    TRACER_IO_BODY(tracer_real_preadv64()(fd, iov, cnt, off), TRACER_IO_IN, off,
                   tracer_iov_total(iov, cnt), NULL, 0);
}

TRACER_EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    TRACER_IO_BODY(tracer_real_pwritev()(fd, iov, cnt, off), TRACER_IO_OUT, off,
                   tracer_iov_total(iov, cnt), NULL, 0);
}

TRACER_EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    TRACER_IO_BODY(tracer_real_pwritev64()(fd, iov, cnt, off), TRACER_IO_OUT, off,
                   tracer_iov_total(iov, cnt), NULL, 0);
}

TRACER_EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    TRACER_IO_BODY(tracer_real_preadv2()(fd, iov, cnt, off, flags), TRACER_IO_IN, off,
                   tracer_iov_total(iov, cnt), off < 0 ? iov : NULL, off < 0 ? cnt : 0);
}

TRACER_EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
    TRACER_IO_BODY(tracer_real_pwritev2()(fd, iov, cnt, off, flags), TRACER_IO_OUT, off,
                   tracer_iov_total(iov, cnt), off < 0 ? iov : NULL, off < 0 ? cnt : 0);
}

/* ---- sync, seek, truncate ------------------------------------------------- */

static int tracer_sync(int fd, int (*real)(int), uint8_t op)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE);
    if (!t)
        return real(fd);
    uint64_t begin = tracer_event_begin(t);
    int r = real(fd);
    int err = errno;
    uint64_t end = tracer_ring_now();
    struct tracer_fd *f = tracer_fd_classify(fd);
    if (!tracer_path_filtered(f))
        tracer_file_simple(t, fd, f, op, r == 0 ? 0 : -err, begin, end);
    tracer_event_end(t, end);
    errno = err;
    return r;
}

TRACER_EXPORT int fsync(int fd)
{
    return tracer_sync(fd, tracer_real_fsync(), TRACE_FILE_FSYNC);
}

TRACER_EXPORT int fdatasync(int fd)
{
    return tracer_sync(fd, tracer_real_fdatasync(), TRACE_FILE_FDATASYNC);
}

TRACER_EXPORT int syncfs(int fd)
{
    return tracer_sync(fd, tracer_real_syncfs(), TRACE_FILE_SYNCFS);
}

/* lseek is not an event (it costs nothing to replay: offsets are explicit
 * in the trace); it only moves our tracked offset - also that of an open
 * whose identity still waits for the app's fstat (its settling keeps the
 * offset): an open, then lseek to the end, then a write without an fstat
 * between, recorded the write at offset 0. */
static off_t tracer_seeked(int fd, off_t r)
{
    if (r >= 0) {
        struct tracer_fd *f = tracer_fd_get(fd);
        if (f && (f->kind == TRACER_FD_FILE || (f->flags & TRACER_FDF_OPEN_PENDING))) {
            f->offset = r;
            tracer_fd_sync_shared(f);
        }
    }
    return r;
}

TRACER_EXPORT off_t lseek(int fd, off_t off, int whence)
{
    off_t r = tracer_real_lseek()(fd, off, whence);
    int err = errno;
    tracer_seeked(fd, r);
    errno = err;
    return r;
}

TRACER_EXPORT off_t lseek64(int fd, off_t off, int whence)
{
    off_t r = tracer_real_lseek64()(fd, off, whence);
    int err = errno;
    tracer_seeked(fd, r);
    errno = err;
    return r;
}

static int tracer_truncated(int fd, off_t len, int r, int err, struct tracer_thread *t,
                            uint64_t begin)
{
    uint64_t end = tracer_ring_now();
    struct tracer_fd *f = tracer_fd_classify(fd);
    struct trace_event *ev =
        tracer_path_filtered(f)
            ? NULL
            : tracer_event_new(t, TRACE_EV_FILE, TRACE_FILE_TRUNCATE, begin, end);
    if (ev) {
        ev->u.file.fd = fd;
        ev->u.file.offset = len;
        ev->u.file.result = r == 0 ? 0 : -err;
        tracer_file_identity(&ev->u.file, f);
        tracer_commit(t);
    }
    if (r == 0 && f) {
        f->size = (uint64_t)len;
        tracer_fd_sync_shared(f);
    }
    tracer_event_end(t, end);
    return r;
}

/* ftruncate and ftruncate64 differ only in the function they wrap. */
static int tracer_ftruncate_common(tracer_ftruncate_fn real, int fd, off_t len)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE);
    if (!t)
        return real(fd, len);
    uint64_t begin = tracer_event_begin(t);
    int r = real(fd, len);
    int err = errno;
    tracer_truncated(fd, len, r, err, t, begin);
    errno = err;
    return r;
}

TRACER_EXPORT int ftruncate(int fd, off_t len)
{
    return tracer_ftruncate_common(tracer_real_ftruncate(), fd, len);
}

TRACER_EXPORT int ftruncate64(int fd, off_t len)
{
    return tracer_ftruncate_common(tracer_real_ftruncate64(), fd, len);
}

/* ---- space and writeback of a range --------------------------------------- */

/* A FALLOCATE or SYNC_RANGE record: the range, the call's mode or flags,
 * the result (0 or -errno) and the size before; a successful allocation
 * moves the tracked size as the kernel does. */
static void tracer_range_recorded(struct tracer_thread *t, int fd, uint8_t op, int64_t off,
                                  int64_t len, uint32_t flags, int result, uint64_t begin)
{
    uint64_t end = tracer_ring_now();
    struct tracer_fd *f = tracer_fd_classify(fd);
    struct trace_event *ev =
        tracer_path_filtered(f) ? NULL : tracer_event_new(t, TRACE_EV_FILE, op, begin, end);
    if (ev) {
        ev->u.file.fd = fd;
        ev->u.file.offset = off;
        ev->u.file.size = (uint64_t)len;
        ev->u.file.open_flags = flags;
        ev->u.file.result = result;
        if (result < 0)
            ev->flags |= TRACE_F_ERROR;
        tracer_file_identity(&ev->u.file, f);
        tracer_commit(t);
    }
    if (op == TRACE_FILE_FALLOCATE && result == 0 && f && f->kind == TRACER_FD_FILE) {
        uint64_t range_end = (uint64_t)off + (uint64_t)len;
        if (flags & FALLOC_FL_COLLAPSE_RANGE)
            f->size = f->size > (uint64_t)len ? f->size - (uint64_t)len : 0;
        else if (flags & FALLOC_FL_INSERT_RANGE)
            f->size += (uint64_t)len;
        else if (!(flags & (FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE)) && range_end > f->size)
            f->size = range_end; /* an allocation or zeroing that extends */
        tracer_fd_sync_shared(f);
    }
    tracer_event_end(t, end);
}

/* fallocate and fallocate64: -1 and errno on failure. */
static int tracer_fallocate_common(tracer_fallocate_fn real, int fd, int mode, off_t off, off_t len)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE);
    if (!t)
        return real(fd, mode, off, len);
    uint64_t begin = tracer_event_begin(t);
    int r = real(fd, mode, off, len);
    int err = errno;
    tracer_range_recorded(t, fd, TRACE_FILE_FALLOCATE, off, len, (uint32_t)mode, r == 0 ? 0 : -err,
                          begin);
    errno = err;
    return r;
}

TRACER_EXPORT int fallocate(int fd, int mode, off_t off, off_t len)
{
    return tracer_fallocate_common(tracer_real_fallocate(), fd, mode, off, len);
}

TRACER_EXPORT int fallocate64(int fd, int mode, off_t off, off_t len)
{
    return tracer_fallocate_common(tracer_real_fallocate64(), fd, mode, off, len);
}

/* posix_fallocate and posix_fallocate64 return the error number and leave
 * errno alone. */
static int tracer_posix_fallocate_common(tracer_posix_fallocate_fn real, int fd, off_t off,
                                         off_t len)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE);
    if (!t)
        return real(fd, off, len);
    int saved = errno;
    uint64_t begin = tracer_event_begin(t);
    int rc = real(fd, off, len);
    tracer_range_recorded(t, fd, TRACE_FILE_FALLOCATE, off, len, 0, -rc, begin);
    errno = saved;
    return rc;
}

TRACER_EXPORT int posix_fallocate(int fd, off_t off, off_t len)
{
    return tracer_posix_fallocate_common(tracer_real_posix_fallocate(), fd, off, len);
}

TRACER_EXPORT int posix_fallocate64(int fd, off_t off, off_t len)
{
    return tracer_posix_fallocate_common(tracer_real_posix_fallocate64(), fd, off, len);
}

TRACER_EXPORT int sync_file_range(int fd, off_t off, off_t nbytes, unsigned flags)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE);
    if (!t)
        return tracer_real_sync_file_range()(fd, off, nbytes, flags);
    uint64_t begin = tracer_event_begin(t);
    int r = tracer_real_sync_file_range()(fd, off, nbytes, flags);
    int err = errno;
    tracer_range_recorded(t, fd, TRACE_FILE_SYNC_RANGE, off, nbytes, flags, r == 0 ? 0 : -err,
                          begin);
    errno = err;
    return r;
}

/* ---- fd-to-fd copies ------------------------------------------------------ */

/* sendfile and copy_file_range read from one descriptor and write to
 * another: recorded as the read side (FILE op with fd2 = out) followed by
 * the write side through io_events (a NET send when out is a socket). */
static void tracer_copy_recorded(struct tracer_thread *t, uint8_t op, int in_fd, int64_t in_off,
                                 int out_fd, int64_t out_off, size_t n, ssize_t r, int err,
                                 uint64_t begin, uint64_t end)
{
    struct tracer_fd *in = tracer_fd_classify_after(in_fd, 0, in_off, r);
    struct trace_event *ev =
        tracer_path_filtered(in) ? NULL : tracer_event_new(t, TRACE_EV_FILE, op, begin, end);
    if (ev) {
        ev->u.file.fd = in_fd;
        ev->u.file.fd2 = out_fd;
        ev->u.file.size = n;
        ev->u.file.result = r >= 0 ? r : -err;
        ev->u.file.offset = in_off >= 0 ? in_off : (in ? in->offset : -1);
        if (r < 0)
            ev->flags |= TRACE_F_ERROR;
        tracer_file_identity(&ev->u.file, in);
        tracer_commit(t);
    }
    /* the offset moves whether or not the event was written (filtered,
     * or dropped with the ring full) */
    if (in && in_off < 0 && r > 0) {
        in->offset += r;
        tracer_fd_sync_shared(in);
    }
    struct tracer_io io = {.fd = out_fd,
                           .dir = TRACER_IO_OUT,
                           .explicit_offset = out_off,
                           .size = n,
                           .result = r >= 0 ? r : -err,
                           .begin_ns = begin,
                           .end_ns = end};
    struct tracer_fd *out = tracer_fd_classify(out_fd);
    if (r > 0 && out && (out->kind == TRACER_FD_SOCKET || out->kind == TRACER_FD_FILE))
        tracer_io_record(t, &io);
}

/* sendfile and sendfile64 differ only in the function they wrap. */
static ssize_t tracer_sendfile_common(tracer_sendfile_fn real, int out_fd, int in_fd, off_t *off,
                                      size_t n)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE | TRACER_ONLY_NET);
    if (!t)
        return real(out_fd, in_fd, off, n);
    int64_t in_off = off ? *off : -1;
    uint64_t begin = tracer_event_begin(t);
    ssize_t r = real(out_fd, in_fd, off, n);
    int err = errno;
    uint64_t end = tracer_ring_now();
    if (!(r < 0 && (err == EAGAIN || err == EWOULDBLOCK)))
        tracer_copy_recorded(t, TRACE_FILE_SENDFILE, in_fd, in_off, out_fd, -1, n, r, err, begin,
                             end);
    tracer_event_end(t, end);
    errno = err;
    return r;
}

TRACER_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *off, size_t n)
{
    return tracer_sendfile_common(tracer_real_sendfile(), out_fd, in_fd, off, n);
}

TRACER_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off_t *off, size_t n)
{
    return tracer_sendfile_common(tracer_real_sendfile64(), out_fd, in_fd, off, n);
}

TRACER_EXPORT ssize_t copy_file_range(int in_fd, off_t *in_off, int out_fd, off_t *out_off,
                                      size_t n, unsigned flags)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE);
    if (!t)
        return tracer_real_copy_file_range()(in_fd, in_off, out_fd, out_off, n, flags);
    int64_t ioff = in_off ? *in_off : -1, ooff = out_off ? *out_off : -1;
    uint64_t begin = tracer_event_begin(t);
    ssize_t r = tracer_real_copy_file_range()(in_fd, in_off, out_fd, out_off, n, flags);
    int err = errno;
    uint64_t end = tracer_ring_now();
    tracer_copy_recorded(t, TRACE_FILE_COPY_RANGE, in_fd, ioff, out_fd, ooff, n, r, err, begin,
                         end);
    tracer_event_end(t, end);
    errno = err;
    return r;
}

/* splice moves bytes between a pipe and another descriptor (or two pipes)
 * inside the kernel: proxies (HAProxy's splice options) relay a body
 * socket -> pipe -> socket with it. Each end is recorded as the transfer
 * it is - a NET recv/send on a socket, a read/write on a file (at the
 * offset given, else the tracked one), a FILE read/write on the pipe as a
 * read()/write() of it would be - so a relay's bytes are in the trace as
 * if it had used recv and send. */
static void tracer_splice_end(struct tracer_thread *t, int fd, enum tracer_io_dir dir, int64_t off,
                              size_t n, ssize_t r, int err, uint64_t begin, uint64_t end)
{
    struct tracer_io io = {.fd = fd,
                           .dir = dir,
                           .explicit_offset = off,
                           .size = n,
                           .result = r >= 0 ? r : -err,
                           .begin_ns = begin,
                           .end_ns = end};
    tracer_io_record(t, &io);
}

TRACER_EXPORT ssize_t splice(int in_fd, loff_t *in_off, int out_fd, loff_t *out_off, size_t n,
                             unsigned flags)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE | TRACER_ONLY_NET);
    if (!t)
        return tracer_real_splice()(in_fd, in_off, out_fd, out_off, n, flags);
    int64_t ioff = in_off ? *in_off : -1, ooff = out_off ? *out_off : -1;
    uint64_t begin = tracer_event_begin(t);
    ssize_t r = tracer_real_splice()(in_fd, in_off, out_fd, out_off, n, flags);
    int err = errno;
    uint64_t end = tracer_ring_now();
    /* the input side carries an end of input (0) or a failure, as read()
     * would; the output side is written only when bytes moved */
    tracer_splice_end(t, in_fd, TRACER_IO_IN, ioff, n, r, err, begin, end);
    if (r > 0)
        tracer_splice_end(t, out_fd, TRACER_IO_OUT, ooff, n, r, err, begin, end);
    tracer_event_end(t, end);
    errno = err;
    return r;
}
