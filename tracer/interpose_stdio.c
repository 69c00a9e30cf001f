/* interpose_stdio.c - buffered stdio. glibc performs the read() and write()
 * behind fread/fwrite/fprintf... through internal calls LD_PRELOAD cannot
 * see, so we watch the FILE's own buffer instead: around each wrapped call
 * (holding the stream lock, so no other thread moves the pointers), the
 * bytes pending in the write buffer and available in the read buffer tell
 * exactly how many bytes went to or came from the descriptor during the
 * call. Those become ordinary FILE (or NET) events flagged TRACE_F_STDIO,
 * with the call's duration; the tracked file offset advances by them.
 *
 * fopen/fdopen/freopen register the stream's descriptor (path, identity,
 * size) and fclose records the final flush and the close. Per-character
 * calls (getc, putc, fgetc, fputc) are not wrapped: a refill or flush they
 * trigger is not seen (the next wrapped call sees a consistent buffer), and
 * fflush(NULL) flushes streams we cannot name. See docs/tracer.md. */
/* glibc's optimized headers define vprintf and getline as extern inlines;
 * we must own those names (clang refuses an attribute on them otherwise). */
#define __NO_INLINE__ 1
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "io_events.h"

TRACER_REAL(FILE *, fopen, (const char *, const char *))
TRACER_REAL(FILE *, fopen64, (const char *, const char *))
TRACER_REAL(FILE *, fdopen, (int, const char *))
TRACER_REAL(FILE *, freopen, (const char *, const char *, FILE *))
TRACER_REAL(FILE *, freopen64, (const char *, const char *, FILE *))
TRACER_REAL(int, fclose, (FILE *))
TRACER_REAL(size_t, fread, (void *, size_t, size_t, FILE *))
TRACER_REAL(size_t, fwrite, (const void *, size_t, size_t, FILE *))
TRACER_REAL(char *, fgets, (char *, int, FILE *))
TRACER_REAL(int, fputs, (const char *, FILE *))
TRACER_REAL(int, puts, (const char *))
TRACER_REAL(int, vfprintf, (FILE *, const char *, va_list))
TRACER_REAL(int, fflush, (FILE *))
TRACER_REAL(int, fseek, (FILE *, long, int))
TRACER_REAL(int, fseeko, (FILE *, off_t, int))
TRACER_REAL(int, fseeko64, (FILE *, off_t, int))
TRACER_REAL(ssize_t, getdelim, (char **, size_t *, int, FILE *))

/* Buffer state of a stream at one instant. */
struct stdio_snapshot {
    size_t write_pending; /* bytes in the write buffer not yet written */
    size_t read_avail;    /* bytes in the read buffer not yet consumed */
};

static struct stdio_snapshot stdio_snap(FILE *f)
{
    struct stdio_snapshot s = {0, 0};
    if (f->_IO_write_ptr > f->_IO_write_base)
        s.write_pending = (size_t)(f->_IO_write_ptr - f->_IO_write_base);
    if (f->_IO_read_end > f->_IO_read_ptr)
        s.read_avail = (size_t)(f->_IO_read_end - f->_IO_read_ptr);
    return s;
}

/* Turns the buffer change over one call into the descriptor I/O it implies:
 * `produced` bytes the app handed to the stream, `consumed` bytes it took
 * out of it. */
static void stdio_account(struct tracer_thread *t, FILE *f, struct stdio_snapshot before,
                          struct stdio_snapshot after, size_t produced, size_t consumed,
                          uint64_t begin, uint64_t end, int failed)
{
    int fd = fileno(f);
    if (fd < 0)
        return;
    size_t written = 0, read_bytes = 0;
    if (before.write_pending + produced > after.write_pending)
        written = before.write_pending + produced - after.write_pending;
    if (consumed + after.read_avail > before.read_avail)
        read_bytes = consumed + after.read_avail - before.read_avail;
    if (written) {
        struct tracer_io io = {.fd = fd,
                               .dir = TRACER_IO_OUT,
                               .explicit_offset = -1,
                               .size = written,
                               .result = failed ? -EIO : (int64_t)written,
                               .event_flags = TRACE_F_STDIO,
                               .begin_ns = begin,
                               .end_ns = end};
        tracer_io_record(t, &io);
    }
    if (read_bytes) {
        struct tracer_io io = {.fd = fd,
                               .dir = TRACER_IO_IN,
                               .explicit_offset = -1,
                               .size = read_bytes,
                               .result = (int64_t)read_bytes,
                               .event_flags = TRACE_F_STDIO,
                               .begin_ns = begin,
                               .end_ns = end};
        tracer_io_record(t, &io);
    }
}

/* The common shape of every wrapped transfer: lock the stream, snapshot,
 * call, snapshot, account. PRODUCED/CONSUMED are expressions of `r`. */
