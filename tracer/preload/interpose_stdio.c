/* interpose_stdio.c - buffered stdio. glibc performs the read() and write()
 * behind fread/fwrite/fprintf... through internal calls LD_PRELOAD cannot
 * see, so we watch the FILE's own buffer instead: around each wrapped call
 * (holding the stream lock, so no other thread moves the pointers), the
 * bytes pending in the write buffer and available in the read buffer tell
 * exactly how many bytes went to or came from the descriptor during the
 * call. Those become ordinary FILE (or NET) events flagged TRACE_F_STDIO,
 * with the call's duration; the tracked file offset advances by them.
 *
 * Wrapped: the plain calls, their _unlocked forms, the fortified forms
 * Debian's packages call (_FORTIFY_SOURCE turns printf into __printf_chk,
 * fread into __fread_chk...), the per-character calls (getc, putc, ...)
 * and __overflow/__uflow/__underflow, which the inline getc_unlocked and
 * putc_unlocked of glibc's headers call when the buffer is empty or full.
 * A per-character call that cannot reach the descriptor (glibc's own test
 * on the buffer pointers; the locked forms test under the stream's lock)
 * goes straight to glibc. fflush(NULL) and exit()
 * flush every stream: both are accounted stream by stream.
 *
 * fopen/fdopen/freopen register the stream's descriptor (path, identity,
 * size) and fclose records the final flush and the close. See
 * docs/tracer.md. */
/* glibc's optimized headers define vprintf and getline as extern inlines;
 * we must own those names (clang refuses an attribute on them otherwise). */
#define __NO_INLINE__ 1
#include "interpose_stdio.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io_events.h"

TRACER_REAL(FILE *, fopen, (const char *, const char *))
TRACER_REAL(FILE *, fopen64, (const char *, const char *))
TRACER_REAL(FILE *, fdopen, (int, const char *))
TRACER_REAL(FILE *, freopen, (const char *, const char *, FILE *))
TRACER_REAL(FILE *, freopen64, (const char *, const char *, FILE *))
TRACER_REAL(int, fclose, (FILE *))
TRACER_REAL(int, pclose, (FILE *))
TRACER_REAL(size_t, fread, (void *, size_t, size_t, FILE *))
TRACER_REAL(size_t, fwrite, (const void *, size_t, size_t, FILE *))
TRACER_REAL(char *, fgets, (char *, int, FILE *))
TRACER_REAL(int, fputs, (const char *, FILE *))
TRACER_REAL(int, puts, (const char *))
TRACER_REAL(int, vfprintf, (FILE *, const char *, va_list))
TRACER_REAL(int, fflush, (FILE *))
TRACER_REAL(int, fflush_unlocked, (FILE *))
TRACER_REAL(int, fseek, (FILE *, long, int))
TRACER_REAL(int, fseeko, (FILE *, off_t, int))
TRACER_REAL(int, fseeko64, (FILE *, off_t, int))
TRACER_REAL(int, fsetpos, (FILE *, const fpos_t *))
TRACER_REAL(int, fsetpos64, (FILE *, const fpos64_t *))
TRACER_REAL(ssize_t, getdelim, (char **, size_t *, int, FILE *))
TRACER_REAL(size_t, fread_unlocked, (void *, size_t, size_t, FILE *))
TRACER_REAL(size_t, fwrite_unlocked, (const void *, size_t, size_t, FILE *))
TRACER_REAL(char *, fgets_unlocked, (char *, int, FILE *))
TRACER_REAL(int, fputs_unlocked, (const char *, FILE *))
TRACER_REAL(int, vdprintf, (int, const char *, va_list))
TRACER_REAL(int, fputc, (int, FILE *))
TRACER_REAL(int, putc, (int, FILE *))
TRACER_REAL(int, fputc_unlocked, (int, FILE *))
TRACER_REAL(int, putc_unlocked, (int, FILE *))
TRACER_REAL(int, fgetc, (FILE *))
TRACER_REAL(int, getc, (FILE *))
TRACER_REAL(int, fgetc_unlocked, (FILE *))
TRACER_REAL(int, getc_unlocked, (FILE *))

