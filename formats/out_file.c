/* out_file.c - creating output files without following a planted symlink
 * or writing through a planted hard link (see out_file.h).
 *
 * Must never: open the last component of an output path without
 * O_NOFOLLOW, truncate or chmod a file this process did not just create
 * with O_EXCL, or leave a temporary file behind on failure. */
#include "out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Splits path into its directory (copied to dir) and last component. */
static const char *out_file_split(const char *path, char *dir, size_t dircap, char *err,
                                  size_t errlen)
{
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 1;
    if (!*name || !strcmp(name, ".") || !strcmp(name, "..") || strlen(name) > 255) {
        snprintf(err, errlen, "%s: not a file name", path);
        return NULL;
    }
    if (dlen >= dircap) {
        snprintf(err, errlen, "%s: path too long (at most %zu bytes)", path, dircap - 1);
        return NULL;
    }
    if (!slash)
        memcpy(dir, ".", 2);
    else if (slash == path)
        memcpy(dir, "/", 2);
    else {
        memcpy(dir, path, dlen);
        dir[dlen] = 0;
    }
    return name;
}

/* Opens dir once; refuses one every user may write to without the sticky
 * bit (anyone could swap our file for a link between two calls). A
 * directory that cannot be opened is reported for path, as "PATH: doing:
 * reason" (path is dir itself for out_file_check_dir). */
static int out_file_open_dir(const char *dir, const char *path, const char *doing, char *err,
                             size_t errlen)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s%s%s", path, doing, *doing ? ": " : "",
                 e == ENOTDIR && path == dir ? "not a directory" : strerror(e));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
        snprintf(err, errlen,
                 "%s: directory is writable by every user and has no sticky bit; refusing to "
                 "write there (chmod o-w or +t)",
                 dir);
        close(fd);
        return -1;
    }
    return fd;
}

int out_file_check_dir(const char *dir, char *err, size_t errlen)
{
    int fd = out_file_open_dir(dir, dir, "", err, errlen);
    if (fd < 0)
        return -1;
    /* AT_EACCESS: as the effective user, the one that will write; a
     * read-only mount (EROFS) and an immutable directory (EPERM) fail here
     * too, also for root. */
    int rc = faccessat(fd, ".", W_OK, AT_EACCESS);
    if (rc != 0)
        snprintf(err, errlen, "%s: directory not writable: %s", dir, strerror(errno));
    close(fd);
    return rc ? -1 : 0;
}

/* openat(dirfd, name, O_CREAT|O_EXCL|O_NOFOLLOW) with the mode set exactly. */
static int out_file_create_at(int dirfd, const char *name, int flags, mode_t mode)
{
    int acc = ((flags & O_ACCMODE) == O_RDWR ? O_RDWR : O_WRONLY) | (flags & O_APPEND);
    int fd = openat(dirfd, name, acc | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0 && fchmod(fd, mode) != 0) {
        int e = errno;
        close(fd);
        unlinkat(dirfd, name, 0);
        errno = e;
        return -1;
    }
    return fd;
}

int out_file_begin(struct out_file *o, const char *path, mode_t mode, char *err, size_t errlen)
{
    char dir[4096];
    memset(o, 0, sizeof *o);
    o->fd = o->dirfd = -1;
    const char *name = out_file_split(path, dir, sizeof dir, err, errlen);
    if (!name || (o->dirfd = out_file_open_dir(
                      dir, path, "cannot create a temporary file next to it", err, errlen)) < 0)
        return -1;
    if (!(o->path = strdup(path))) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    snprintf(o->name, sizeof o->name, "%s", name);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    unsigned long x = (unsigned long)ts.tv_nsec ^ ((unsigned long)getpid() << 20);
    for (int attempt = 0; attempt < 64; attempt++) {
        x = x * 6364136223846793005ul + 1442695040888963407ul;
        /* hidden, and short enough for NAME_MAX whatever the name's length */
        snprintf(o->tmp, sizeof o->tmp, ".%.200s.%08lx.tmp", name, (x >> 16) & 0xfffffffful);
        o->fd = out_file_create_at(o->dirfd, o->tmp, O_WRONLY, mode);
        if (o->fd >= 0 || errno != EEXIST)
            break;
    }
    if (o->fd < 0) {
        snprintf(err, errlen, "%s: cannot create a temporary file next to it: %s", path,
                 strerror(errno));
        goto fail;
    }
    return 0;
fail:
    close(o->dirfd);
    free(o->path);
    memset(o, 0, sizeof *o);
    o->fd = o->dirfd = -1;
    return -1;
}

