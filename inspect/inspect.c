/* inspect.c - what `preplay info` and `preplay dump` share (inspect.h):
 * argument parsing, the trace files of a target, exit statuses, endpoint
 * and protocol names. Nothing here reads a trace or prints trace data; a
 * usage error or an unreadable target is one line on stderr. */
#include "inspect.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

void *inspect_xalloc(void *p)
{
    if (!p) {
        fprintf(stderr, "preplay: out of memory\n");
        exit(1);
    }
    return p;
}

void inspect_sort(void *v, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(v, n, size, cmp);
}

const char *inspect_proto_name(unsigned proto)
{
    static const char *const names[] = {"?", "tcp", "udp", "unix_stream", "unix_dgram"};
    return proto < 5 ? names[proto] : "?";
}

void inspect_format_endpoint(char *buf, size_t cap, unsigned family, const uint8_t addr[16],
                             uint16_t port)
{
    char a[INET6_ADDRSTRLEN] = "";
    if (family == AF_INET && inet_ntop(AF_INET, addr, a, sizeof a))
        snprintf(buf, cap, "%s:%u", a, port);
    else if (family == AF_INET6 && inet_ntop(AF_INET6, addr, a, sizeof a))
        snprintf(buf, cap, "[%s]:%u", a, port);
    else
        buf[0] = '\0';
}

json_t *inspect_json_str(const char *s)
{
    json_t *j = s ? json_string(s) : NULL;
    return j ? j : json_null();
}

int inspect_parse_args(int argc, char **argv, struct inspect_args *a, const char *usage)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            a->json = 1;
        else if (!strcmp(argv[i], "--salvage"))
            a->salvage = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("%s", usage);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "preplay %s: unknown option '%s' (see --help)\n", argv[0], argv[i]);
            return INSPECT_EXIT_USAGE;
        } else if (a->target) {
            fprintf(stderr, "preplay %s: one trace at a time ('%s' and '%s')\n", argv[0], a->target,
                    argv[i]);
            return INSPECT_EXIT_USAGE;
        } else
            a->target = argv[i];
    }
    if (!a->target) {
        fprintf(stderr, "preplay %s: missing trace (see --help)\n", argv[0]);
        return INSPECT_EXIT_USAGE;
    }
    return -1;
}

static int inspect_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of directory dir whose name ends in ext, sorted; NULL with
 * *n 0 when there are none, or the directory cannot be read (-1 in *rc). */
static char **inspect_list_dir(const char *dir, const char *ext, size_t *n, int *rc)
{
    char **v = NULL;
    size_t cap = 0, elen = strlen(ext);
    *n = 0;
    *rc = 0;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "preplay: %s: %s\n", dir, strerror(errno));
        *rc = -1;
        return NULL;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len <= elen || strcmp(e->d_name + len - elen, ext) != 0)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            v = inspect_xalloc(realloc(v, cap * sizeof *v));
        }
        size_t plen = strlen(dir) + len + 2;
        v[*n] = inspect_xalloc(malloc(plen));
        snprintf(v[*n], plen, "%s/%s", dir, e->d_name);
        (*n)++;
    }
    closedir(d);
    inspect_sort(v, *n, sizeof *v, inspect_cmp_str);
    return v;
}

char **inspect_list_counters(const char *dir, size_t *n)
{
    int rc;
    return inspect_list_dir(dir, ".counters", n, &rc);
}

char **inspect_list_traces(const char *target, size_t *n, int *is_dir)
{
    struct stat st;
    *n = 0;
    *is_dir = 0;
    if (stat(target, &st) != 0) {
        fprintf(stderr, "preplay: %s: %s\n", target, strerror(errno));
        return NULL;
    }
    char **v = NULL;
    if (!S_ISDIR(st.st_mode)) {
        v = inspect_xalloc(malloc(sizeof *v));
        v[(*n)++] = inspect_xalloc(strdup(target));
        return v;
    }
    *is_dir = 1;
    int rc;
    v = inspect_list_dir(target, ".trace", n, &rc);
    if (rc)
        return NULL;
    if (!*n) {
        fprintf(stderr, "preplay: %s: no *.trace files in this directory\n", target);
        free(v);
        return NULL;
    }
    return v;
}