/* glibc's fortified and buffer-refill entry points: declared by its headers
 * only under _FORTIFY_SOURCE, or not at all (libio internals it exports). */
int __vfprintf_chk(FILE *, int, const char *, va_list);
int __vdprintf_chk(int, int, const char *, va_list);
size_t __fread_chk(void *, size_t, size_t, size_t, FILE *);
size_t __fread_unlocked_chk(void *, size_t, size_t, size_t, FILE *);
char *__fgets_chk(char *, size_t, int, FILE *);
char *__fgets_unlocked_chk(char *, size_t, int, FILE *);
int __overflow(FILE *, int);
int __uflow(FILE *);
int __underflow(FILE *);
void _IO_list_lock(void);
void _IO_list_unlock(void);
extern FILE *_IO_list_all;
TRACER_REAL(int, __vfprintf_chk, (FILE *, int, const char *, va_list))
TRACER_REAL(int, __vdprintf_chk, (int, int, const char *, va_list))
TRACER_REAL(size_t, __fread_chk, (void *, size_t, size_t, size_t, FILE *))
TRACER_REAL(size_t, __fread_unlocked_chk, (void *, size_t, size_t, size_t, FILE *))
TRACER_REAL(char *, __fgets_chk, (char *, size_t, int, FILE *))
TRACER_REAL(char *, __fgets_unlocked_chk, (char *, size_t, int, FILE *))
TRACER_REAL(int, __overflow, (FILE *, int))
TRACER_REAL(int, __uflow, (FILE *))
TRACER_REAL(int, __underflow, (FILE *))

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

/* Records what one call moved through the stream's descriptor: `written`
 * bytes out and `read_bytes` in. */
static void stdio_record(struct tracer_thread *t, FILE *f, size_t written, size_t read_bytes,
                         uint64_t begin, uint64_t end, int failed)
{
    int fd = fileno(f);
    if (fd < 0)
        return;
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

/* Bytes the buffer's write side sent to the descriptor over one call in
 * which the app handed it `produced` bytes. */
static size_t stdio_written(struct stdio_snapshot before, struct stdio_snapshot after,
                            size_t produced)
{
    return before.write_pending + produced > after.write_pending
               ? before.write_pending + produced - after.write_pending
               : 0;
}

/* Turns the buffer change over one call into the descriptor I/O it implies:
 * `produced` bytes the app handed to the stream, `consumed` bytes it took
 * out of it. */
static void stdio_account(struct tracer_thread *t, FILE *f, struct stdio_snapshot before,
                          struct stdio_snapshot after, size_t produced, size_t consumed,
                          uint64_t begin, uint64_t end, int failed)
{
    size_t read_bytes = consumed + after.read_avail > before.read_avail
                            ? consumed + after.read_avail - before.read_avail
                            : 0;
    stdio_record(t, f, stdio_written(before, after, produced), read_bytes, begin, end, failed);
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

/* glibc's optimized <stdio.h> inlines getline as a call of __getdelim:
 * what every Debian package built with -O2 calls (libmount reads
 * /proc/self/mountinfo with it) */
ssize_t __getdelim(char **line, size_t *cap, int delim, FILE *f);
TRACER_EXPORT ssize_t __getdelim(char **line, size_t *cap, int delim, FILE *f)
{
    return getdelim(line, cap, delim, f);
}

/* ---- the _unlocked forms: the same accounting (flockfile is recursive, and
 * a no-op on a stream the app set to FSETLOCKING_BYCALLER) -------------- */

TRACER_EXPORT size_t fread_unlocked(void *buf, size_t size, size_t n, FILE *f)
{
    STDIO_BODY(size_t, f, tracer_real_fread_unlocked()(buf, size, n, f), 0, r * size, 0);
}

TRACER_EXPORT size_t fwrite_unlocked(const void *buf, size_t size, size_t n, FILE *f)
{
    STDIO_BODY(size_t, f, tracer_real_fwrite_unlocked()(buf, size, n, f), r * size, 0, r < n);
}

TRACER_EXPORT char *fgets_unlocked(char *s, int n, FILE *f)
{
    STDIO_BODY(char *, f, tracer_real_fgets_unlocked()(s, n, f), 0, r ? strlen(r) : 0, 0);
}

TRACER_EXPORT int fputs_unlocked(const char *s, FILE *f)
{
    STDIO_BODY(int, f, tracer_real_fputs_unlocked()(s, f), r >= 0 ? strlen(s) : 0, 0, r < 0);
}

/* ---- the fortified forms (-D_FORTIFY_SOURCE): glibc's checks stay its own */

TRACER_EXPORT int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap)
{
    STDIO_BODY(int, f, tracer_real___vfprintf_chk()(f, flag, fmt, ap), r > 0 ? (size_t)r : 0, 0,
               r < 0);
}

TRACER_EXPORT int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vfprintf_chk(f, flag, fmt, ap);
    va_end(ap);
    return r;
}

