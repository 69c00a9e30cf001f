/* deps_analyze.c - dependency extraction (CloudProphet §3.2, Figure 3) in one
 * streaming pass over the merged trace events (deps_input.c); the driver of
 * analyze_run (preplay_analyze.h):
 *
 *  - connection ends and their pairing: deps_end.c
 *  - call matching (stream byte offsets) and clock skew: deps_call.c
 *  - the block lifecycle, the held-block heap and the schedule: deps_block.c
 *  - the event handlers, model violations: deps_on.c
 *  - the shared state: deps_state.h, deps_state.c
 *
 * Here: opening the input and the plan, the event loop with its periodic
 * (and final) checkpoints, the components' worker counts, coverage, the
 * warnings and the plan's summary. Never writes a plan when the run failed
 * (it is aborted); messages go to the options' warnings file only. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deps_block.h"
#include "out_file.h"
#include "deps_call.h"
#include "deps_end.h"
#include "deps_on.h"
#include "deps_outside.h"
#include "deps_state.h"
#include "preplay_analyze.h"

static int deps_analyze_components(struct deps_state *s)
{
    s->procs = calloc(s->in.nfiles, sizeof *s->procs);
    s->comps = calloc(s->in.nfiles, sizeof *s->comps);
    if (!s->procs || !s->comps)
        return -1;
    for (uint32_t i = 0; i < s->in.nfiles; i++) {
        const struct trace_header *h = s->in.files[i].hdr;
        char name[64];
        if (h->component[0]) {
            snprintf(name, sizeof name, "%s", h->component);
        } else { /* no -c given: the executable's base name */
            const char *b = strrchr(h->exe, '/');
            snprintf(name, sizeof name, "%s", b ? b + 1 : h->exe);
        }
        uint32_t host = s->in.files[i].host, c;
        for (c = 0; c < s->ncomps; c++)
            if (!strcmp(s->comps[c].name, name) && s->comps[c].host == host)
                break;
        if (c == s->ncomps) {
            struct deps_component *x = &s->comps[s->ncomps++];
            memcpy(x->name, name, sizeof x->name);
            x->host = host;
            x->pc.name = deps_state_literal(s, name);
            x->pc.host = deps_state_literal(s, h->host);
            x->plan_id = plan_writer_component(s->w, &x->pc);
            if (x->plan_id == UINT32_MAX) {
                deps_state_fail(s, "writing the plan: %s", plan_writer_error(s->w));
                return -1;
            }
        }
        s->procs[i].component = c;
        deps_map_init(&s->procs[i].threads);
        deps_map_init(&s->procs[i].ends);
        deps_map_init(&s->procs[i].pending_opts);
        deps_map_init(&s->procs[i].file_owner);
    }
    return 0;
}

/* At the end, open blocks finish (cut after their last send); ends whose
 * peer did not show up within the grace time (all, at the end) are
 * untraced, which decides their finished blocks and waiting calls. */
static void deps_analyze_settle_ends(struct deps_state *s, int final)
{
    size_t n = 0;
    struct deps_end **v = deps_end_live_snapshot(s, &n);
    for (size_t i = 0; i < n; i++)
        if (final && v[i]->cur)
            deps_block_finish(s, v[i], 1);
    for (size_t i = 0; i < n; i++) {
        struct deps_end *e = v[i];
        if (e->peer == DEPS_PEER_UNKNOWN && (final || s->now_c > e->deadline)) {
            e->peer = DEPS_PEER_UNTRACED;
            deps_call_decide_served(s, e);
        }
    }
    deps_end_live_release(s, v, n);
}

/* At the end, the held blocks: calls waiting for a peer decision were
 * resolved when it was made (deps_call_decide_served); what still waits for
 * a callee never got one, and becomes an external call (unmatched). */