FILE *out_file_stream(struct out_file *o, char *err, size_t errlen)
{
    if (o->stream)
        return o->stream;
    if (!(o->stream = fdopen(o->fd, "w"))) {
        snprintf(err, errlen, "%s: %s", o->path, strerror(errno));
        return NULL;
    }
    o->fd = -1; /* the stream owns it */
    return o->stream;
}

static void out_file_release(struct out_file *o)
{
    if (o->stream)
        fclose(o->stream);
    if (o->fd >= 0)
        close(o->fd);
    if (o->dirfd >= 0)
        close(o->dirfd);
    free(o->path);
    o->stream = NULL;
    o->path = NULL;
    o->fd = o->dirfd = -1;
}

int out_file_commit(struct out_file *o, char *err, size_t errlen)
{
    int bad = 0, e = 0;
    if (o->stream) {
        bad = fflush(o->stream) != 0 || ferror(o->stream) || fsync(fileno(o->stream)) != 0;
        e = errno;
        bad |= fclose(o->stream) != 0;
        o->stream = NULL;
    } else {
        bad = fsync(o->fd) != 0;
        e = errno;
        bad |= close(o->fd) != 0;
        o->fd = -1;
    }
    if (bad) {
        snprintf(err, errlen, "%s: cannot write: %s", o->path, strerror(e ? e : errno));
    } else if (renameat(o->dirfd, o->tmp, o->dirfd, o->name) != 0) {
        snprintf(err, errlen, "%s: cannot rename into place: %s", o->path, strerror(errno));
        bad = 1;
    }
    if (bad)
        unlinkat(o->dirfd, o->tmp, 0);
    out_file_release(o);
    return bad ? -1 : 0;
}

void out_file_abort(struct out_file *o)
{
    if (o->dirfd >= 0)
        unlinkat(o->dirfd, o->tmp, 0);
    out_file_release(o);
}

int out_file_create(const char *path, int flags, mode_t mode, char *err, size_t errlen)
{
    char dir[4096];
    const char *name = out_file_split(path, dir, sizeof dir, err, errlen);
    int dirfd = name ? out_file_open_dir(dir, path, "cannot create", err, errlen) : -1;
    if (dirfd < 0)
        return -1;
    int fd = out_file_create_at(dirfd, name, flags, mode);
    if (fd < 0 && errno == EEXIST) {
        /* replace the entry, whatever it is, without opening it */
        if (unlinkat(dirfd, name, 0) != 0 && errno != ENOENT) {
            snprintf(err, errlen, "%s: cannot replace: %s", path, strerror(errno));
            close(dirfd);
            return -1;
        }
        fd = out_file_create_at(dirfd, name, flags, mode);
    }
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot create: %s%s", path, strerror(e),
                 e == EEXIST ? " (it came back while being replaced)" : "");
    }
    close(dirfd);
    return fd;
}

int out_file_open(const char *path, int flags, mode_t mode, char *err, size_t errlen)
{
    char dir[4096];
    const char *name = out_file_split(path, dir, sizeof dir, err, errlen);
    int dirfd = name ? out_file_open_dir(dir, path, "cannot open", err, errlen) : -1;
    if (dirfd < 0)
        return -1;
    int acc = ((flags & O_ACCMODE) == O_RDWR ? O_RDWR : O_WRONLY) | (flags & O_APPEND);
    /* O_NONBLOCK: a planted FIFO must not hang the open (cleared below) */
    int fd = openat(dirfd, name, acc | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    const char *why = NULL;
    struct stat st;
    if (fd < 0 && errno == ENOENT)
        fd = out_file_create_at(dirfd, name, acc, mode);
    else if (fd >= 0 && fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (fd >= 0 && !S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (fd >= 0 && st.st_nlink != 1)
        why = "it has another hard link (a file elsewhere would change too)";
    else if (fd >= 0 && fcntl(fd, F_SETFL, acc) != 0)
        why = strerror(errno);
    if (why) {
        snprintf(err, errlen, "%s: refusing to write: %s", path, why);
        close(fd);
        fd = -1;
    } else if (fd < 0) {
        int e = errno; /* ENXIO: a FIFO without a reader, or a socket */
        snprintf(err, errlen, "%s: cannot open: %s", path,
                 e == ELOOP   ? "it is a symlink (never followed)"
                 : e == ENXIO ? "not a regular file"
                              : strerror(e));
    }
    close(dirfd);
    return fd;
}