TRACER_EXPORT int __printf_chk(int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vfprintf_chk(stdout, flag, fmt, ap);
    va_end(ap);
    return r;
}

TRACER_EXPORT int __vprintf_chk(int flag, const char *fmt, va_list ap)
{
    return __vfprintf_chk(stdout, flag, fmt, ap);
}

TRACER_EXPORT size_t __fread_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *f)
{
    STDIO_BODY(size_t, f, tracer_real___fread_chk()(buf, buflen, size, n, f), 0, r * size, 0);
}

TRACER_EXPORT size_t __fread_unlocked_chk(void *buf, size_t buflen, size_t size, size_t n, FILE *f)
{
    STDIO_BODY(size_t, f, tracer_real___fread_unlocked_chk()(buf, buflen, size, n, f), 0, r * size,
               0);
}

TRACER_EXPORT char *__fgets_chk(char *s, size_t buflen, int n, FILE *f)
{
    STDIO_BODY(char *, f, tracer_real___fgets_chk()(s, buflen, n, f), 0, r ? strlen(r) : 0, 0);
}

TRACER_EXPORT char *__fgets_unlocked_chk(char *s, size_t buflen, int n, FILE *f)
{
    STDIO_BODY(char *, f, tracer_real___fgets_unlocked_chk()(s, buflen, n, f), 0, r ? strlen(r) : 0,
               0);
}

/* ---- scanf: it returns fields, not bytes, and glibc refills the buffer
 * through internal calls, so what a call read from the descriptor is
 * found another way. First, whether it refilled at all, without a system
 * call: before the call the read area's start (_IO_read_base) is moved up
 * to the read pointer - glibc reads it only to push back a character the
 * call itself took (scanf's lookahead), and a refill sets it to the
 * buffer's start again. Unmoved after the call, with the same end and a
 * pointer that only advanced: no refill, and it is put back. Otherwise,
 * on a regular file, the bytes read are the descriptor's offset (one
 * lseek) less the offset we track, exact over any number of refills; on
 * a pipe, socket or terminal the last refill is what the buffer holds, so
 * a call whose input spans two refills there (a field longer than what
 * one read returned) is counted short. The mark is not set on a stream
 * reading from its pushback (backup) area or keeping markers, nor when
 * nothing of the buffer was consumed yet (the start is already the
 * pointer): such a call asks the offset. */
#define STDIO_IN_BACKUP 0x0100 /* glibc's _IO_IN_BACKUP */

typedef int (*stdio_vscan_fn)(FILE *, const char *, va_list);