static void deps_analyze_drain_held(struct deps_state *s)
{
    while (s->nheld && !s->failed) {
        struct deps_block *b = s->held[0];
        for (uint32_t i = 0; i < b->ncalls; i++) {
            struct deps_call *c = &b->calls[i];
            if (c->state == DEPS_CALL_WAIT_PEER) { /* every end is decided by now */
                if (deps_call_resolve(s, b, i, 1))
                    b->unresolved--;
            } else if (c->state == DEPS_CALL_WAIT_CALLEE) {
                deps_call_give_up(s, b, c);
                b->unresolved--;
            }
        }
        if (b->unresolved) { /* cannot happen: every call is done; never loop */
            deps_state_fail(s, "internal error: block with %d unresolved calls at the end",
                            b->unresolved);
            break;
        }
        deps_block_emit(s, b); /* leaves the heap (its cascade may empty more) */
    }
}

/* Periodic (and final) decisions: peers that did not show up within the
 * grace time are untraced; held blocks waiting for them resolve; the
 * schedule is flushed up to the oldest request still in flight. */
static void deps_analyze_checkpoint(struct deps_state *s, int final)
{
    /* a request read later may have arrived up to DEPS_QUEUED_MAX_NS
     * before the events seen so far (deps_block_start) */
    uint64_t horizon = final                           ? UINT64_MAX
                       : s->now_c > DEPS_QUEUED_MAX_NS ? s->now_c - DEPS_QUEUED_MAX_NS
                                                       : 0;
    if (final) {
        for (uint32_t f = 0; f < s->in.nfiles && !s->failed; f++)
            for (uint32_t i = 0; i < s->procs[f].nall; i++)
                deps_block_seal_tail(s, s->procs[f].all[i], 1);
    } else {
        deps_block_seal_idle_tails(s, &horizon);
    }
    deps_analyze_settle_ends(s, final);
    if (final) {
        deps_analyze_drain_held(s);
        /* served on traced connections, never claimed by a call */
        s->res->unmatched_bytes += deps_call_unclaimed_bytes(s);
    }
    if (s->nheld && s->held[0]->start_c < horizon)
        horizon = s->held[0]->start_c;
    if (!final) {
        for (struct deps_end *e = s->live.next; e != &s->live; e = e->next) {
            if (e->cur && e->cur->start_c < horizon)
                horizon = e->cur->start_c;
            if (e->served && e->served_min_c < horizon)
                horizon = e->served_min_c;
        }
    }
    deps_block_schedule_flush(s, horizon);
}

static void deps_analyze_progress(struct deps_state *s, int done)
{
    if (!s->opt->progress)
        return;
    uint64_t total = deps_input_total_bytes(&s->in);
    (void)total;
    fprintf(s->opt->progress,
            "\ranalyze: %" PRIu64 " events, %" PRIu64 " blocks, %" PRIu64 " requests%s",
            s->in.events, s->res->blocks, s->res->requests, done ? "\n" : "");
    fflush(s->opt->progress);
}

