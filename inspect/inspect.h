/* inspect.h - what `preplay info` and `preplay dump` share: their exit
 * statuses, argument parsing and the small renderers both use. The
 * commands print; these helpers only print usage errors (and die on out of
 * memory, as the commands do), never trace data. */
#ifndef PREPLAY_INSPECT_H
#define PREPLAY_INSPECT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define INSPECT_EXIT_DAMAGED 1
#define INSPECT_EXIT_USAGE 2
#define INSPECT_EXIT_SALVAGED 3

struct inspect_args {
    int json, salvage;
    const char *target;
};

/* p, or "preplay: out of memory" and exit 1 when p is NULL. */
void *inspect_xalloc(void *p);

/* qsort that accepts an empty, NULL array (qsort itself must not get NULL). */
void inspect_sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *));

/* "tcp", "udp", "unix_stream", "unix_dgram" for a TRACE_PROTO_*, else "?". */
const char *inspect_proto_name(unsigned proto);

/* "1.2.3.4:80" / "[::1]:80" for the conn's family; "" when not IP. */
void inspect_format_endpoint(char *buf, size_t cap, unsigned family, const uint8_t addr[16],
                             uint16_t port);

/* A JSON string, or JSON null for NULL (or a string jansson refuses). */
json_t *inspect_json_str(const char *s);

/* The *.trace files of a directory (sorted by name, *is_dir = 1), or the
 * target itself when it is not a directory: n malloc'ed paths in a malloc'ed
 * array. NULL (the reason on stderr) when the target cannot be read or the
 * directory holds no *.trace file. */
char **inspect_list_traces(const char *target, size_t *n, int *is_dir);
/* The *.counters files of directory dir (sorted; NULL when none). */
char **inspect_list_counters(const char *dir, size_t *n);

/* Parses [--json] [--salvage] [--help] TARGET. Returns -1 to go on, or the
 * exit status to return now (0 after --help, INSPECT_EXIT_USAGE after a
 * usage error, reported on stderr). */
int inspect_parse_args(int argc, char **argv, struct inspect_args *a, const char *usage);

#endif