static int stdio_vscan(stdio_vscan_fn real, FILE *f, const char *fmt, va_list ap)
{
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE | TRACER_ONLY_NET);
    if (!t)
        return real(f, fmt, ap);
    flockfile(f);
    int fd = fileno(f);
    struct tracer_fd *fe = fd >= 0 ? tracer_fd_classify(fd) : NULL;
    int64_t tracked = fe && fe->kind == TRACER_FD_FILE ? fe->offset : -1;
    char *base0 = f->_IO_read_base, *ptr0 = f->_IO_read_ptr, *end0 = f->_IO_read_end;
    int marked =
        !(f->_flags & STDIO_IN_BACKUP) && !f->_markers && base0 && ptr0 > base0 && ptr0 <= end0;
    if (marked)
        f->_IO_read_base = ptr0;
    struct stdio_snapshot before = stdio_snap(f);
    uint64_t begin = tracer_event_begin(t);
    int r = real(f, fmt, ap);
    int err = errno;
    uint64_t end = tracer_ring_now();
    int refilled = 1;
    if (marked && f->_IO_read_base == ptr0 && f->_IO_read_end == end0 && f->_IO_read_ptr >= ptr0) {
        f->_IO_read_base = base0;
        refilled = 0;
    }
    struct stdio_snapshot after = stdio_snap(f);
    /* a stream switching from writing to reading flushes first: those
     * bytes moved the offset too */
    size_t written = stdio_written(before, after, 0), read_bytes = 0;
    if (refilled) {
        off_t now = tracked >= 0 ? (off_t)syscall(SYS_lseek, fd, 0, SEEK_CUR) : -1;
        if (tracked >= 0 && now >= tracked + (int64_t)written)
            read_bytes = (size_t)(now - tracked - (int64_t)written);
        else if (f->_IO_read_base != base0 || f->_IO_read_end != end0 || f->_IO_read_ptr < ptr0)
            read_bytes = f->_IO_read_end > f->_IO_read_base
                             ? (size_t)(f->_IO_read_end - f->_IO_read_base) /* the last refill */
                             : 0;
    }
    funlockfile(f);
    stdio_record(t, f, written, read_bytes, begin, end, 0);
    tracer_event_end(t, end);
    errno = err;
    return r;
}

/* glibc exports two families: the C99 forms every program built in C99
 * mode or later calls (<stdio.h> redirects to them), and the plain names
 * (GNU %as semantics) older binaries bind. Each family's four entry points
 * go through its own vfscanf. The plain names are defined under other C
 * names with the exported ones as assembler labels, since <stdio.h>
 * redirects the C names to the C99 symbols. */
TRACER_REAL(int, vfscanf, (FILE *, const char *, va_list))
TRACER_REAL(int, __isoc99_vfscanf, (FILE *, const char *, va_list))
int stdio_export_vfscanf(FILE *f, const char *fmt, va_list ap) __asm__("vfscanf");
int stdio_export_vscanf(const char *fmt, va_list ap) __asm__("vscanf");
int stdio_export_fscanf(FILE *f, const char *fmt, ...) __asm__("fscanf");
int stdio_export_scanf(const char *fmt, ...) __asm__("scanf");
int __isoc99_vfscanf(FILE *f, const char *fmt, va_list ap);
int __isoc99_vscanf(const char *fmt, va_list ap);
int __isoc99_fscanf(FILE *f, const char *fmt, ...);
int __isoc99_scanf(const char *fmt, ...);

#define STDIO_SCAN_FAMILY(real, VFSCANF, VSCANF, FSCANF, SCANF)                                    \
    TRACER_EXPORT int VFSCANF(FILE *f, const char *fmt, va_list ap)                                \
    {                                                                                              \
        return stdio_vscan(real(), f, fmt, ap);                                                    \
    }                                                                                              \
    TRACER_EXPORT int VSCANF(const char *fmt, va_list ap)                                          \
    {                                                                                              \
        return stdio_vscan(real(), stdin, fmt, ap);                                                \
    }                                                                                              \
    TRACER_EXPORT int FSCANF(FILE *f, const char *fmt, ...)                                        \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, fmt);                                                                         \
        int r = stdio_vscan(real(), f, fmt, ap);                                                   \
        va_end(ap);                                                                                \
        return r;                                                                                  \
    }                                                                                              \
    TRACER_EXPORT int SCANF(const char *fmt, ...)                                                  \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, fmt);                                                                         \
        int r = stdio_vscan(real(), stdin, fmt, ap);                                               \
        va_end(ap);                                                                                \
        return r;                                                                                  \
    }

STDIO_SCAN_FAMILY(tracer_real_vfscanf, stdio_export_vfscanf, stdio_export_vscanf,
                  stdio_export_fscanf, stdio_export_scanf)