/* Violations, skew and untraced peers as text (plan summary and stderr). */
static char *deps_analyze_report(struct deps_state *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return NULL;
    for (uint32_t f = 0; f < s->in.nfiles; f++) {
        struct deps_proc *p = &s->procs[f];
        for (uint32_t i = 0; i < p->nall; i++) {
            struct deps_thread *t = p->all[i];
            if (!t->violating)
                continue;
            fprintf(m,
                    "model violation: component %s (pid %u) thread %u switched between open "
                    "requests %u times; %" PRIu64 " events attributed to the connection last "
                    "read (blocks flagged)\n",
                    s->comps[p->component].name, s->in.files[f].hdr->pid, t->tid, t->viol_conns,
                    t->viol_events);
        }
    }
    /* the total correction: the pre-alignment from connection handshakes
     * (deps_input.c) plus the call-pair estimate */
    for (uint32_t i = 0; i < s->nskews; i++) {
        struct deps_skew *k = &s->skews[i];
        const struct deps_input_host *ee = &s->in.hosts[k->callee_host],
                                     *er = &s->in.hosts[k->caller_host];
        fprintf(m,
                "clock skew: host %s runs %+.3f ms from host %s (corrected; %" PRIu64 " call pairs",
                ee->name, (double)(er->corrected_ns - ee->corrected_ns) / 1e6, er->name, k->pairs);
        if (ee->presync_pairs || er->presync_pairs)
            fprintf(m, ", %u connection handshakes",
                    ee->presync_pairs ? ee->presync_pairs : er->presync_pairs);
        fprintf(m, ")\n");
    }
    for (uint32_t h = 0; h < s->in.nhosts; h++) {
        const struct deps_input_host *x = &s->in.hosts[h], *ref = &s->in.hosts[x->presync_ref];
        int reported = 0;
        for (uint32_t i = 0; i < s->nskews; i++)
            reported |= s->skews[i].callee_host == h || s->skews[i].caller_host == h;
        if (x->presync_pairs && !reported)
            fprintf(m,
                    "clock skew: host %s runs %+.3f ms from host %s (corrected; %u connection "
                    "handshakes)\n",
                    x->name, (double)(ref->corrected_ns - x->corrected_ns) / 1e6, ref->name,
                    x->presync_pairs);
    }
    fclose(m);
    return buf;
}

/* Opens the input and the plan (and the --blocks TSV), and names the
 * components. 0, or -1 with the reason in err. */
static int deps_analyze_open(struct deps_state *s, const char *const *inputs, int ninputs,
                             const char *plan_path, char *err, size_t errlen)
{
    const struct analyze_options *opt = s->opt;
    if (deps_input_open(&s->in, inputs, ninputs, opt->salvage, opt->window_ns,
                        opt->max_table_bytes) != 0) {
        snprintf(err, errlen, "%s", s->in.err);
        return -1;
    }
    const struct trace_header *h0 = s->in.files[0].hdr;
    char werr[512];
    s->w = plan_writer_open(plan_path, h0->recording_id, h0->cpu_scores, h0->ncpu_scores, werr,
                            sizeof werr);
    if (!s->w) {
        snprintf(err, errlen, "%s", werr);
        return -1;
    }
    if (opt->blocks_path) { /* never through a planted link (out_file.h) */
        int fd = out_file_create(opt->blocks_path, O_WRONLY, 0644, err, errlen);
        if (fd < 0)
            return -1;
        if (!(s->blocks_out = fdopen(fd, "w"))) {
            snprintf(err, errlen, "%s: cannot write: %s", opt->blocks_path, strerror(errno));
            close(fd);
            return -1;
        }
    }
    if (s->blocks_out) /* the two line kinds' columns (docs/preplay-analyze.md) */
        fputs("# B\tid\tcomponent\tpid\ttid\tstart_ns\tend_ns\tflags\tcallees\tlabel\tworker\t"
              "plan_start_ns\tsockopts\tnodelay_calls\trecv_bytes\tsend_bytes\ttail_ns\n"
              "# R\tblock\tarrival_ns\tsession\tthink_ns\n",
              s->blocks_out);
    if (deps_analyze_components(s) != 0) {
        snprintf(err, errlen, "%s", s->failed ? s->err : "out of memory");
        return -1;
    }
    return 0;
}

/* Every event in merge order, with a checkpoint every DEPS_CHECKPOINT_EVENTS
 * and the final one. 0, or -1 with the reason in err. */
