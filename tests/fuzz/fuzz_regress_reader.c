/* fuzz_regress_reader.c - libFuzzer target for the regress.json reader
 * (regress_file_read, formats/regress_reader.h) that `preplay compare`
 * uses on files from other machines, and compare's loading, printing and
 * JSON of a regress file on top of it (compare_input_load,
 * compare_regress_print, compare_regress_json): any byte string, through a
 * memfd since the readers take a path. They must never crash, hang or
 * read out of bounds; a refusal must say why on one line; a file they
 * accept must keep the reader's promises: counts within the limits, every
 * flagged counter with its levels, its violating windows increasing and
 * inside the target, its severity their share, its values null or >= 0. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"
#include "fuzz_input_file.h"
#include "regress_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check_flag(const struct regress_file *rf, const struct regress_file_flag *f)
{
    if (!f->level || f->level != regress_file_level(rf, f->counter) ||
        f->nviolating != f->windows_up + f->windows_down || f->nviolating > rf->target.windows ||
        f->votes < 1 || (size_t)f->votes > rf->nbaselines ||
        fabs(f->severity - (double)f->nviolating / (double)rf->target.windows) > REGRESS_ROUNDING)
        abort();
    for (size_t i = 0; i < f->nviolating; i++)
        if (f->violating[i] >= rf->target.windows || (i && f->violating[i] <= f->violating[i - 1]))
            abort();
    if (f->target_values && f->nvalues != rf->target.windows)
        abort();
    for (size_t i = 0; f->target_values && i < f->nvalues; i++)
        if (!(isnan(f->target_values[i]) ||
              (isfinite(f->target_values[i]) && f->target_values[i] >= 0)))
            abort();
    const struct regress_file_level *l = f->level;
    if (!isnan(l->min) && !(l->min <= l->median && l->median <= l->max))
        abort();
}

static void fuzz_check_regress(const char *path)
{
    char err[512] = "";
    struct regress_file rf;
    if (regress_file_read(path, &rf, err, sizeof err)) {
        if (!err[0] || strchr(err, '\n'))
            abort(); /* a refusal says why, on one line */
        return;
    }
    if (!rf.nbaselines || rf.nbaselines > REGRESS_MAX_BASELINES ||
        rf.nlevels > REGRESS_MAX_COUNTERS || rf.nflagged > REGRESS_MAX_COUNTERS ||
        rf.nrules > REGRESS_MAX_RULES || rf.rules_total < rf.nrules || !rf.target.windows ||
        rf.target.windows > REGRESS_MAX_WINDOWS)
        abort();
    for (size_t i = 0; i < rf.nflagged; i++) {
        fuzz_check_flag(&rf, &rf.flagged[i]);
        if (i && rf.flagged[i].severity > rf.flagged[i - 1].severity)
            abort();
    }
    for (size_t i = 0; i < rf.nrules; i++) {
        const struct regress_file_rule *r = &rf.rules[i];
        if (r->model < 0 || (size_t)r->model >= rf.nbaselines || !r->npremise ||
            r->npremise >= REGRESS_MAX_LEN || !regress_file_level(&rf, r->consequent.counter))
            abort();
    }
    regress_file_free(&rf);
}

/* compare on top: the file loaded as its kind, printed and turned into JSON. */
static void fuzz_check_compare(const char *path)
{
    char err[COMPARE_ERR_LEN] = "";
    struct compare_run run;
    struct compare_duet duet;
    struct compare_regress reg;
    enum compare_input_kind kind;
    if (compare_input_load(path, &run, &duet, &reg, &kind, err, sizeof err)) {
        if (!err[0])
            abort();
        return;
    }
    if (kind != COMPARE_INPUT_REGRESS) {
        if (kind == COMPARE_INPUT_DUET)
            compare_duet_free(&duet);
        else
            compare_run_free(&run);
        return;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    if (out) {
        compare_regress_print(out, &reg, 1);
        fclose(out);
    }
    free(buf);
    json_decref(compare_regress_json(&reg, 1));
    compare_regress_free(&reg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_input_file(data, size, "fuzz_regress", path, sizeof path);
    if (fd < 0)
        return 0;
    fuzz_check_regress(path);
    fuzz_check_compare(path);
    close(fd);
    return 0;
}