STDIO_SCAN_FAMILY(tracer_real___isoc99_vfscanf, __isoc99_vfscanf, __isoc99_vscanf, __isoc99_fscanf,
                  __isoc99_scanf)

/* ---- dprintf: formatted straight to a descriptor, through glibc's own
 * write. What it returns is what it wrote. */

#define STDIO_FD_BODY(realcall)                                                                    \
    struct tracer_thread *t = tracer_enter(TRACER_ONLY_FILE | TRACER_ONLY_NET);                    \
    if (!t)                                                                                        \
        return realcall;                                                                           \
    uint64_t begin = tracer_event_begin(t);                                                        \
    int r = realcall;                                                                              \
    int err = errno;                                                                               \
    uint64_t end = tracer_ring_now();                                                              \
    if (r > 0) {                                                                                   \
        struct tracer_io io = {.fd = fd,                                                           \
                               .dir = TRACER_IO_OUT,                                               \
                               .explicit_offset = -1,                                              \
                               .size = (size_t)r,                                                  \
                               .result = r,                                                        \
                               .event_flags = TRACE_F_STDIO,                                       \
                               .begin_ns = begin,                                                  \
                               .end_ns = end};                                                     \
        tracer_io_record(t, &io);                                                                  \
    }                                                                                              \
    tracer_event_end(t, end);                                                                      \
    errno = err;                                                                                   \
    return r;

TRACER_EXPORT int vdprintf(int fd, const char *fmt, va_list ap)
{
    STDIO_FD_BODY(tracer_real_vdprintf()(fd, fmt, ap));
}

TRACER_EXPORT int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap)
{
    STDIO_FD_BODY(tracer_real___vdprintf_chk()(fd, flag, fmt, ap));
}

TRACER_EXPORT int dprintf(int fd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vdprintf(fd, fmt, ap);
    va_end(ap);
    return r;
}

TRACER_EXPORT int __dprintf_chk(int fd, int flag, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = __vdprintf_chk(fd, flag, fmt, ap);
    va_end(ap);
    return r;
}

/* ---- one character at a time --------------------------------------------
 * Most calls only move a buffer pointer; the tracer steps in only when the
 * call may reach the descriptor. (A NULL stream crashes in glibc, as it
 * does here.) glibc's libio flag bits (stable since the
 * FILE layout is ABI): */
#define STDIO_UNBUFFERED 0x0002
#define STDIO_LINE_BUF 0x0200
#define STDIO_CURRENTLY_PUTTING 0x0800

/* Can putting C on F write to the descriptor? No when glibc's inline test
 * finds room, or when its overflow would only store C: a stream already
 * writing, with a buffer that has room, not unbuffered, and C not the
 * newline that flushes a line-buffered stream (whose write_end glibc keeps
 * at write_ptr, so that every character reaches the overflow). */
static inline int stdio_put_may_write(const FILE *f, int c)
{
    if (f->_IO_write_ptr < f->_IO_write_end)
        return 0;
    if ((f->_flags & (STDIO_UNBUFFERED | STDIO_CURRENTLY_PUTTING)) != STDIO_CURRENTLY_PUTTING ||
        !f->_IO_write_base || f->_IO_write_ptr >= f->_IO_buf_end)
        return 1;
    return (f->_flags & STDIO_LINE_BUF) && c == '\n';
}

/* Can getting a character from F read from the descriptor? glibc's own
 * test: only when the read buffer is used up. */
static inline int stdio_get_may_read(const FILE *f)
{
    return f->_IO_read_ptr >= f->_IO_read_end;
}

#define STDIO_PUT_BODY(f, c, realcall)                                                             \
    if (!stdio_put_may_write((f), (c)))                                                            \
        return realcall;                                                                           \
    STDIO_BODY(int, (f), realcall, r != EOF ? 1 : 0, 0, r == EOF)

#define STDIO_GET_BODY(f, realcall, CONSUMED)                                                      \
    if (!stdio_get_may_read(f))                                                                    \
        return realcall;                                                                           \
    STDIO_BODY(int, (f), realcall, 0, CONSUMED, 0)

