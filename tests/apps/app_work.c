/* app_work.c - deterministic CPU work and data files for the sample tiers
 * (app_work.h). Nothing here may depend on time or randomness. */
#include "app_work.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t app_work_cpu(uint64_t seed, uint64_t iterations)
{
    /* splitmix64 chained through its own output: every step depends on the last,
     * so the compiler cannot vectorize or skip it. */
    uint64_t x = seed;
    for (uint64_t i = 0; i < iterations; i++) {
        x += 0x9e3779b97f4a7c15ull;
        uint64_t z = x;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        x = z ^ (z >> 31);
    }
    return x;
}

uint64_t app_work_checksum(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int app_work_ensure_file(const char *path, size_t size, char *err, size_t err_cap)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == size)
        return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, err_cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    char block[4096];
    uint64_t state = 42;
    size_t done = 0;
    while (done < size) {
        for (size_t i = 0; i < sizeof block; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            block[i] = (char)('a' + (state >> 59) % 26);
        }
        size_t n = size - done < sizeof block ? size - done : sizeof block;
        ssize_t w = write(fd, block, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, err_cap, "%s: write at offset %zu: %s", path, done,
                     w < 0 ? strerror(errno) : "short write");
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    if (close(fd) < 0) {
        snprintf(err, err_cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
