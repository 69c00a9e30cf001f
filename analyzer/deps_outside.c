/* deps_outside.c - work outside requests: the events and CPU time of traced
 * threads that no block took, by where the thread was (analyze_outside_kind
 * in preplay_analyze.h): after a block and before its next accept or
 * request (post-response), between an accept and the request's first read
 * (accept path), a worker before its first request (idle if it existed
 * before the first request, spawned under load otherwise), threads that
 * never served (background), in a request but taken by no block
 * (unattributed), before the first request (start-up) and after
 * a thread's last block or, for one that never served, after the last
 * block anywhere finished (shutdown). A thread's work is held per thread until
 * its kind is known, so nothing here grows with the recording. Counting
 * only: it never changes what a block holds. */
#include <inttypes.h>
#include <stdio.h>

#include "deps_outside.h"

static void deps_outside_add(struct deps_state *s, int kind, uint64_t events, uint64_t cpu_ns)
{
    s->res->outside.events[kind] += events;
    s->res->outside.cpu_ns[kind] += cpu_ns;
}

/* A block finished since t's recent work: it is no longer the last. */
static void deps_outside_age(const struct deps_state *s, struct deps_thread *t)
{
    if (t->out_epoch == s->finish_epoch)
        return;
    t->out_epoch = s->finish_epoch;
    t->out_events += t->out_recent_events;
    t->out_cpu_ns += t->out_recent_cpu_ns;
    t->out_recent_events = t->out_recent_cpu_ns = 0;
}

void deps_outside_note(struct deps_state *s, struct deps_thread *t, uint64_t events,
                       uint64_t cpu_ns, int attributed, int in_request)
{
    if (attributed)
        return;
    if (!s->have_origin) {
        deps_outside_add(s, ANALYZE_OUT_STARTUP, events, cpu_ns);
        return;
    }
    if (in_request) {
        deps_outside_add(s, ANALYZE_OUT_UNNAMED, events, cpu_ns);
        return;
    }
    if (t->serving && t->accepting) {
        deps_outside_add(s, ANALYZE_OUT_ACCEPT, events, cpu_ns);
        return;
    }
    deps_outside_age(s, t);
    t->out_recent_events += events; /* post-response or shutdown; idle, spawn or background */
    t->out_recent_cpu_ns += cpu_ns;
}

void deps_outside_accept(struct deps_thread *t)
{
    t->accepting = 1;
}

void deps_outside_block_start(struct deps_state *s, struct deps_thread *t)
{
    int kind =
        t->serving ? ANALYZE_OUT_POST : (t->born_under_load ? ANALYZE_OUT_SPAWN : ANALYZE_OUT_IDLE);
    deps_outside_add(s, kind, t->out_events + t->out_recent_events,
                     t->out_cpu_ns + t->out_recent_cpu_ns);
    t->out_events = t->out_cpu_ns = t->out_recent_events = t->out_recent_cpu_ns = 0;
    t->accepting = 0;
}

void deps_outside_finish(struct deps_state *s)
{
    for (uint32_t f = 0; f < s->in.nfiles; f++)
        for (uint32_t i = 0; i < s->procs[f].nall; i++) {
            struct deps_thread *t = s->procs[f].all[i];
            deps_outside_age(s, t);
            deps_outside_add(s, t->serving ? ANALYZE_OUT_SHUTDOWN : ANALYZE_OUT_BACKGROUND,
                             t->out_events, t->out_cpu_ns);
            deps_outside_add(s, ANALYZE_OUT_SHUTDOWN, t->out_recent_events, t->out_recent_cpu_ns);
            t->out_events = t->out_cpu_ns = t->out_recent_events = t->out_recent_cpu_ns = 0;
        }
}

void analyze_outside_format(const struct analyze_result *r, char *buf, size_t cap)
{
    const struct analyze_outside *o = &r->outside;
    uint64_t ev = 0, cpu = 0;
    for (int k = 0; k < ANALYZE_OUT_STARTUP; k++) {
        ev += o->events[k];
        cpu += o->cpu_ns[k];
    }
    double all_cpu = (double)(cpu + r->in_cpu_ns), all_ev = (double)(ev + r->covered_events);
    snprintf(buf, cap,
             "outside requests: %.1f ms CPU (%.1f%%) in %" PRIu64 " events (%.1f%%): "
             "post-response %.1f ms/%" PRIu64 ", accept %.1f ms/%" PRIu64
             ", idle workers %.1f ms/%" PRIu64 ", spawn %.1f ms/%" PRIu64
             ", background %.1f ms/%" PRIu64 ", unattributed %.1f ms/%" PRIu64
             "; in requests %.1f ms CPU, of it post-response "
             "tails %.1f ms/%" PRIu64 " (replayed after the response); not counted: start-up "
             "%.1f ms/%" PRIu64 ", shutdown %.1f ms/%" PRIu64,
             (double)cpu / 1e6, all_cpu > 0 ? 100.0 * (double)cpu / all_cpu : 0.0, ev,
             all_ev > 0 ? 100.0 * (double)ev / all_ev : 0.0,
             (double)o->cpu_ns[ANALYZE_OUT_POST] / 1e6, o->events[ANALYZE_OUT_POST],
             (double)o->cpu_ns[ANALYZE_OUT_ACCEPT] / 1e6, o->events[ANALYZE_OUT_ACCEPT],
             (double)o->cpu_ns[ANALYZE_OUT_IDLE] / 1e6, o->events[ANALYZE_OUT_IDLE],
             (double)o->cpu_ns[ANALYZE_OUT_SPAWN] / 1e6, o->events[ANALYZE_OUT_SPAWN],
             (double)o->cpu_ns[ANALYZE_OUT_BACKGROUND] / 1e6, o->events[ANALYZE_OUT_BACKGROUND],
             (double)o->cpu_ns[ANALYZE_OUT_UNNAMED] / 1e6, o->events[ANALYZE_OUT_UNNAMED],
             (double)r->in_cpu_ns / 1e6, (double)r->tail_cpu_ns / 1e6, r->tail_events,
             (double)o->cpu_ns[ANALYZE_OUT_STARTUP] / 1e6, o->events[ANALYZE_OUT_STARTUP],
             (double)o->cpu_ns[ANALYZE_OUT_SHUTDOWN] / 1e6, o->events[ANALYZE_OUT_SHUTDOWN]);
}