static int deps_analyze_stream(struct deps_state *s, char *err, size_t errlen)
{
    uint32_t file;
    struct deps_queued *q;
    int n = 0;
    while (!s->failed && (n = deps_input_next(&s->in, &file, &q)) > 0) {
        deps_on_event(s, file, q);
        if ((s->in.events & (DEPS_CHECKPOINT_EVENTS - 1)) == 0) {
            deps_analyze_checkpoint(s, 0);
            if ((s->in.events & (DEPS_CHECKPOINT_EVENTS * 16 - 1)) == 0)
                deps_analyze_progress(s, 0);
        }
    }
    if (!s->failed && n < 0) {
        snprintf(err, errlen, "%s", s->in.err);
        return -1;
    }
    if (!s->failed) {
        deps_analyze_checkpoint(s, 1);
        deps_outside_finish(s);
    }
    if (s->failed) {
        snprintf(err, errlen, "%s", s->err);
        return -1;
    }
    s->res->events = s->in.events;
    s->res->late_events = s->in.late;
    return 0;
}

/* What the input says about itself: salvaged traces, and traces recorded
 * with filters, once per set of options (before a "no front end" error,
 * which a filter may be the cause of). */
static void deps_analyze_warn_input(struct deps_state *s, FILE *warnings)
{
    for (uint32_t f = 0; f < s->in.nskipped && warnings; f++)
        fprintf(warnings, "preplay analyze: warning: skipped %s (--salvage)\n", s->in.skipped[f]);
    for (uint32_t f = 0; f < s->in.nfiles; f++) {
        const char *w = trace_reader_warning(s->in.files[f].reader);
        if (w && warnings)
            fprintf(warnings, "preplay analyze: salvaged: %s\n", w);
    }
    for (uint32_t f = 0; f < s->in.nfiles && warnings; f++) {
        const char *o = s->in.files[f].hdr->record_options;
        if (!strstr(o, "--only") && !strstr(o, "--port") && !strstr(o, "--path-prefix"))
            continue;
        uint32_t same = 0, seen = 0;
        for (uint32_t g = 0; g < s->in.nfiles; g++)
            if (!strcmp(s->in.files[g].hdr->record_options, o)) {
                same++;
                seen |= g < f;
            }
        if (!seen) {
            char more[48] = "";
            if (same > 1)
                snprintf(more, sizeof more, " (and %u more traces)", same - 1);
            fprintf(warnings,
                    "preplay analyze: %s%s was recorded with '%s': what those options left out "
                    "is not in the plan\n",
                    s->in.files[f].path, more, o);
        }
    }
}

/* The components' worker model, now that every serving thread is known.
 * 0, or -1 with the reason in err. */
static int deps_analyze_workers(struct deps_state *s, char *err, size_t errlen)
{
    for (uint32_t c = 0; c < s->ncomps; c++) {
        struct deps_component *x = &s->comps[c];
        x->pc.prefork = x->serving_procs > 1 && x->max_threads_per_proc == 1;
        x->pc.workers = x->pc.prefork ? x->serving_procs : x->serving_threads;
        /* a thread-per-connection server may have served by more threads
         * than a replayer may start (PLAN_MAX_WORKERS, as --workers) */
        if (x->pc.workers > PLAN_MAX_WORKERS)
            x->pc.workers = PLAN_MAX_WORKERS;
        x->pc.event_loop = x->loop_threads > 0;
        if (plan_writer_update_component(s->w, x->plan_id, &x->pc) != 0) {
            snprintf(err, errlen, "writing the plan: %s", plan_writer_error(s->w));
            return -1;
        }
    }
    return 0;
}

/* Coverage (docs/preplay-analyze.md): covered events over the serving
 * threads' windows, and over all resource events. */
static void deps_analyze_coverage(struct deps_state *s)
{
    struct analyze_result *res = s->res;
    for (uint32_t f = 0; f < s->in.nfiles; f++)
        for (uint32_t i = 0; i < s->procs[f].nall; i++) {
            const struct deps_thread *t = s->procs[f].all[i];
            if (t->serving && t->win_end > t->win_first)
                res->window_events += t->win_end - t->win_first;
        }
    res->coverage_all =
        res->resource_events ? (double)res->covered_events / (double)res->resource_events : 1.0;
    res->coverage = res->window_events ? (double)res->covered_events / (double)res->window_events
                                       : res->coverage_all;
    if (res->coverage > 1.0) /* events of a request another thread read (flagged) */
        res->coverage = 1.0;
}

