/* fuzz_input_file.h - the fuzz targets whose reader takes a path (trace,
 * plan, results, duet and regress readers) get libFuzzer's input as a
 * file: an in-memory one (memfd), named /proc/self/fd/N. Must never touch
 * the disk or keep the descriptor: the caller closes it. */
#ifndef PREPLAY_FUZZ_INPUT_FILE_H
#define PREPLAY_FUZZ_INPUT_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

/* Writes data to a new memfd called name and its path into path. Returns
 * the descriptor, or -1 (the input is then skipped). */
static inline int fuzz_input_file(const uint8_t *data, size_t size, const char *name, char *path,
                                  size_t pathlen)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return -1;
    }
    snprintf(path, pathlen, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
