/* fuzz_duet_reader.c - libFuzzer target for the duet.json reader
 * (duet_read, formats/duet_reader.h) that `preplay compare` uses on files
 * from other machines, and compare's loading, matching and printing of a
 * duet file on top of it (compare_input_load, compare_duet_print and
 * compare_duet_json): any byte string, through a memfd since the readers
 * take a path. They must never crash, hang or read out of bounds; a
 * refusal must say why; a file they accept must keep the reader's
 * promises: every ratio finite within the limits, ci_low <= gms <=
 * ci_high, as many run gms as runs, equal agreeing with the interval
 * (up to the 9-digit rounding), every label findable by its name. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"
#include "duet_reader.h"
#include "fuzz_input_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int fuzz_ratio_ok(double x)
{
    return isfinite(x) && x >= 1 / DUET_MAX_RATIO && x <= DUET_MAX_RATIO;
}

static void fuzz_check_metric(const struct duet_file *df, const struct duet_metric_read *m)
{
    if (!m->present) {
        if (!m->skipped || duet_verdict(m))
            abort();
        return;
    }
    if (!fuzz_ratio_ok(m->gms) || !fuzz_ratio_ok(m->ci_low) || !fuzz_ratio_ok(m->ci_high) ||
        !(m->ci_low <= m->gms && m->gms <= m->ci_high) || m->runs != df->runs ||
        m->iterations < m->runs || m->iterations > df->runs * df->iterations || !duet_verdict(m))
        abort();
    if (m->equal != (m->ci_low <= 1 && m->ci_high >= 1) && fabs(m->ci_low - 1) > DUET_ROUNDING &&
        fabs(m->ci_high - 1) > DUET_ROUNDING)
        abort();
    for (long r = 0; r < m->runs; r++)
        if (!fuzz_ratio_ok(m->run_gms[r]))
            abort();
}

static void fuzz_check_duet(const char *path)
{
    char err[512] = "";
    struct duet_file df;
    if (duet_read(path, &df, err, sizeof err)) {
        if (!err[0] || strchr(err, '\n'))
            abort(); /* a refusal says why, on one line */
        return;
    }
    if (df.runs < 2 || (unsigned long)df.runs > DUET_MAX_RUNS || df.iterations < 1 ||
        df.nlabels > DUET_MAX_LABELS || df.nskipped > DUET_MAX_LABELS)
        abort();
    fuzz_check_metric(&df, &df.overall);
    for (size_t i = 0; i < df.nlabels; i++) {
        if (duet_file_label(&df, df.labels[i].name) != &df.labels[i])
            abort();
        fuzz_check_metric(&df, &df.labels[i].m);
    }
    duet_file_free(&df);
}

/* compare on top: the file loaded as its kind, matched
 * (alone: no A/A context), printed and turned into JSON. */
static void fuzz_check_compare(const char *path)
{
    char err[COMPARE_ERR_LEN] = "";
    struct compare_run run;
    struct compare_duet d[2];
    struct compare_regress reg;
    enum compare_input_kind kind;
    if (compare_input_load(path, &run, &d[0], &reg, &kind, err, sizeof err)) {
        if (!err[0])
            abort();
        return;
    }
    if (kind == COMPARE_INPUT_REGRESS)
        compare_regress_free(&reg);
    if (kind != COMPARE_INPUT_DUET) {
        if (kind == COMPARE_INPUT_RESULTS)
            compare_run_free(&run);
        return;
    }
    size_t n = 1;
    if (compare_duet_match(d, n, err, sizeof err))
        abort(); /* one file never conflicts with itself */
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (out) {
        compare_duet_print(out, d, n);
        fclose(out);
    }
    free(buf);
    json_decref(compare_duet_json(d, n));
    compare_duet_free(&d[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_input_file(data, size, "fuzz_duet", path, sizeof path);
    if (fd < 0)
        return 0;
    fuzz_check_duet(path);
    fuzz_check_compare(path);
    close(fd);
    return 0;
}