#define STDIO_BODY(RTYPE, f, realcall, PRODUCED, CONSUMED, FAILED)                                 \
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE | TRACER_ONLY_NET);                    \
    if (!t)                                                                                        \
        return realcall;                                                                           \
    flockfile(f);                                                                                  \
    struct stdio_snapshot before = stdio_snap(f);                                                  \
    uint64_t begin = tracer_event_begin(t);                                                        \
    RTYPE r = realcall;                                                                            \
    int err = errno;                                                                               \
    uint64_t end = tracer_ring_now();                                                              \
    struct stdio_snapshot after = stdio_snap(f);                                                   \
    funlockfile(f);                                                                                \
    stdio_account(t, f, before, after, (PRODUCED), (CONSUMED), begin, end, (FAILED));              \
    tracer_event_end(t, end);                                                                      \
    errno = err;                                                                                   \
    return r;

TRACER_EXPORT size_t fread(void *buf, size_t size, size_t n, FILE *f)
{
    STDIO_BODY(size_t, f, tracer_real_fread()(buf, size, n, f), 0, r * size, 0);
}

TRACER_EXPORT size_t fwrite(const void *buf, size_t size, size_t n, FILE *f)
{
    STDIO_BODY(size_t, f, tracer_real_fwrite()(buf, size, n, f), r * size, 0, r < n);
}

TRACER_EXPORT char *fgets(char *s, int n, FILE *f)
{
    STDIO_BODY(char *, f, tracer_real_fgets()(s, n, f), 0, r ? strlen(r) : 0, 0);
}

TRACER_EXPORT int fputs(const char *s, FILE *f)
{
    STDIO_BODY(int, f, tracer_real_fputs()(s, f), r >= 0 ? strlen(s) : 0, 0, r < 0);
}

TRACER_EXPORT int puts(const char *s)
{
    FILE *f = stdout;
    STDIO_BODY(int, f, tracer_real_puts()(s), r >= 0 ? strlen(s) + 1 : 0, 0, r < 0);
}

TRACER_EXPORT int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    STDIO_BODY(int, f, tracer_real_vfprintf()(f, fmt, ap), r > 0 ? (size_t)r : 0, 0, r < 0);
}

TRACER_EXPORT int fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}

TRACER_EXPORT int printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(stdout, fmt, ap);
    va_end(ap);
    return r;
}

TRACER_EXPORT int vprintf(const char *fmt, va_list ap)
{
    return vfprintf(stdout, fmt, ap);
}

TRACER_EXPORT ssize_t getdelim(char **line, size_t *cap, int delim, FILE *f)
{
    STDIO_BODY(ssize_t, f, tracer_real_getdelim()(line, cap, delim, f), 0, r > 0 ? (size_t)r : 0,
               0);
}

TRACER_EXPORT ssize_t getline(char **line, size_t *cap, FILE *f)
{
    return getdelim(line, cap, '\n', f);
}

static int stdio_fflush_one(FILE *f)
{
    STDIO_BODY(int, f, tracer_real_fflush()(f), 0, 0, r != 0);
}

TRACER_EXPORT int fflush(FILE *f)
{
    if (!f) /* all streams: we cannot tell which ones wrote */
        return tracer_real_fflush()(f);
    return stdio_fflush_one(f);
}

/* A seek flushes pending writes and drops the read buffer; afterwards the
 * descriptor's position is the stream's position. */
static void stdio_seeked(FILE *f)
{
    int fd = fileno(f);
    struct tracer_fd *e = tracer_fd_get(fd);
    if (e && e->kind == TRACER_FD_FILE) {
        off_t pos = ftello(f);
        if (pos >= 0)
            e->offset = pos;
    }
}

#define STDIO_SEEK_BODY(realcall)                                                                  \
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE);                                      \
    if (!t || !f)                                                                                  \
        return realcall;                                                                           \
    flockfile(f);                                                                                  \
    struct stdio_snapshot before = stdio_snap(f);                                                  \
    uint64_t begin = tracer_event_begin(t);                                                        \
    int r = realcall;                                                                              \
    int err = errno;                                                                               \
    uint64_t end = tracer_ring_now();                                                              \
    struct stdio_snapshot after = stdio_snap(f);                                                   \
    after.read_avail = before.read_avail; /* a dropped read buffer is not a read */                \
    stdio_account(t, f, before, after, 0, 0, begin, end, r != 0);                                  \
    stdio_seeked(f);                                                                               \
    funlockfile(f);                                                                                \
    tracer_event_end(t, end);                                                                      \
    errno = err;                                                                                   \
    return r;

TRACER_EXPORT int fseek(FILE *f, long off, int whence)
{
    STDIO_SEEK_BODY(tracer_real_fseek()(f, off, whence));
}

