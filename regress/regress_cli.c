/* regress_cli.c - `preplay regress BASELINE... -- TARGET -o regress.json`:
 * which counters changed between earlier runs and a new one (Foo's
 * thesis, ch. 5-6; docs/preplay-regress.md). Parses the options, loads
 * the results files (regress_load.c), runs the analysis (regress.h),
 * writes regress.json (regress_output.c) and prints the flagged counters.
 * Bad input is one line on stderr naming the file and what is missing,
 * exit 2 for usage, 1 for input it cannot use; never writes a partial
 * regress.json. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regress.h"
#include "regress_cli.h"
#include "regress_load.h"
#include "regress_output.h"
#include "results_writer.h"

struct regress_cli {
    const char **paths; /* baselines, then the target */
    size_t nbase, ntarget;
    const char *out;
    const char *method, *discretization;
    struct regress_options o;
    size_t min_windows, max_rules;
    int quiet;
};

static void regress_usage(FILE *out)
{
    fprintf(out, "usage: preplay regress BASELINE... -- TARGET -o REGRESS.json [--method M]\n"
                 "                       [--discretize 3level|ew] [--support S] [--confidence C]\n"
                 "                       [--change X] [--alpha A] [--max-len N] [--min-windows N]\n"
                 "                       [--max-rules N] [--quiet]\n\n"
                 "Which counters changed: association rules between the counters of the\n"
                 "baseline runs' windows (results files of preplay run), their confidence on\n"
                 "the target run, and the counters of the rules that changed, ranked by the\n"
                 "share of target windows that violate them (docs/preplay-regress.md).\n"
                 "  -o FILE           regress.json (formats/REGRESS.md)\n"
                 "  --method M        single (every baseline pooled, one rule set), bagging\n"
                 "                    (one per baseline, majority vote) or stacking (votes\n"
                 "                    weighted by environment similarity); default: single\n"
                 "                    with one baseline, stacking with several\n"
                 "  --discretize D    3level (median +/- 1 sd) or ew (equal-width bins);\n"
                 "                    default: 3level for single, ew for the ensembles\n"
                 "  --support S       minimum rule support, a share of windows (0.2)\n"
                 "  --confidence C    minimum rule confidence on the baseline (0.8)\n"
                 "  --change X        confidence change (cosine distance) that flags a rule (0.1)\n"
                 "  --alpha A         also require the confidences to differ at level A\n"
                 "                    (Fisher exact test; default 1: off, the thesis's rule)\n"
                 "  --max-len N       items per rule, consequent included (3; 2..8)\n"
                 "  --min-windows N   counter windows each file needs (10)\n"
                 "  --max-rules N     rules written to the file, most changed first (1000)\n"
                 "  --quiet           print nothing but errors\n");
}

