/* tt_openat.c - opens files relative to a directory descriptor for the
 * tracer test test_openat.py: openat(dirfd, "sub/c.dat"), the same file as
 * "./sub/c.dat", a missing file (ENOENT), an absolute path (dirfd ignored)
 * and a relative path under AT_FDCWD (joined to the working directory).
 * Prints, per open, the path the trace
 * must show and the fd/dev/ino the kernel gave, as one JSON line; the
 * identities come from raw fstat, which the tracer cannot see. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static void expect_open(const char *want_path, int fd, int err)
{
    struct stat st;
    memset(&st, 0, sizeof st);
    if (fd >= 0 && syscall(SYS_fstat, fd, &st) != 0) {
        perror("fstat");
        exit(1);
    }
    printf("{\"path\":\"%s\",\"fd\":%d,\"errno\":%d,\"dev\":%llu,\"ino\":%llu}\n", want_path, fd,
           fd < 0 ? err : 0, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tt_openat DIR (an absolute, symlink-free path)\n");
        return 2;
    }
    const char *dir = argv[1];
    char sub[4096], want[4096];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    if (mkdir(sub, 0700) != 0) {
        perror("mkdir");
        return 1;
    }
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dirfd < 0) {
        perror("open dir");
        return 1;
    }
    snprintf(want, sizeof want, "%s/sub/c.dat", dir);
    int fd = openat(dirfd, "sub/c.dat", O_CREAT | O_WRONLY | O_TRUNC, 0600);
    expect_open(want, fd, errno);
    if (fd < 0 || write(fd, "0123456789", 10) != 10)
        return 1;
    close(fd);
    fd = openat(dirfd, "./sub/c.dat", O_RDONLY);
    expect_open(want, fd, errno);
    close(fd);
    snprintf(want, sizeof want, "%s/missing.dat", dir);
    fd = openat(dirfd, "missing.dat", O_RDONLY);
    expect_open(want, fd, errno);
    snprintf(want, sizeof want, "%s/sub/c.dat", dir);
    fd = openat(dirfd, want, O_RDONLY); /* absolute: dirfd plays no part */
    expect_open(want, fd, errno);
    close(fd);
    int subfd = openat(dirfd, "sub", O_RDONLY | O_DIRECTORY);
    fd = openat(subfd, "c.dat", O_RDONLY); /* a dirfd that came from openat */
    expect_open(want, fd, errno);
    close(fd);
    close(subfd);
    if (chdir(dir) != 0) {
        perror("chdir");
        return 1;
    }
    fd = openat(AT_FDCWD, "sub/c.dat", O_RDONLY); /* AT_FDCWD: the working directory's */
    snprintf(want, sizeof want, "%s/sub/c.dat", dir);
    expect_open(want, fd, errno);
    close(fd);
    close(dirfd);
    return 0;
}
