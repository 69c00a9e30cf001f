/* interpose_file.h - what the file interposer (interpose_file.c) offers the
 * rest of the library: the OPEN record, written at once or deferred until
 * the file's identity is known (the app's own fstat, most often), and the
 * absolute path id an open gives its descriptor.
 *
 * Settling runs at the thread's next traced call and in exit paths: it
 * must keep errno and never re-enter while the thread is inside the
 * tracer (the busy mark). */
#ifndef PREPLAY_TRACER_INTERPOSE_FILE_H
#define PREPLAY_TRACER_INTERPOSE_FILE_H

#include <stdint.h>
#include <sys/stat.h>

#include "tracer_state.h"

struct tracer_fd;

/* The string id an open of `path` (relative to dirfd; AT_FDCWD: the
 * working directory) gives its descriptor: the path made absolute, so
 * --path-prefix and `preplay info` see where the file is. 0 with *filtered
 * set when --path-prefix leaves the file out; 0 for no path. */
uint32_t tracer_open_path_id(int dirfd, const char *path, int *filtered);

/* The OPEN record of `fd` (or of an open that failed with `err`), with
 * the file's identity and size from `f` when known; `event_flags` adds to
 * the record's flags (TRACE_F_STDIO for fopen). */
void tracer_open_record(struct tracer_thread *t, int fd, int err, uint32_t path_id, int flags,
                        const struct tracer_fd *f, uint16_t event_flags, uint64_t begin,
                        uint64_t end);

/* Writes the OPEN record the thread deferred (tracer_thread.open_pending),
 * with the file's identity and size from `st` (the app's own fstat of the
 * descriptor, which most programs make right after open) or, when NULL,
 * from an fstat of ours; and puts the thread's window back. An open costs
 * the app no syscall of ours when its fstat comes first. Called first
 * thing at the thread's next traced call (tracer_enter_slow), at its exit,
 * from the fstat wrappers, and before a fork or a dup2 onto the
 * descriptor. */
void tracer_open_settle(struct tracer_thread *t, const struct stat *st);

/* tracer_open_settle when the thread's deferred open is descriptor `fd`
 * (-1: whichever it is), unless we are inside the tracer already. */
static inline void tracer_open_settle_if(struct tracer_thread *t, int fd, const struct stat *st)
{
    if (TRACER_UNLIKELY(t->open_pending.active) && (fd < 0 || t->open_pending.fd == fd) && !t->busy)
        tracer_open_settle(t, st);
}

#endif
