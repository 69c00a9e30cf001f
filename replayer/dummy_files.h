/* dummy_files.h - the files a replay reads and writes instead of the
 * application's own (CloudProphet §3.1.2): one dummy file per file of the
 * plan's manifest, with the recorded initial size, filled with
 * incompressible data so replayed reads hit storage as the app's did (no
 * sparse holes, nothing a compressing filesystem or dedup could shortcut).
 *
 * Content is a function of (file index, byte offset) - a counter-based
 * generator - so any range can be regenerated exactly. That is what makes
 * restoring cheap: replayed writes change files, and before every replay
 * interval dummy_files_restore truncates what grew, re-extends what shrank
 * and rewrites only the ranges replay wrote (dummy_files_note_write), so
 * every interval starts from the same files.
 *
 * Must never: write outside the directory it was given, or leave a file
 * sparse. */
#ifndef PREPLAY_DUMMY_FILES_H
#define PREPLAY_DUMMY_FILES_H

#include <stddef.h>
#include <stdint.h>

struct plan;

struct dummy_file_spec {
    const char *recorded_path; /* names the dummy file (its base name); may be "" */
    uint64_t initial_size;
};

struct dummy_files_stats {
    uint32_t files;           /* files handled */
    uint64_t bytes_written;   /* bytes of generated data written */
    uint64_t bytes_truncated; /* bytes cut off files that had grown */
    uint32_t files_recreated; /* files that were missing and written whole */
    double seconds;           /* wall time of the call, including fdatasync */
};

enum dummy_files_cache_method {
    DUMMY_CACHE_DROP_CACHES = 1, /* sync + echo 1 > /proc/sys/vm/drop_caches */
    DUMMY_CACHE_FADVISE = 2,     /* fdatasync + posix_fadvise(DONTNEED) per file */
};

struct dummy_files;

/* Describes the set (no I/O yet besides creating dir if missing). The
 * specs' strings are copied. NULL + one-line reason on failure. */
struct dummy_files *dummy_files_open(const char *dir, const struct dummy_file_spec *specs,
                                     uint32_t n, char *err, size_t errlen);
/* The same from a plan's file manifest (plan.files); a file is at least as
 * large as the furthest byte a recorded read at an offset reached. */
struct dummy_files *dummy_files_open_plan(const char *dir, const struct plan *p, char *err,
                                          size_t errlen);
void dummy_files_close(struct dummy_files *d);

uint32_t dummy_files_count(const struct dummy_files *d);
/* Path of dummy file i ("DIR/00003-orders.db"), NULL if out of range. */
const char *dummy_files_path(const struct dummy_files *d, uint32_t i);
uint64_t dummy_files_initial_size(const struct dummy_files *d, uint32_t i);
/* Bytes all files need; and whether the filesystem has them (0, or -1
 * with the reason). */
uint64_t dummy_files_total_bytes(const struct dummy_files *d);
int dummy_files_check_space(const struct dummy_files *d, char *err, size_t errlen);

/* Writes every file whole, at its initial size (replacing what is there).
 * Returns 0, or -1 with a reason naming the file. */
int dummy_files_create(struct dummy_files *d, struct dummy_files_stats *st, char *err,
                       size_t errlen);

/* Remembers that replay wrote [offset, offset+len) of file i (thread-safe;
 * cheap: called per replayed write). */
void dummy_files_note_write(struct dummy_files *d, uint32_t i, uint64_t offset, uint64_t len);

/* Brings every file back to its state after dummy_files_create: size
 * fixed (truncate / re-extend with the original content), noted ranges
 * rewritten; full != 0 rewrites every byte instead (for when writes were
 * not noted, e.g. after another process replayed). Missing files are
 * recreated. Forgets the noted ranges. 0, or -1 with a reason. */
int dummy_files_restore(struct dummy_files *d, int full, struct dummy_files_stats *st, char *err,
                        size_t errlen);

/* Waits until the filesystem holding the files has written back every
 * dirty page (syncfs), so an interval does not start while the restore's
 * (or anything else's) write-back still occupies the device. 0, or -1 with
 * the reason. */
int dummy_files_settle(struct dummy_files *d, char *err, size_t errlen);

/* Evicts the files from the page cache so the next reads hit storage.
 * method 0 (auto): drop_caches when permitted (it evicts every clean page
 * of the machine, not only ours), else fadvise per file; or force one of
 * enum dummy_files_cache_method. Returns the method used, or -1 with a
 * reason. */
int dummy_files_drop_cache(struct dummy_files *d, int method, char *err, size_t errlen);
const char *dummy_files_cache_method_name(int method);

/* The generated content: fills buf with the bytes of file i at [offset,
 * offset+len) (exposed for tests). */
void dummy_files_content(uint32_t i, uint64_t offset, void *buf, size_t len);

#endif