/* One line per event-loop thread (deps_on.c): not a violation, but how its
 * events were attributed, and those no request could be named for. */
static void deps_analyze_warn_loops(struct deps_state *s, FILE *warnings)
{
    for (uint32_t f = 0; f < s->in.nfiles; f++) {
        struct deps_proc *p = &s->procs[f];
        for (uint32_t i = 0; i < p->nall; i++) {
            const struct deps_thread *t = p->all[i];
            if (!t->event_loop)
                continue;
            fprintf(warnings,
                    "preplay analyze: component %s (pid %u) thread %u is an event loop (took up "
                    "another open request %" PRIu64 " times): its events went to the request "
                    "whose connection or file they touched, the rest to the request it handled "
                    "last; %" PRIu64 " events named no request\n",
                    s->comps[p->component].name, s->in.files[f].hdr->pid, t->tid, t->loop_switches,
                    t->loop_unattributed);
        }
    }
}

#define DEPS_ANALYZE_PEERS 8

static int deps_analyze_cmp_peer(const void *a, const void *b)
{
    const struct deps_external_peer *x = *(const struct deps_external_peer *const *)a;
    const struct deps_external_peer *y = *(const struct deps_external_peer *const *)b;
    if (x->calls != y->calls)
        return x->calls < y->calls ? 1 : -1;
    return strcmp(x->host, y->host);
}

/* The untraced peers whose connections began before their trace did, so
 * that the tracer could not tell a DB server by its greeting (a peer the
 * trace saw connected to is no DB server: tracer/preload/db_greeting.c):
 * only they get the --db-port/--db-socket hint. v: n peers, sorted. */
static void deps_analyze_warn_unsure(const struct deps_external_peer **v, size_t n, FILE *warnings)
{
    size_t named = 0, more = 0;
    for (size_t i = 0; i < n; i++) {
        if (!v[i]->unsure)
            continue;
        if (named == DEPS_ANALYZE_PEERS) {
            more++;
            continue;
        }
        fprintf(warnings, "%s %s", named ? "," : "preplay analyze: the connections to", v[i]->host);
        named++;
    }
    if (!named)
        return;
    if (more)
        fprintf(warnings, " and %zu more peers", more);
    fprintf(warnings, " began before their trace did, so the tracer could not tell a DB server by "
                      "its greeting there: if one is a MySQL/MariaDB server, record with --db-port "
                      "PORT or --db-socket NAME\n");
}

/* The peers of the plan's external calls (the summary line's "N external
 * calls"), most called first, at most DEPS_ANALYZE_PEERS of them. */
static void deps_analyze_warn_externals(struct deps_state *s, FILE *warnings)
{
    const struct deps_map *m = &s->external_peers;
    if (!m->count)
        return;
    const struct deps_external_peer **v = calloc(m->count, sizeof *v);
    if (!v)
        return;
    size_t n = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].value)
            v[n++] = m->slots[i].value;
    qsort(v, n, sizeof *v, deps_analyze_cmp_peer);
    fprintf(warnings, "preplay analyze: the %" PRIu64 " external calls went to", s->res->externals);
    for (size_t i = 0; i < n && i < DEPS_ANALYZE_PEERS; i++)
        fprintf(warnings, "%s %s (%" PRIu64 ")", i ? "," : "", v[i]->host, v[i]->calls);
    if (n > DEPS_ANALYZE_PEERS)
        fprintf(warnings, " and %zu more peers", n - DEPS_ANALYZE_PEERS);
    fprintf(warnings, "\n");
    deps_analyze_warn_unsure(v, n, warnings);
    free(v);
}

/* What the run found about the recording: its clock going backwards, late
 * events, losses, untraced peers, event loops, then the report
 * (violations, skew). */
