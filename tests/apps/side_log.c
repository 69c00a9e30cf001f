/* side_log.c - per-slot buffered side log of served requests (see side_log.h and
 * README.md for the line format). Never takes a lock shared between slots on the
 * record path. */
#include "side_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SIDE_LOG_FLUSH_BYTES (1u << 20)
#define SIDE_LOG_LINE_MAX 512

struct side_log_slot {
    char *buf;
    size_t len, cap;
    unsigned long long dropped;
};

struct side_log {
    int fd;
    char tier[32];
    int pid;
    unsigned slot_count;
    int write_failed;
    struct side_log_slot *slots;
};

static _Thread_local long side_log_cached_tid;

static long side_log_tid(void)
{
    if (side_log_cached_tid == 0)
        side_log_cached_tid = syscall(SYS_gettid);
    return side_log_cached_tid;
}

static int side_log_write_fd(struct side_log *log, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(log->fd, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            log->write_failed = 1;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

struct side_log *side_log_open(const char *path, const char *tier, unsigned slots, char *err,
                               size_t err_cap)
{
    struct side_log *log = calloc(1, sizeof *log);
    if (!log || slots == 0) {
        snprintf(err, err_cap, "side log %s: out of memory", path);
        free(log);
        return NULL;
    }
    log->slots = calloc(slots, sizeof *log->slots);
    if (!log->slots) {
        snprintf(err, err_cap, "side log %s: out of memory", path);
        free(log);
        return NULL;
    }
    log->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log->fd < 0) {
        snprintf(err, err_cap, "side log %s: %s", path, strerror(errno));
        free(log->slots);
        free(log);
        return NULL;
    }
    snprintf(log->tier, sizeof log->tier, "%s", tier);
    log->pid = (int)getpid();
    log->slot_count = slots;
    static const char header[] = "# preplay-sample-sidelog v1: tier pid tid id parent label "
                                 "start_ns end_ns nested\n";
    /* The header is written only into an empty file so appending runs stay parseable. */
    if (lseek(log->fd, 0, SEEK_END) == 0)
        side_log_write_fd(log, header, sizeof header - 1);
    return log;
}

static void side_log_flush_slot(struct side_log *log, struct side_log_slot *slot)
{
    if (slot->len > 0)
        side_log_write_fd(log, slot->buf, slot->len);
    slot->len = 0;
}

void side_log_record(struct side_log *log, unsigned slot_index, const struct side_log_entry *e)
{
    if (!log || slot_index >= log->slot_count)
        return;
    struct side_log_slot *slot = &log->slots[slot_index];
    char label[80];
    size_t li = 0;
    for (const char *p = e->label ? e->label : "-"; *p && li + 1 < sizeof label; p++)
        label[li++] = (*p == '\t' || (unsigned char)*p < 0x20 || *p == 0x7f) ? '_' : *p;
    label[li] = '\0';
    if (li == 0)
        snprintf(label, sizeof label, "-");

    char line[SIDE_LOG_LINE_MAX];
    int n = snprintf(line, sizeof line, "%s\t%d\t%ld\t%llu\t%llu\t%s\t%llu\t%llu\t", log->tier,
                     log->pid, side_log_tid(), (unsigned long long)e->id,
                     (unsigned long long)e->parent_id, label, (unsigned long long)e->start_ns,
                     (unsigned long long)e->end_ns);
    unsigned nested = e->nested_count < SIDE_LOG_MAX_NESTED ? e->nested_count : SIDE_LOG_MAX_NESTED;
    if (nested == 0)
        n += snprintf(line + n, sizeof line - (size_t)n, "-");
    for (unsigned i = 0; i < nested; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, "%s%llu", i ? "," : "",
                      (unsigned long long)e->nested_ids[i]);
    n += snprintf(line + n, sizeof line - (size_t)n, "\n");

    if (slot->len + (size_t)n > slot->cap) {
        size_t cap = slot->cap ? slot->cap * 2 : 64 * 1024;
        while (cap < slot->len + (size_t)n)
            cap *= 2;
        char *grown = realloc(slot->buf, cap);
        if (!grown) {
            slot->dropped++;
            return;
        }
        slot->buf = grown;
        slot->cap = cap;
    }
    memcpy(slot->buf + slot->len, line, (size_t)n);
    slot->len += (size_t)n;
    if (slot->len >= SIDE_LOG_FLUSH_BYTES)
        side_log_flush_slot(log, slot);
}

int side_log_close(struct side_log *log)
{
    if (!log)
        return 0;
    unsigned long long dropped = 0;
    for (unsigned i = 0; i < log->slot_count; i++) {
        side_log_flush_slot(log, &log->slots[i]);
        dropped += log->slots[i].dropped;
        free(log->slots[i].buf);
    }
    if (close(log->fd) < 0)
        log->write_failed = 1;
    int rc = (log->write_failed || dropped) ? -1 : 0;
    if (dropped)
        fprintf(stderr, "side log (%s): %llu lines dropped for lack of memory\n", log->tier,
                dropped);
    free(log->slots);
    free(log);
    return rc;
}
