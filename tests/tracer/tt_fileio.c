/* tt_fileio.c - a known sequence of file operations for the tracer test
 * test_fileio.py: write/pwrite/read/pread/readv/writev/lseek/O_APPEND/
 * ftruncate/fsync, posix_fallocate/fallocate/sync_file_range/syncfs, dup'd
 * descriptors (dup, dup2, dup3, F_DUPFD_CLOEXEC),
 * file-to-file copy_file_range and sendfile, and descriptors opened where the
 * tracer cannot see (a raw openat, as glibc's mkstemp or fopen do inside
 * libc): their first transfer classifies them. Before each traced
 * operation it asks the kernel (raw syscalls, which the tracer cannot see or correct) for the true
 * offset and file size, and prints what the trace must say as one JSON line per operation. It must
 * never use libc wrappers for those oracle reads, or the tracer would see (and be fixed up by)
 * them. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static char buf[4096];

static long long true_offset(int fd)
{
    return (long long)syscall(SYS_lseek, fd, 0, SEEK_CUR);
}

static void true_stat(int fd, struct stat *st)
{
    if (syscall(SYS_fstat, fd, st) != 0) {
        perror("fstat");
        exit(1);
    }
}

/* Prints the expectation for one operation done at `offset` on fd. */
static void expect(const char *op, int fd, long long offset, size_t size, long long result,
                   const struct stat *before)
{
    printf("{\"op\":\"%s\",\"fd\":%d,\"offset\":%lld,\"size\":%zu,\"result\":%lld,"
           "\"file_size\":%lld,\"dev\":%llu,\"ino\":%llu}\n",
           op, fd, offset, size, result, (long long)before->st_size,
           (unsigned long long)before->st_dev, (unsigned long long)before->st_ino);
}

/* The same for a call on a range with a mode or flags (fallocate,
 * sync_file_range): the record's open_flags field carries them. */
static void expect_range(const char *op, int fd, long long offset, size_t size, unsigned flags,
                         const struct stat *before)
{
    printf("{\"op\":\"%s\",\"fd\":%d,\"offset\":%lld,\"size\":%zu,\"result\":0,"
           "\"file_size\":%lld,\"dev\":%llu,\"ino\":%llu,\"flags\":%u}\n",
           op, fd, offset, size, (long long)before->st_size, (unsigned long long)before->st_dev,
           (unsigned long long)before->st_ino, flags);
}

/* Prints the line that starts a file's expectations: `key` "open" (the
 * trace has its OPEN) or "raw_open" (opened where the tracer cannot see). */
static void opened(const char *key, const char *path, int fd, const struct stat *st)
{
    printf("{\"%s\":\"%s\",\"fd\":%d,\"dev\":%llu,\"ino\":%llu}\n", key, path, fd,
           (unsigned long long)st->st_dev, (unsigned long long)st->st_ino);
}

/* Prints the expectation for the read side of an fd-to-fd copy. */
static void copied(const char *op, int in, int out, long long offset, size_t size, long long result,
                   const struct stat *in_before)
{
    printf("{\"copy\":\"%s\",\"fd\":%d,\"fd2\":%d,\"offset\":%lld,\"size\":%zu,"
           "\"result\":%lld,\"file_size\":%lld,\"dev\":%llu,\"ino\":%llu}\n",
           op, in, out, offset, size, result, (long long)in_before->st_size,
           (unsigned long long)in_before->st_dev, (unsigned long long)in_before->st_ino);
}

