/* run_failures.c - counts a run's failed requests per label and reason,
 * and words them (run_failures.h). Must never print: run_cli.c says it. */
#include "run_failures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RUN_FAILURES_NAMED 8 /* labels named in the line; the rest summed */

static int run_failures_slot(struct run_failures *f, uint32_t label, size_t *slot)
{
    for (size_t i = 0; i < f->nlabels; i++)
        if (f->labels[i] == label) {
            *slot = i;
            return 0;
        }
    if (f->nlabels == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 8;
        uint32_t *l = realloc(f->labels, cap * sizeof *l);
        if (!l)
            return -1;
        f->labels = l;
        uint64_t(*c)[REPLAY_NFAIL] = realloc(f->counts, cap * sizeof *c);
        if (!c)
            return -1;
        f->counts = c;
        f->cap = cap;
    }
    f->labels[f->nlabels] = label;
    memset(f->counts[f->nlabels], 0, sizeof f->counts[0]);
    *slot = f->nlabels++;
    return 0;
}

int run_failures_add(struct run_failures *f, const struct replay_sample *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        f->sent++;
        if (s[i].ok)
            continue;
        size_t slot;
        if (run_failures_slot(f, s[i].label, &slot))
            return -1;
        f->failed++;
        f->counts[slot][s[i].fail < REPLAY_NFAIL ? s[i].fail : REPLAY_FAIL_DRIVER]++;
    }
    return 0;
}

int run_failures_parse_max(const char *arg, double *max, int *pct)
{
    size_t n = strlen(arg);
    char *end;
    *pct = n && arg[n - 1] == '%';
    *max = strtod(arg, &end);
    if (end == arg || end != arg + n - (size_t)*pct || !(*max >= 0))
        return -1;
    return (*pct ? *max > 100 : *max > 1e12 || *max != floor(*max)) ? -1 : 0;
}

int run_failures_exceed(const struct run_failures *f, double max, int pct)
{
    if (pct)
        return (double)f->failed > max / 100.0 * (double)f->sent;
    return (double)f->failed > max;
}

static uint64_t run_failures_of(const struct run_failures *f, size_t slot)
{
    uint64_t n = 0;
    for (int k = 0; k < REPLAY_NFAIL; k++)
        n += f->counts[slot][k];
    return n;
}

/* The label slots by failures, most first (ties: first seen first). */
static size_t *run_failures_order(const struct run_failures *f)
{
    size_t *o = malloc((f->nlabels ? f->nlabels : 1) * sizeof *o);
    for (size_t i = 0; o && i < f->nlabels; i++) {
        size_t j = i;
        for (; j > 0 && run_failures_of(f, o[j - 1]) < run_failures_of(f, i); j--)
            o[j] = o[j - 1];
        o[j] = i;
    }
    return o;
}

char *run_failures_text(const struct run_failures *f, const struct plan *p)
{
    if (!f->failed)
        return NULL;
    size_t *order = run_failures_order(f);
    char *text = NULL;
    size_t len = 0;
    FILE *m = order ? open_memstream(&text, &len) : NULL;
    if (!m) {
        free(order);
        return NULL;
    }
    fprintf(m, "%llu of %llu request%s failed (%.1f%%):", (unsigned long long)f->failed,
            (unsigned long long)f->sent, f->sent == 1 ? "" : "s",
            100.0 * (double)f->failed / (double)f->sent);
    uint64_t rest = 0;
    for (size_t i = 0; i < f->nlabels; i++) {
        size_t slot = order[i];
        if (i >= RUN_FAILURES_NAMED) {
            rest += run_failures_of(f, slot);
            continue;
        }
        const char *label = plan_string(p, f->labels[slot]);
        fprintf(m, "%s %s %llu (", i ? "," : "", label && *label ? label : "(unlabelled)",
                (unsigned long long)run_failures_of(f, slot));
        int first = 1;
        for (int k = 0; k < REPLAY_NFAIL; k++)
            if (f->counts[slot][k]) {
                fprintf(m, "%s%s %llu", first ? "" : ", ", replay_fail_name((unsigned)k),
                        (unsigned long long)f->counts[slot][k]);
                first = 0;
            }
        fputc(')', m);
    }
    if (rest)
        fprintf(m, ", %zu more labels %llu", f->nlabels - RUN_FAILURES_NAMED,
                (unsigned long long)rest);
    free(order);
    if (fclose(m)) {
        free(text);
        return NULL;
    }
    return text;
}

void run_failures_free(struct run_failures *f)
{
    free(f->labels);
    free(f->counts);
    memset(f, 0, sizeof *f);
}
