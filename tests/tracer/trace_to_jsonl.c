/* trace_to_jsonl.c - the tracer tests' own view of a trace file: prints the
 * header and then every event as one JSON object per line, with interned
 * strings (paths, labels, queries) resolved, through the streaming reader
 * of formats/. It is a test oracle, independent of `preplay dump`, so a
 * bug in the dump CLI cannot hide or fake a tracer bug. It must never
 * interpret events (the tests do that); it only prints what is there.
 *
 * usage: trace_to_jsonl TRACE...   (exit 1 on any reader error) */
#include <stdio.h>
#include <string.h>

#include "trace_file.h"

static void jsonl_string(const char *s, size_t len)
{
    putchar('"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20 || c >= 0x7f)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void jsonl_interned(struct trace_reader *r, const char *key, uint32_t id)
{
    uint32_t len = 0;
    const char *s = id ? trace_reader_string(r, id, &len) : NULL;
    if (!s)
        return;
    printf(",\"%s\":", key);
    jsonl_string(s, len);
}

static void jsonl_addr(const char *key, uint8_t family, const uint8_t *a)
{
    char buf[64];
    if (family == 2)
        snprintf(buf, sizeof buf, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
    else {
        size_t n = 0;
        for (int i = 0; i < 16; i += 2)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%x", i ? ":" : "",
                                  (unsigned)(a[i] << 8 | a[i + 1]));
    }
    printf(",\"%s\":\"%s\"", key, buf);
}

static void jsonl_event(struct trace_reader *r, const struct trace_event *ev)
{
    const char *op = trace_event_op_name(ev->type, ev->op);
    printf("{\"type\":\"%s\"", trace_event_type_name(ev->type));
    if (op)
        printf(",\"op\":\"%s\"", op);
    else
        printf(",\"op\":%u", ev->op);
    printf(",\"tid\":%u,\"ts\":%llu,\"dur\":%llu,\"flags\":%u", ev->tid,
           (unsigned long long)ev->ts_ns, (unsigned long long)ev->dur_ns, ev->flags);
    switch (ev->type) {
    case TRACE_EV_FILE: {
        const struct trace_file_event *f = &ev->u.file;
        printf(",\"fd\":%d,\"fd2\":%d,\"dev\":%llu,\"ino\":%llu,\"offset\":%lld,\"size\":%llu,"
               "\"result\":%lld,\"file_size\":%llu,\"open_flags\":%u",
               f->fd, f->fd2, (unsigned long long)f->dev, (unsigned long long)f->ino,
               (long long)f->offset, (unsigned long long)f->size, (long long)f->result,
               (unsigned long long)f->file_size, f->open_flags);
        jsonl_interned(r, "path", f->path_id);
        break;
    }
    case TRACE_EV_NET: {
        const struct trace_net_event *n = &ev->u.net;
        printf(",\"fd\":%d,\"conn_id\":%llu,\"size\":%llu,\"result\":%lld,\"msg_flags\":%u,"
               "\"nmsgs\":%u,\"queued_us\":%u",
               n->fd, (unsigned long long)n->conn_id, (unsigned long long)n->size,
               (long long)n->result, n->msg_flags, n->nmsgs, n->queued_us);
        break;
    }
    case TRACE_EV_CONN: {
        const struct trace_conn_event *c = &ev->u.conn;
        printf(",\"fd\":%d,\"proto\":%u,\"family\":%u,\"conn_id\":%llu,\"local_port\":%u,"
               "\"remote_port\":%u,\"unix_inode\":%llu,\"unix_peer_inode\":%llu,\"result\":%lld",
               c->fd, c->proto, c->family, (unsigned long long)c->conn_id, c->local_port,
               c->remote_port, (unsigned long long)c->unix_inode,
               (unsigned long long)c->unix_peer_inode, (long long)c->result);
        if (c->family == 2 || c->family == 10) {
            jsonl_addr("local_addr", c->family, c->local_addr);
            jsonl_addr("remote_addr", c->family, c->remote_addr);
        }
        break;
    }
    case TRACE_EV_SOCKOPT: {
        const struct trace_sockopt_event *o = &ev->u.sockopt;
        printf(",\"fd\":%d,\"level\":%d,\"name\":%d,\"value\":%lld,\"conn_id\":%llu", o->fd,
               o->level, o->name, (long long)o->value, (unsigned long long)o->conn_id);
        break;
    }
    case TRACE_EV_LOCK: {
        const struct trace_lock_event *l = &ev->u.lock;
        printf(",\"kind\":%u,\"mode\":%u,\"result\":%d,\"lock_id\":%llu,\"start\":%lld,"
               "\"len\":%lld",
               l->kind, l->mode, l->result, (unsigned long long)l->lock_id, (long long)l->start,
               (long long)l->len);
        break;
    }
    case TRACE_EV_LABEL:
        printf(",\"conn_id\":%llu", (unsigned long long)ev->u.label.conn_id);
        jsonl_interned(r, "label", ev->u.label.label_id);
        break;
    case TRACE_EV_LOSS:
        printf(",\"count\":%llu,\"reason\":%u", (unsigned long long)ev->u.loss.count,
               ev->u.loss.reason);
        break;
    case TRACE_EV_CONTROL:
        printf(",\"arg0\":%lld,\"arg1\":%lld", (long long)ev->u.control.arg0,
               (long long)ev->u.control.arg1);
        if (ev->op == TRACE_CTL_EXEC && ev->u.control.arg0 > 0)
            jsonl_interned(r, "path", (uint32_t)ev->u.control.arg0);
        break;
    case TRACE_EV_THREAD_START:
        printf(",\"parent_tid\":%u", ev->u.thread.parent_tid);
        break;
    case TRACE_EV_STRING:
        printf(",\"id\":%u,\"text\":", ev->u.string.id);
        jsonl_string(ev->data, ev->u.string.len);
        break;
    default:
        break;
    }
    printf("}\n");
}

static int jsonl_file(const char *path)
{
    char err[512];
    struct trace_reader *r = trace_reader_open(path, NULL, err, sizeof err);
    if (!r) {
        fprintf(stderr, "trace_to_jsonl: %s\n", err);
        return 1;
    }
    const struct trace_header *h = trace_reader_header(r);
    printf("{\"type\":\"header\",\"file\":");
    jsonl_string(path, strlen(path));
    printf(",\"pid\":%u,\"ppid\":%u,\"exe\":", h->pid, h->ppid);
    jsonl_string(h->exe, strlen(h->exe));
    printf(",\"component\":");
    jsonl_string(h->component, strlen(h->component));
    printf(",\"record_options\":");
    jsonl_string(h->record_options, strlen(h->record_options));
    printf(",\"argv\":[");
    for (uint32_t i = 0, first = 1; i < h->argv_len; first = 0) {
        size_t n = strnlen(h->argv_joined + i, h->argv_len - i);
        if (!first)
            putchar(',');
        jsonl_string(h->argv_joined + i, n);
        i += (uint32_t)n + 1;
    }
    printf("]}\n");
    struct trace_event ev;
    int rc;
    while ((rc = trace_reader_next(r, &ev)) == 1)
        jsonl_event(r, &ev);
    int status = 0;
    if (rc < 0) {
        fprintf(stderr, "trace_to_jsonl: %s\n", trace_reader_error(r));
        status = 1;
    }
    trace_reader_close(r);
    return status;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: trace_to_jsonl TRACE...\n");
        return 2;
    }
    int status = 0;
    for (int i = 1; i < argc; i++)
        status |= jsonl_file(argv[i]);
    return status;
}
