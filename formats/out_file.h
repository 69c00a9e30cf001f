/* out_file.h - the one way preplay creates an output file (traces, plans,
 * results, reports, stats, logs, dummy files), safe in a directory other
 * users can write to, when run as root.
 *
 * Every function here resolves the directory part of the path once (it may
 * be a symlink: the user named it) and then works on the last component
 * under that directory's descriptor, never following a symlink there and
 * never writing through a name that another link also reaches:
 *   - a new file is created with O_CREAT|O_EXCL|O_NOFOLLOW, so a planted
 *     symlink or hard link at its name is replaced (its entry removed), and
 *     whatever it pointed at is left as it was, content and mode;
 *   - a directory writable by every user is refused unless it has the
 *     sticky bit (as /tmp has: there nobody can remove or rename another
 *     user's entry, so the O_EXCL file stays ours).
 * Library code: never prints, never exits; errors are one line in err
 * ("PATH: reason"). */
#ifndef PREPLAY_OUT_FILE_H
#define PREPLAY_OUT_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* A file written whole under a temporary name next to its final path and
 * renamed into place by out_file_commit: readers never see half a file. */
struct out_file {
    int fd;    /* the temporary file, or -1 once a stream owns it */
    int dirfd; /* the directory, opened once */
    FILE *stream;
    char *path;     /* as given, for messages */
    char name[256]; /* final name in the directory */
    char tmp[280];  /* temporary name in the directory */
};

/* Checks that dir exists, is a directory, is writable by this process
 * (a read-only mount, an immutable directory or missing permission say so)
 * and is not writable by every user without the sticky bit. 0, or -1 with
 * the reason in err. */
int out_file_check_dir(const char *dir, char *err, size_t errlen);

/* Starts a file to be put at path by out_file_commit; its mode is mode
 * (umask does not apply). 0, or -1 with err (nothing left behind). */
int out_file_begin(struct out_file *o, const char *path, mode_t mode, char *err, size_t errlen);
/* A stdio stream on the file (owned by o: closed by commit/abort); NULL
 * when out of memory, err set. */
FILE *out_file_stream(struct out_file *o, char *err, size_t errlen);
/* Flushes and closes the file, syncs it, renames it to its final name
 * (replacing whatever entry was there, never what it points to). 0, or -1
 * with err and the temporary file removed. Frees o either way. */
int out_file_commit(struct out_file *o, char *err, size_t errlen);
/* Closes and removes the temporary file (a failed write). */
void out_file_abort(struct out_file *o);

/* Creates path afresh for streamed writing (O_WRONLY, or O_RDWR when
 * flags has O_RDWR) with exactly mode mode: an existing entry of that name
 * is removed first (a symlink or a hard link, never what it reaches). Returns the descriptor
 * (O_CLOEXEC), or -1 with err. Allocates nothing: usable in a forked child before exec. */
int out_file_create(const char *path, int flags, mode_t mode, char *err, size_t errlen);

/* Opens path for writing without truncating it (flags: O_RDWR or O_WRONLY,
 * optionally O_APPEND), creating it with mode mode when it does not exist.
 * An existing entry must be a regular file with exactly one link (not a
 * symlink, not a hard link to a file elsewhere). Returns the descriptor
 * (O_CLOEXEC), or -1 with err. Allocates nothing. */
int out_file_open(const char *path, int flags, mode_t mode, char *err, size_t errlen);

#endif
