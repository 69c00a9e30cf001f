/* trace_event.c - names of event types, operations and flags, for tools
 * that print events (preplay dump/info) and for error messages. The names
 * are part of the JSON output contract (docs/preplay-dump.md): never rename
 * one, only add. */
#include "trace_event.h"

#include <stddef.h>

static const char *const trace_type_names[TRACE_EV_TYPE_COUNT] = {
    [TRACE_EV_NONE] = "none",
    [TRACE_EV_THREAD_START] = "thread_start",
    [TRACE_EV_THREAD_EXIT] = "thread_exit",
    [TRACE_EV_CPU] = "cpu",
    [TRACE_EV_FILE] = "file",
    [TRACE_EV_NET] = "net",
    [TRACE_EV_CONN] = "conn",
    [TRACE_EV_SOCKOPT] = "sockopt",
    [TRACE_EV_LOCK] = "lock",
    [TRACE_EV_DB] = "db",
    [TRACE_EV_LABEL] = "label",
    [TRACE_EV_LOSS] = "loss",
    [TRACE_EV_STRING] = "string",
    [TRACE_EV_STACK] = "stack",
    [TRACE_EV_CONTROL] = "control",
    [TRACE_EV_COUNTERS] = "counters",
};

const char *trace_event_type_name(unsigned type)
{
    return type < TRACE_EV_TYPE_COUNT ? trace_type_names[type] : "unknown";
}

static const char *const trace_file_ops[] = {
    NULL,     "open",     "close",     "read",       "write",    "pread",
    "pwrite", "fsync",    "fdatasync", "dup",        "sendfile", "copy_range",
    "seek",   "truncate", "fallocate", "sync_range", "syncfs"};
static const char *const trace_net_ops[] = {NULL, "send", "recv"};
static const char *const trace_conn_ops[] = {NULL,       "accept", "connect", "ident",
                                             "shutdown", "close",  "listen"};
static const char *const trace_lock_ops[] = {NULL, "acquire", "try", "timed", "release"};
static const char *const trace_db_ops[] = {NULL,      "connect", "query", "prepare",
                                           "execute", "fetch",   "close"};
static const char *const trace_control_ops[] = {NULL,   "tracing_on", "tracing_off", "fork",
                                                "exec", "ring_wrap",  "locks_folded"};

static const char *const trace_counters_ops[] = {NULL, "window"};

#define TRACE_OP_NAME(arr, op) ((op) < sizeof(arr) / sizeof(arr[0]) ? arr[op] : NULL)

const char *trace_event_op_name(unsigned type, unsigned op)
{
    switch (type) {
    case TRACE_EV_FILE:
        return TRACE_OP_NAME(trace_file_ops, op);
    case TRACE_EV_NET:
        return TRACE_OP_NAME(trace_net_ops, op);
    case TRACE_EV_CONN:
        return TRACE_OP_NAME(trace_conn_ops, op);
    case TRACE_EV_LOCK:
        return TRACE_OP_NAME(trace_lock_ops, op);
    case TRACE_EV_DB:
        return TRACE_OP_NAME(trace_db_ops, op);
    case TRACE_EV_CONTROL:
        return TRACE_OP_NAME(trace_control_ops, op);
    case TRACE_EV_COUNTERS:
        return TRACE_OP_NAME(trace_counters_ops, op);
    default:
        return NULL;
    }
}

static const char *const trace_flag_names[] = {"error",         "nonblock",  "stdio", "msg_more",
                                               "cpu_estimated", "after_cpu", "cut"};

static const char *const trace_loss_reasons[] = {"?",       "buffer_full",   "ring_overwrite",
                                                 "salvage", "signal_nested", "no_ring"};

const char *trace_loss_reason_name(unsigned reason)
{
    return reason < sizeof trace_loss_reasons / sizeof trace_loss_reasons[0]
               ? trace_loss_reasons[reason]
               : "?";
}

const char *trace_event_flag_name(unsigned bit)
{
    return bit < sizeof trace_flag_names / sizeof trace_flag_names[0] ? trace_flag_names[bit]
                                                                      : NULL;
}

const char *trace_db_dialect_name(unsigned dialect)
{
    return dialect == TRACE_DB_MYSQL        ? "mysql"
           : dialect == TRACE_DB_POSTGRESQL ? "postgresql"
                                            : "?";
}