/* A number in (lo, hi] for option name, or -1 with the message printed. */
static int regress_number(const char *name, const char *arg, double lo, double hi, double *out)
{
    char *end = NULL;
    double v = arg ? strtod(arg, &end) : NAN;
    if (!arg || *end || !(v > lo && v <= hi)) {
        fprintf(stderr, "regress: %s '%s': expected a number in (%g, %g]\n", name, arg ? arg : "",
                lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* One option with its value (NULL when none followed): 1 used the value,
 * 0 did not, -1 bad (printed), -2 --help. */
static int regress_option(struct regress_cli *c, const char *opt, const char *arg)
{
    double v;
    if (!strcmp(opt, "--help") || !strcmp(opt, "-h"))
        return -2;
    if (!strcmp(opt, "--quiet"))
        return c->quiet = 1, 0;
    if (!arg) {
        fprintf(stderr, "regress: %s needs a value (see --help)\n", opt);
        return -1;
    }
    if (!strcmp(opt, "-o") || !strcmp(opt, "--output"))
        c->out = arg;
    else if (!strcmp(opt, "--method"))
        c->method = arg;
    else if (!strcmp(opt, "--discretize"))
        c->discretization = arg;
    else if (!strcmp(opt, "--support"))
        return regress_number(opt, arg, 0, 1, &c->o.min_support) ? -1 : 1;
    else if (!strcmp(opt, "--confidence"))
        return regress_number(opt, arg, 0, 1, &c->o.min_confidence) ? -1 : 1;
    else if (!strcmp(opt, "--alpha"))
        return regress_number(opt, arg, 0, 1, &c->o.alpha) ? -1 : 1;
    else if (!strcmp(opt, "--change"))
        return regress_number(opt, arg, 0, 1, &c->o.min_change) ? -1 : 1;
    else if (!strcmp(opt, "--max-len")) {
        if (regress_number(opt, arg, 1, 8, &v))
            return -1;
        if (v != floor(v)) {
            fprintf(stderr, "regress: --max-len '%s': expected an integer 2..8\n", arg);
            return -1;
        }
        c->o.max_len = (int)v;
    } else if (!strcmp(opt, "--min-windows")) {
        if (regress_number(opt, arg, 1, 1e6, &v))
            return -1;
        c->min_windows = (size_t)v;
    } else if (!strcmp(opt, "--max-rules")) {
        if (regress_number(opt, arg, 0, 1e9, &v))
            return -1;
        c->max_rules = (size_t)v;
    } else {
        fprintf(stderr, "regress: unknown option %s (see --help)\n", opt);
        return -1;
    }
    return 1;
}

/* The method and discretization words, with their defaults. */
static int regress_words(struct regress_cli *c)
{
    if (!c->method)
        c->o.method = c->nbase > 1 ? REGRESS_STACKING : REGRESS_SINGLE;
    else if (!strcmp(c->method, "single"))
        c->o.method = REGRESS_SINGLE;
    else if (!strcmp(c->method, "bagging"))
        c->o.method = REGRESS_BAGGING;
    else if (!strcmp(c->method, "stacking"))
        c->o.method = REGRESS_STACKING;
    else {
        fprintf(stderr, "regress: --method '%s': expected single, bagging or stacking\n",
                c->method);
        return -1;
    }
    if (!c->discretization)
        c->o.discretization = REGRESS_3LEVEL;
    else if (!strcmp(c->discretization, "3level"))
        c->o.discretization = REGRESS_3LEVEL;
    else if (!strcmp(c->discretization, "ew"))
        c->o.discretization = REGRESS_EQUAL_WIDTH;
    else {
        fprintf(stderr, "regress: --discretize '%s': expected 3level or ew\n", c->discretization);
        return -1;
    }
    return 0;
}

/* 0 go on, else the exit status (-1: 0 after --help). */
static int regress_parse(int argc, char **argv, struct regress_cli *c)
{
    *c = (struct regress_cli){.o = {.min_support = 0.2,
                                    .min_confidence = 0.8,
                                    .min_change = 0.1,
                                    .max_len = 3,
                                    .alpha = 0.001,
                                    .max_itemsets = 2000000},
                              .min_windows = 10,
                              .max_rules = 1000};
    c->paths = calloc((size_t)argc + 1, sizeof *c->paths);
    if (!c->paths)
        return fprintf(stderr, "regress: out of memory\n"), 1;
    int target_side = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--") && !target_side) {
            target_side = 1;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            int st = regress_option(c, a, i + 1 < argc ? argv[i + 1] : NULL);
            if (st == -2)
                return regress_usage(stdout), -1;
            if (st < 0)
                return 2;
            i += st;
            continue;
        }
        if (target_side) {
            c->ntarget++;
            c->paths[c->nbase + c->ntarget - 1] = a;
        } else {
            if (c->ntarget) /* cannot happen: baselines come before -- */
                return 2;
            c->paths[c->nbase++] = a;
        }
    }
    if (!c->nbase || c->ntarget != 1 || !c->out) {
        fprintf(stderr, "regress: needs BASELINE... -- TARGET -o REGRESS.json (see --help)\n");
        return 2;
    }
    if (c->o.max_len < 2) {
        fprintf(stderr, "regress: --max-len: expected an integer 2..8\n");
        return 2;
    }
    return regress_words(c) ? 2 : 0;
}

int cmd_regress(int argc, char **argv)
{
    struct regress_cli c;
    int st = regress_parse(argc, argv, &c);
    if (st) {
        free(c.paths);
        return st < 0 ? 0 : st;
    }
    struct regress_input in;
    struct regress_result res;
    char err[REGRESS_ERR_LEN];
    int rc = 1;
    if (regress_load(c.paths, c.nbase + 1, c.min_windows, &in, err, sizeof err)) {
        fprintf(stderr, "regress: %s\n", err);
        free(c.paths);
        return 1;
    }
    if (regress_analyze(&in.table, &c.o, &res, err, sizeof err)) {
        fprintf(stderr, "regress: %s\n", err);
        goto out;
    }
    json_t *root =
        regress_output_json(&in.table, &c.o, &res, in.files[0].counters.window_s, c.max_rules);
    if (!root)
        snprintf(err, sizeof err, "out of memory building %s", c.out);
    if (!root || results_save(root, c.out, err, sizeof err))
        fprintf(stderr, "regress: %s\n", err);
    else
        rc = 0;
    json_decref(root);
    if (!rc && !c.quiet)
        regress_output_print(stdout, &in.table, &res);
    regress_result_free(&res);
out:
    regress_input_free(&in);
    free(c.paths);
    return rc;
}