/* The locked forms test under the stream's lock, as glibc itself takes it,
 * and then make the unlocked call: another thread cannot fill or drain the
 * buffer between the test and the call. */
#define STDIO_PUT_LOCKED_BODY(f, c, realcall)                                                      \
    flockfile(f);                                                                                  \
    if (!stdio_put_may_write((f), (c))) {                                                          \
        int quick = tracer_real_putc_unlocked()((c), (f));                                         \
        funlockfile(f);                                                                            \
        return quick;                                                                              \
    }                                                                                              \
    funlockfile(f);                                                                                \
    STDIO_BODY(int, (f), realcall, r != EOF ? 1 : 0, 0, r == EOF)

#define STDIO_GET_LOCKED_BODY(f, realcall)                                                         \
    flockfile(f);                                                                                  \
    if (!stdio_get_may_read(f)) {                                                                  \
        int quick = tracer_real_getc_unlocked()(f);                                                \
        funlockfile(f);                                                                            \
        return quick;                                                                              \
    }                                                                                              \
    funlockfile(f);                                                                                \
    STDIO_BODY(int, (f), realcall, 0, r != EOF ? 1 : 0, 0)

TRACER_EXPORT int fputc(int c, FILE *f)
{
    STDIO_PUT_LOCKED_BODY(f, c, tracer_real_fputc()(c, f));
}

TRACER_EXPORT int putc(int c, FILE *f)
{
    STDIO_PUT_LOCKED_BODY(f, c, tracer_real_putc()(c, f));
}

TRACER_EXPORT int putchar(int c)
{
    FILE *f = stdout;
    STDIO_PUT_LOCKED_BODY(f, c, tracer_real_putc()(c, f));
}

TRACER_EXPORT int fputc_unlocked(int c, FILE *f)
{
    STDIO_PUT_BODY(f, c, tracer_real_fputc_unlocked()(c, f));
}

TRACER_EXPORT int putc_unlocked(int c, FILE *f)
{
    STDIO_PUT_BODY(f, c, tracer_real_putc_unlocked()(c, f));
}

TRACER_EXPORT int putchar_unlocked(int c)
{
    FILE *f = stdout;
    STDIO_PUT_BODY(f, c, tracer_real_putc_unlocked()(c, f));
}

/* __overflow(f, EOF) flushes without putting a character */
TRACER_EXPORT int __overflow(FILE *f, int c)
{
    if (c != EOF && !stdio_put_may_write(f, c))
        return tracer_real___overflow()(f, c);
    STDIO_BODY(int, f, tracer_real___overflow()(f, c), r != EOF && c != EOF ? 1 : 0, 0, r == EOF);
}

TRACER_EXPORT int fgetc(FILE *f)
{
    STDIO_GET_LOCKED_BODY(f, tracer_real_fgetc()(f));
}

TRACER_EXPORT int getc(FILE *f)
{
    STDIO_GET_LOCKED_BODY(f, tracer_real_getc()(f));
}

TRACER_EXPORT int getchar(void)
{
    FILE *f = stdin;
    STDIO_GET_LOCKED_BODY(f, tracer_real_getc()(f));
}

TRACER_EXPORT int fgetc_unlocked(FILE *f)
{
    STDIO_GET_BODY(f, tracer_real_fgetc_unlocked()(f), r != EOF ? 1 : 0);
}

TRACER_EXPORT int getc_unlocked(FILE *f)
{
    STDIO_GET_BODY(f, tracer_real_getc_unlocked()(f), r != EOF ? 1 : 0);
}

TRACER_EXPORT int getchar_unlocked(void)
{
    FILE *f = stdin;
    STDIO_GET_BODY(f, tracer_real_getc_unlocked()(f), r != EOF ? 1 : 0);
}

/* __uflow refills and takes a character; __underflow refills and leaves it */
TRACER_EXPORT int __uflow(FILE *f)
{
    STDIO_GET_BODY(f, tracer_real___uflow()(f), r != EOF ? 1 : 0);
}

TRACER_EXPORT int __underflow(FILE *f)
{
    STDIO_GET_BODY(f, tracer_real___underflow()(f), 0);
}