#define CHECKED(call)                                                                              \
    do {                                                                                           \
        if ((call) < 0) {                                                                          \
            perror(#call);                                                                         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Transfers on a.dat at known offsets: write, pwrite past the end (a hole),
 * read after an lseek, a short pread, writev, readv, a write that grows it. */
static void transfers(int fd)
{
    struct stat st;
    long long off, r;
    off = true_offset(fd), true_stat(fd, &st);
    CHECKED(r = write(fd, buf, 100));
    expect("write", fd, off, 100, r, &st);

    true_stat(fd, &st);
    CHECKED(r = pwrite(fd, buf, 50, 200)); /* leaves a hole 100..199 */
    expect("pwrite", fd, 200, 50, r, &st);

    CHECKED(lseek(fd, 10, SEEK_SET));
    off = true_offset(fd), true_stat(fd, &st);
    CHECKED(r = read(fd, buf, 30));
    expect("read", fd, off, 30, r, &st);

    true_stat(fd, &st);
    CHECKED(r = pread(fd, buf, 20, 240)); /* short: 10 bytes before EOF */
    expect("pread", fd, 240, 20, r, &st);

    struct iovec wv[3] = {{buf, 5}, {buf + 5, 7}, {buf + 12, 9}};
    off = true_offset(fd), true_stat(fd, &st);
    CHECKED(r = writev(fd, wv, 3));
    expect("write", fd, off, 21, r, &st);

    struct iovec rv[2] = {{buf, 10}, {buf + 10, 10}};
    off = true_offset(fd), true_stat(fd, &st);
    CHECKED(r = readv(fd, rv, 2));
    expect("read", fd, off, 20, r, &st);

    CHECKED(lseek(fd, 0, SEEK_END));
    off = true_offset(fd), true_stat(fd, &st);
    CHECKED(r = write(fd, buf, 4)); /* grows the file past its end */
    expect("write", fd, off, 4, r, &st);
}

/* Other names of a.dat's descriptor: dup (sharing one offset), dup2, dup3
 * and F_DUPFD_CLOEXEC, each closed again. */
static void dups(int fd)
{
    struct stat st;
    long long off, r;
    /* a dup'd descriptor shares the open file description (one offset) */
    true_stat(fd, &st);
    int fd2 = dup(fd);
    CHECKED(fd2);
    expect("dup", fd, -1, 0, fd2, &st); /* a DUP record: fd the old one, result the new */
    off = true_offset(fd2), true_stat(fd2, &st);
    CHECKED(r = write(fd2, buf, 12));
    expect("write", fd2, off, 12, r, &st);
    off = true_offset(fd), true_stat(fd, &st);
    CHECKED(r = write(fd, buf, 3)); /* the original continues where fd2 stopped */
    expect("write", fd, off, 3, r, &st);
    off = true_offset(fd2), true_stat(fd2, &st);
    CHECKED(r = read(fd2, buf, 8)); /* at EOF: 0 bytes */
    expect("read", fd2, off, 8, r, &st);
    true_stat(fd2, &st);
    CHECKED(close(fd2)); /* closes one name of the description, not the file */
    expect("close", fd2, -1, 0, 0, &st);
    /* the other ways to dup: dup2, dup3 onto a chosen number, F_DUPFD_CLOEXEC */
    true_stat(fd, &st);
    CHECKED(fd2 = dup2(fd, 60));
    expect("dup", fd, -1, 0, fd2, &st);
    CHECKED(fd2 = dup3(60, 61, O_CLOEXEC));
    expect("dup", 60, -1, 0, fd2, &st);
    CHECKED(fd2 = fcntl(fd, F_DUPFD_CLOEXEC, 70));
    expect("dup", fd, -1, 0, fd2, &st);
    CHECKED(close(fd2));
    expect("close", fd2, -1, 0, 0, &st);
    CHECKED(close(61));
    expect("close", 61, -1, 0, 0, &st);
    CHECKED(close(60));
    expect("close", 60, -1, 0, 0, &st);
}

/* a.dat's size and writeback: ftruncate and a write past the new end,
 * fsync, fdatasync, fallocate, sync_file_range and syncfs. */
static void size_and_sync(int fd)
{
    struct stat st;
    long long off, r;
    true_stat(fd, &st);
    CHECKED(ftruncate(fd, 100));
    expect("truncate", fd, 100, 0, 0, &st);
    off = true_offset(fd), true_stat(fd, &st);
    CHECKED(r = write(fd, buf, 7)); /* past the new end: another hole */
    expect("write", fd, off, 7, r, &st);
    true_stat(fd, &st);
    CHECKED(fsync(fd));
    expect("fsync", fd, -1, 0, 0, &st);
    true_stat(fd, &st);
    CHECKED(fdatasync(fd));
    expect("fdatasync", fd, -1, 0, 0, &st);
    /* space and writeback of ranges: an allocation that extends the file,
     * one past its end that keeps the size (a write after must see the
     * size the first made), a range's writeback, the file system's sync */
    true_stat(fd, &st);
    CHECKED(posix_fallocate(fd, 0, 8192) == 0 ? 0 : -1);
    expect_range("fallocate", fd, 0, 8192, 0, &st);
    true_stat(fd, &st);
    CHECKED(fallocate(fd, FALLOC_FL_KEEP_SIZE, 8192, 4096));
    expect_range("fallocate", fd, 8192, 4096, FALLOC_FL_KEEP_SIZE, &st);
    off = true_offset(fd), true_stat(fd, &st);
    CHECKED(r = write(fd, buf, 5));
    expect("write", fd, off, 5, r, &st);
    true_stat(fd, &st);
    CHECKED(sync_file_range(fd, 0, 4096, SYNC_FILE_RANGE_WRITE));
    expect_range("sync_range", fd, 0, 4096, SYNC_FILE_RANGE_WRITE, &st);
    true_stat(fd, &st);
    CHECKED(syncfs(fd));
    expect("syncfs", fd, -1, 0, 0, &st);
}

/* O_APPEND: every write lands at the end, whatever the offset says */
static void append_mode(const char *b_path)
{
    struct stat st;
    long long r;
    int pre = open(b_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECKED(pre);
    true_stat(pre, &st);
    opened("open", b_path, pre, &st);
    CHECKED(r = write(pre, buf, 33));
    expect("write", pre, 0, 33, r, &st);
    true_stat(pre, &st);
    CHECKED(close(pre));
    expect("close", pre, -1, 0, 0, &st);
    int ap = open(b_path, O_WRONLY | O_APPEND);
    CHECKED(ap);
    for (int i = 0; i < 3; i++) {
        true_stat(ap, &st);
        CHECKED(r = write(ap, buf, 10 + (size_t)i));
        expect("write", ap, (long long)st.st_size, 10 + (size_t)i, r, &st);
    }
    true_stat(ap, &st);
    CHECKED(close(ap));
    expect("close", ap, -1, 0, 0, &st);
}

/* fd-to-fd copies from a.dat into b.log: the read side is a record
 * on a.dat (printed as a "copy" line: fd2 is the other descriptor),
 * the write side a write on b.log. a.dat stays open (a CLOSE would
 * fall among b.log's expectations). */
static void copies(const char *a_path, const char *b_path)
{
    struct stat st;
    long long off, r;
    int src = open(a_path, O_RDONLY);
    int dst = open(b_path, O_WRONLY);
    CHECKED(src);
    CHECKED(dst);
    CHECKED(lseek(dst, 0, SEEK_END));
    struct stat sst;
    loff_t in_off = 10;
    off = true_offset(dst), true_stat(dst, &st), true_stat(src, &sst);
    CHECKED(r = copy_file_range(src, &in_off, dst, NULL, 40, 0));
    copied("copy_range", src, dst, 10, 40, r, &sst);
    expect("write", dst, off, 40, r, &st);
    off = true_offset(dst), true_stat(dst, &st), true_stat(src, &sst);
    CHECKED(r = sendfile(dst, src, NULL, 25)); /* from a.dat's own offset: 0 */
    copied("sendfile", src, dst, 0, 25, r, &sst);
    expect("write", dst, off, 25, r, &st);
    true_stat(dst, &st);
    CHECKED(close(dst));
    expect("close", dst, -1, 0, 0, &st);
}

/* c.pid opened by a raw openat (O_TRUNC, as a pid file is written),
 * then again in O_APPEND mode: the tracer learns of each at its first
 * write, after the kernel moved the offset; then a raw read-only open.
 * All three stay open. */
static void raw_opens(const char *dir)
{
    struct stat st;
    long long off, r;
    char c_path[4096];
    snprintf(c_path, sizeof c_path, "%s/c.pid", dir);
    int raw = (int)syscall(SYS_openat, AT_FDCWD, c_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECKED(raw);
    true_stat(raw, &st);
    opened("raw_open", c_path, raw, &st);
    CHECKED(r = write(raw, buf, 6));
    expect("write", raw, 0, 6, r, &st);
    off = true_offset(raw), true_stat(raw, &st);
    CHECKED(r = write(raw, buf, 9));
    expect("write", raw, off, 9, r, &st);
    int rawap = (int)syscall(SYS_openat, AT_FDCWD, c_path, O_WRONLY | O_APPEND);
    CHECKED(rawap);
    true_stat(rawap, &st);
    CHECKED(r = write(rawap, buf, 4)); /* O_APPEND: at the end, whatever the offset */
    expect("write", rawap, (long long)st.st_size, 4, r, &st);
    true_stat(rawap, &st);
    CHECKED(r = write(rawap, buf, 5));
    expect("write", rawap, (long long)st.st_size, 5, r, &st);
    /* a raw read-only open, moved by a raw lseek: its first read */
    int rawrd = (int)syscall(SYS_openat, AT_FDCWD, c_path, O_RDONLY);
    CHECKED(rawrd);
    CHECKED(syscall(SYS_lseek, rawrd, 3, SEEK_SET));
    true_stat(rawrd, &st);
    CHECKED(r = read(rawrd, buf, 8));
    expect("read", rawrd, 3, 8, r, &st);
}

/* d.lock opened by a raw openat and removed before its first write, as
 * a lock file a server unlinks while it holds it: named by its path,
 * not the kernel's "... (deleted)" */
static void raw_open_unlinked(const char *dir)
{
    struct stat st;
    long long r;
    char d_path[4096];
    snprintf(d_path, sizeof d_path, "%s/d.lock", dir);
    int rawdel = (int)syscall(SYS_openat, AT_FDCWD, d_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECKED(rawdel);
    CHECKED(syscall(SYS_unlinkat, AT_FDCWD, d_path, 0));
    true_stat(rawdel, &st);
    opened("raw_open", d_path, rawdel, &st);
    CHECKED(r = write(rawdel, buf, 7));
    expect("write", rawdel, 0, 7, r, &st);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tt_fileio DIR\n");
        return 2;
    }
    char a_path[4096], b_path[4096];
    snprintf(a_path, sizeof a_path, "%s/a.dat", argv[1]);
    snprintf(b_path, sizeof b_path, "%s/b.log", argv[1]);
    memset(buf, 'x', sizeof buf);
    setvbuf(stdout, NULL, _IOLBF, 0);

    struct stat st;
    int fd = open(a_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECKED(fd);
    true_stat(fd, &st);
    opened("open", a_path, fd, &st);
    transfers(fd);
    dups(fd);
    size_and_sync(fd);
    true_stat(fd, &st);
    CHECKED(close(fd));
    expect("close", fd, -1, 0, 0, &st);

    append_mode(b_path);
    copies(a_path, b_path);
    raw_opens(argv[1]);
    raw_open_unlinked(argv[1]);
    return 0;
}