static void deps_analyze_warn_run(struct deps_state *s, const char *report, FILE *warnings)
{
    if (!warnings)
        return;
    if (s->in.backwards)
        fprintf(warnings,
                "preplay analyze: %" PRIu64 " events ended more than %u ms before an earlier "
                "event of their own thread (worst %.3f ms, thread %u in %s): the recording's "
                "clock went backwards there (see what preplay record or preplay collect printed "
                "when it stopped); they "
                "were taken as ending with that earlier event\n",
                s->in.backwards, DEPS_BACKWARDS_NS / 1000000u,
                (double)s->in.backwards_worst_ns / 1e6, s->in.backwards_tid,
                s->in.files[s->in.backwards_file].path);
    if (s->in.late)
        fprintf(warnings,
                "preplay analyze: %" PRIu64 " events came after later events of other threads "
                "had been analysed (their file held them back beyond the merge window of at "
                "most %" PRIu64 " ms); they were analysed out of time order (--window-ms raises "
                "the window)\n",
                s->in.late, s->in.window_ns / 1000000u);
    if (s->lost)
        fprintf(warnings,
                "preplay analyze: the recording lost %" PRIu64 " events in %u trace file%s "
                "(most: %" PRIu64 " in %s, %s): requests served around the losses are "
                "incomplete or missing in the plan\n",
                s->lost, s->lost_files, s->lost_files == 1 ? "" : "s", s->lost_worst,
                s->in.files[s->lost_worst_file].path, trace_loss_reason_name(s->lost_worst_reason));
    if (s->untraced_calls)
        fprintf(warnings,
                "preplay analyze: %" PRIu64 " calls went to untraced peers and became external "
                "calls (if a peer is a tier you meant to trace, its trace is missing)\n",
                s->untraced_calls);
    deps_analyze_warn_loops(s, warnings);
    deps_analyze_warn_externals(s, warnings);
    if (report && *report)
        fprintf(warnings, "%s", report);
}

/* The summary, the last progress line, and the plan closed (complete on
 * disk). 0, or -1 with the reason in err. */
static int deps_analyze_close(struct deps_state *s, const char *report, char *err, size_t errlen)
{
    const struct analyze_result *res = s->res;
    if (plan_writer_summary(s->w, res->coverage, res->unmatched_bytes, res->violations,
                            report ? report : "") != 0) {
        snprintf(err, errlen, "writing the plan: %s", plan_writer_error(s->w));
        return -1;
    }
    deps_analyze_progress(s, 1);
    struct plan_writer *w = s->w;
    s->w = NULL;
    return plan_writer_close(w, err, errlen);
}

int analyze_run(const char *const *inputs, int ninputs, const char *plan_path,
                const struct analyze_options *opt_in, struct analyze_result *res, char *err,
                size_t errlen)
{
    struct analyze_options opt = *opt_in;
    if (!opt.window_ns)
        opt.window_ns = 200000000ull;
    if (!opt.grace_ns)
        opt.grace_ns = 2000000000ull;
    memset(res, 0, sizeof *res);
    struct deps_state *s = deps_state_new(&opt, res);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = -1;
    char *report = NULL;
    if (deps_analyze_open(s, inputs, ninputs, plan_path, err, errlen) != 0 ||
        deps_analyze_stream(s, err, errlen) != 0)
        goto out;
    deps_analyze_warn_input(s, opt.warnings);
    if (!res->requests) {
        snprintf(err, errlen,
                 "no front end: no traced component answered a request from an untraced "
                 "client (%" PRIu64 " blocks, %" PRIu64 " events in %u trace files)",
                 res->blocks, res->events, s->in.nfiles);
        goto out;
    }
    if (deps_analyze_workers(s, err, errlen) != 0)
        goto out;
    deps_analyze_coverage(s);
    report = deps_analyze_report(s);
    deps_analyze_warn_run(s, report, opt.warnings);
    if (deps_analyze_close(s, report, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    free(report);
    deps_state_free(s);
    return rc;
}
