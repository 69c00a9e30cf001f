/* tt_openstat.c - opens whose OPEN record waits for the file's identity
 * (tracer_open_settle), for test_openstat.py. Prints one JSON line per
 * open with the truth read by path with raw syscalls (which the tracer
 * cannot see): the file's device, inode and size when it was opened, and
 * whether the trace must hold an OPEN for it. Cases: the app's own fstat
 * right after open (the tracer must make no fstat of its own),
 * fstatat(AT_EMPTY_PATH), statx(AT_EMPTY_PATH), no fstat at all (an O_TRUNC open followed by a
 * write), a directory (no OPEN record), a descriptor dup'd before any other
 * call, and last an open followed by nothing but exit(). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tt_untraced_files.h"

/* The truth is read by path, not from the descriptor: the test counts the
 * stat calls made on each descriptor, which must be the app's alone. */
static void expect(const char *path, int fd, long long size_at_open, int recorded)
{
    struct stat st;
    if (syscall(SYS_newfstatat, AT_FDCWD, path, &st, 0) != 0)
        tt_die("raw stat");
    printf("{\"path\":\"%s\",\"fd\":%d,\"dev\":%llu,\"ino\":%llu,\"file_size\":%lld,"
           "\"recorded\":%d}\n",
           path, fd, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, size_at_open,
           recorded);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tt_openstat DIR\n");
        return 2;
    }
    char p[7][4096];
    const char *names[7] = {"fstat.dat", "fstatat.dat", "trunc.dat", "dir",
                            "dup.dat",   "exit.dat",    "statx.dat"};
    for (int i = 0; i < 7; i++)
        snprintf(p[i], sizeof p[i], "%s/%s", argv[1], names[i]);
    tt_make_file(p[0], 1000, 'z');
    tt_make_file(p[1], 2000, 'z');
    tt_make_file(p[2], 3000, 'z');
    if (mkdir(p[3], 0755) != 0)
        tt_die("mkdir");
    tt_make_file(p[4], 4000, 'z');
    tt_make_file(p[5], 5000, 'z');
    tt_make_file(p[6], 6000, 'z');
    char buf[64];
    struct stat st;

    /* 1. open, the app's fstat, read, close */
    int fd = open(p[0], O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size != 1000)
        tt_die("open+fstat");
    expect(p[0], fd, 1000, 1);
    if (read(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
        tt_die("read");
    close(fd);

    /* 2. fstatat(fd, "", AT_EMPTY_PATH) */
    fd = openat(AT_FDCWD, p[1], O_RDONLY);
    if (fd < 0 || fstatat(fd, "", &st, AT_EMPTY_PATH) != 0 || st.st_size != 2000)
        tt_die("openat+fstatat");
    expect(p[1], fd, 2000, 1);
    close(fd);

    /* 2b. statx(fd, "", AT_EMPTY_PATH) */
    fd = open(p[6], O_RDONLY);
    struct statx stx;
    if (fd < 0 || statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) != 0 ||
        stx.stx_size != 6000)
        tt_die("open+statx");
    expect(p[6], fd, 6000, 1);
    close(fd);

    /* 3. O_TRUNC and a write, no fstat: the tracer asks at the write */
    fd = open(p[2], O_WRONLY | O_TRUNC);
    if (fd < 0)
        tt_die("open trunc");
    if (write(fd, buf, 10) != 10)
        tt_die("write");
    expect(p[2], fd, 0, 1);
    close(fd);

    /* 4. a directory: no OPEN record */
    fd = open(p[3], O_RDONLY | O_DIRECTORY);
    if (fd < 0 || fstat(fd, &st) != 0)
        tt_die("open dir");
    expect(p[3], fd, 0, 0);
    close(fd);

    /* 5. dup'd first (a dup of the thread's own waiting open writes no DUP
     * record and takes no identity), then the app's fstat */
    fd = open(p[4], O_RDONLY);
    int fd2 = fd >= 0 ? dup(fd) : -1;
    if (fd2 < 0 || fstat(fd, &st) != 0)
        tt_die("open+dup");
    expect(p[4], fd, 4000, 1);
    close(fd2);
    close(fd);

    /* 6. open, then nothing the tracer sees before exit(): the expectation
     * is printed first (stdio is traced), for the lowest free descriptor */
    int lowest = (int)syscall(SYS_dup, 0);
    syscall(SYS_close, lowest);
    expect(p[5], lowest, 5000, 1);
    fd = open(p[5], O_RDONLY);
    if (fd != lowest)
        tt_die("open last");
    exit(0);
}