static int stdio_fflush_one(FILE *f)
{
    STDIO_BODY(int, f, tracer_real_fflush()(f), 0, 0, r != 0);
}

/* Flushes every stream with output pending, each accounted as its own
 * fflush, as glibc's fflush(NULL) and exit() would: under glibc's list lock,
 * then each stream's own lock (glibc's order). At exit a stream another
 * thread holds is left to glibc, which flushes it without its lock then:
 * waiting for it could hang an exit glibc would finish. Returns EOF if one
 * failed. */
static int stdio_flush_all(int at_exit)
{
    int r = 0;
    _IO_list_lock();
    for (FILE *f = _IO_list_all; f; f = f->_chain) {
        if (f->_IO_write_ptr <= f->_IO_write_base || (at_exit && ftrylockfile(f) != 0))
            continue;
        if (stdio_fflush_one(f) != 0)
            r = EOF;
        if (at_exit)
            funlockfile(f);
    }
    _IO_list_unlock();
    return r;
}

TRACER_EXPORT int fflush(FILE *f)
{
    if (!f) {
        if (!tracer_enter(TRACER_ONLY_FILE | TRACER_ONLY_NET))
            return tracer_real_fflush()(f);
        int r = stdio_flush_all(0);
        /* streams that switched from writing to reading, and anything the
         * walk left, as glibc does it (nothing is pending any more) */
        int rest = tracer_real_fflush()(NULL);
        return r != 0 ? r : rest;
    }
    return stdio_fflush_one(f);
}

TRACER_EXPORT int fflush_unlocked(FILE *f)
{
    if (!f)
        return fflush(NULL);
    STDIO_BODY(int, f, tracer_real_fflush_unlocked()(f), 0, 0, r != 0);
}

/* exit() runs the library destructors (tracer_fini) before glibc flushes
 * the streams, so the bytes still buffered then are written here, where
 * they can be recorded, instead of unseen a moment later. */
void tracer_stdio_exit_flush(void)
{
    if (tracer_enter(TRACER_ONLY_FILE | TRACER_ONLY_NET))
        stdio_flush_all(1);
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

TRACER_EXPORT int fsetpos(FILE *f, const fpos_t *pos)
{
    STDIO_SEEK_BODY(tracer_real_fsetpos()(f, pos));
}

TRACER_EXPORT int fsetpos64(FILE *f, const fpos64_t *pos)
{
    STDIO_SEEK_BODY(tracer_real_fsetpos64()(f, pos));
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

/* fclose and pclose: the last flush, then the descriptor's close. Both
 * return -1 (EOF) on failure; pclose otherwise the command's status. */
static int stdio_close(FILE *f, int (*real_close)(FILE *))
{
    struct tracer_thread *t = f ? tracer_enter(TRACER_ONLY_FILE | TRACER_ONLY_NET) : NULL;
    int fd = f ? fileno(f) : -1;
    if (!t) {
        int r = real_close(f);
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
    int r = real_close(f); /* f is gone after this */
    int err = errno;
    uint64_t end = tracer_ring_now();
    if (before.write_pending) {
        struct tracer_io io = {.fd = fd,
                               .dir = TRACER_IO_OUT,
                               .explicit_offset = -1,
                               .size = before.write_pending,
                               .result = r != -1 ? (int64_t)before.write_pending : -err,
                               .event_flags = TRACE_F_STDIO,
                               .begin_ns = begin,
                               .end_ns = end};
        tracer_io_record(t, &io);
        if (e)
            copy = *e;
    }
    tracer_fd_reset(fd);
    if (have && copy.kind == TRACER_FD_FILE && !tracer_path_filtered(&copy))
        tracer_file_simple(t, fd, &copy, TRACE_FILE_CLOSE, r != -1 ? 0 : -err, begin, end);
    tracer_event_end(t, end);
    errno = err;
    return r;
}

TRACER_EXPORT int fclose(FILE *f)
{
    return stdio_close(f, tracer_real_fclose());
}

/* pclose also waits for the command: the CLOSE's duration includes it */
TRACER_EXPORT int pclose(FILE *f)
{
    return stdio_close(f, tracer_real_pclose());
}
