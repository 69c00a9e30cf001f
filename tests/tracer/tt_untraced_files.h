/* tt_untraced_files.h - what the tracer test programs (tt_*.c) share for
 * setting up files the tracer must not see: raw system calls only, so the
 * trace holds the program's own calls and nothing of its setup. */
#ifndef PREPLAY_TT_UNTRACED_FILES_H
#define PREPLAY_TT_UNTRACED_FILES_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline void tt_die(const char *what)
{
    perror(what);
    exit(1);
}

/* Creates path with `size` bytes of `fill`. */
static inline void tt_make_file(const char *path, size_t size, char fill)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        tt_die("create");
    char buf[256];
    memset(buf, fill, sizeof buf);
    for (size_t done = 0; done < size;) {
        size_t n = size - done < sizeof buf ? size - done : sizeof buf;
        if (syscall(SYS_write, fd, buf, n) != (long)n)
            tt_die("write");
        done += n;
    }
    syscall(SYS_close, fd);
}

#endif
