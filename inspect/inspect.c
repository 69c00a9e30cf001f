/* inspect.c - what `preplay info` and `preplay dump` share (inspect.h):
 * argument parsing, exit statuses, endpoint and protocol names. Nothing
 * here reads a trace or prints trace data; a usage error is one line on
 * stderr. */
#include "inspect.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

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