TRACER_EXPORT int fseeko(FILE *f, off_t off, int whence)
{
    STDIO_SEEK_BODY(tracer_real_fseeko()(f, off, whence));
}

TRACER_EXPORT int fseeko64(FILE *f, off_t off, int whence)
{
    STDIO_SEEK_BODY(tracer_real_fseeko64()(f, off, whence));
}

TRACER_EXPORT void rewind(FILE *f)
{
    fseek(f, 0, SEEK_SET);
    clearerr(f);
}

/* ---- opening and closing streams ---------------------------------------- */

static void stdio_opened(struct tracer_thread *t, FILE *f, const char *path, const char *mode,
                         uint64_t begin, int err)
{
    uint64_t end = tracer_ring_now();
    int fd = f ? fileno(f) : -1;
    int filtered;
    uint32_t path_id = tracer_open_path_id(AT_FDCWD, path, &filtered);
    struct tracer_fd *e = NULL;
    if (fd >= 0)
        e = tracer_fd_opened_file(fd, path_id, mode && mode[0] == 'a');
    if (e && e->kind == TRACER_FD_FILE && mode && mode[0] == 'w')
        e->size = 0;
    if (e && e->kind == TRACER_FD_FILE && mode && mode[0] == 'a')
        e->offset = (int64_t)e->size;
    if (!filtered && path && (!e || e->kind == TRACER_FD_FILE))
        tracer_open_record(t, fd, err, path_id, 0, e, TRACE_F_STDIO, begin, end);
    tracer_event_end(t, end);
}

#define STDIO_OPEN_BODY(realcall, path, mode)                                                      \
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE);                                      \
    if (!t) {                                                                                      \
        FILE *f = realcall;                                                                        \
        int err = errno;                                                                           \
        if (f)                                                                                     \
            tracer_fd_reset(fileno(f));                                                            \
        errno = err;                                                                               \
        return f;                                                                                  \
    }                                                                                              \
    uint64_t begin = tracer_event_begin(t);                                                        \
    FILE *f = realcall;                                                                            \
    int err = errno;                                                                               \
    stdio_opened(t, f, path, mode, begin, err);                                                    \
    errno = err;                                                                                   \
    return f;

TRACER_EXPORT FILE *fopen(const char *path, const char *mode)
{
    STDIO_OPEN_BODY(tracer_real_fopen()(path, mode), path, mode);
}

TRACER_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    STDIO_OPEN_BODY(tracer_real_fopen64()(path, mode), path, mode);
}

TRACER_EXPORT FILE *freopen(const char *path, const char *mode, FILE *old)
{
    if (old)
        tracer_fd_reset(fileno(old));
    STDIO_OPEN_BODY(tracer_real_freopen()(path, mode, old), path, mode);
}

TRACER_EXPORT FILE *freopen64(const char *path, const char *mode, FILE *old)
{
    if (old)
        tracer_fd_reset(fileno(old));
    STDIO_OPEN_BODY(tracer_real_freopen64()(path, mode, old), path, mode);
}

/* fdopen adopts a descriptor we already know: nothing to record. */
TRACER_EXPORT FILE *fdopen(int fd, const char *mode)
{
    return tracer_real_fdopen()(fd, mode);
}

TRACER_EXPORT int fclose(FILE *f)
{
    struct tracer_thread *t = f ? tracer_enter(TRACER_ONLY_FILE | TRACER_ONLY_NET) : NULL;
    int fd = f ? fileno(f) : -1;
    if (!t) {
        int r = tracer_real_fclose()(f);
        int err = errno;
        tracer_fd_reset(fd);
        errno = err;
        return r;
    }
    struct stdio_snapshot before = stdio_snap(f);
    struct tracer_fd *e = tracer_fd_classify(fd);
    struct tracer_fd copy;
    int have = e != NULL;
    if (e)
        copy = *e;
    uint64_t begin = tracer_event_begin(t);
    int r = tracer_real_fclose()(f); /* f is gone after this */
    int err = errno;
    uint64_t end = tracer_ring_now();
    if (before.write_pending) {
        struct tracer_io io = {.fd = fd,
                               .dir = TRACER_IO_OUT,
                               .explicit_offset = -1,
                               .size = before.write_pending,
                               .result = r == 0 ? (int64_t)before.write_pending : -err,
                               .event_flags = TRACE_F_STDIO,
                               .begin_ns = begin,
                               .end_ns = end};
        tracer_io_record(t, &io);
        if (e)
            copy = *e;
    }
    tracer_fd_reset(fd);
    if (have && copy.kind == TRACER_FD_FILE && !tracer_path_filtered(&copy))
        tracer_file_simple(t, fd, &copy, TRACE_FILE_CLOSE, r == 0 ? 0 : -err, begin, end);
    tracer_event_end(t, end);
    errno = err;
    return r;
}
