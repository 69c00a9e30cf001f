/* compare_cli.c - `preplay compare FILE... [--plan PLAN] [--slo SLO]...
 * [--slo-label LABEL]... [--equivalent-p P] [--allow-failed] [-o
 * report.html] [--json]`: loads every file as results, duet or regress by
 * its "format", checks they belong together, decides, and prints the
 * verdict table, the duet tables and the regress "why" blocks (or JSON)
 * and writes the HTML report. Never
 * writes a report from inputs it refused; exits 3 (after printing and
 * writing everything) when results were given and no type could be
 * ranked. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "compare_cli.h"
#include "compare.h"

static void compare_usage(FILE *out)
{
    fprintf(
        out,
        "usage: preplay compare FILE... [--plan PLAN] [--slo SLO]... [--slo-label "
        "LABEL]...\n"
        "                       [--equivalent-p P] [--allow-failed] [-o report.html] [--json]\n\n"
        "Compares the results of `preplay run` on candidate instance types (one file per\n"
        "type, named with --instance and priced with --price at run time) and says which\n"
        "meet the SLOs and which of those is cheapest per million requests. A FILE that\n"
        "`preplay duet` wrote shows version B against A per label (B/A with its interval:\n"
        "equal, slower or faster); an --aa one is the A/A context of the others. A FILE\n"
        "that `preplay regress` wrote says why the target is slower: its flagged\n"
        "counters by severity, each against the baselines' range.\n\n"
        "  --plan PLAN        the plan the runs replayed: adds the on-premise recording\n"
        "                     (p against it per label, requests per label over time)\n"
        "  --slo SLO          METRIC<LIMIT or METRIC<=LIMIT; METRIC median|p50|p95|p99,\n"
        "                     LIMIT a number with us, ms or s: 'p95<200ms' (repeatable)\n"
        "  --slo-label LABEL  apply the SLOs to this label only (repeatable; default all)\n"
        "  --equivalent-p P   PT4Cloud p at or above which two types are equivalent (0.9)\n"
        "  --allow-failed     rank types whose replay failed (failed requests, DB errors,\n"
        "                     labels never replayed); without it they are not ranked\n"
        "  -o FILE            write the self-contained HTML report\n"
        "  --json             print the comparison as JSON instead of the table\n"
        "The options other than -o and --json apply to results files only.\n"
        "Exit status: 0, 1 bad input, 2 usage, 3 no type could be ranked (every replay\n"
        "failed). See docs/preplay-compare.md.\n");
}

/* What compare was given: results (runs), duet and regress files. */
struct compare_inputs {
    struct compare_run *runs;
    size_t nruns;
    struct compare_duet *duets;
    size_t nduets;
    struct compare_regress *regress;
    size_t nregress;
};

/* The verdict and the duet tables on stdout (text or JSON) and the report;
 * -1 (said on stderr) when one cannot be written. v is NULL without runs. */
static int compare_cli_emit(const struct compare_inputs *in, const struct compare_recording *rec,
                            const struct compare_options *opt, const struct compare_verdict *v,
                            int json_out, const char *out_path)
{
    if (json_out) {
        json_t *j = in->nruns ? compare_json(in->runs, in->nruns, rec, opt, v) : json_object();
        if (j && in->nduets)
            json_object_set_new(j, "duet", compare_duet_json(in->duets, in->nduets));
        if (j && in->nregress)
            json_object_set_new(j, "regress", compare_regress_json(in->regress, in->nregress));
        if (!j || json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(9))) {
            json_decref(j);
            fprintf(stderr, "compare: cannot write JSON\n");
            return -1;
        }
        json_decref(j);
        printf("\n");
    } else {
        if (in->nruns)
            compare_print_table(stdout, in->runs, in->nruns, rec, opt, v);
        if (in->nruns && in->nduets)
            printf("\n");
        compare_duet_print(stdout, in->duets, in->nduets);
        if ((in->nruns || in->nduets) && in->nregress)
            printf("\n");
        compare_regress_print(stdout, in->regress, in->nregress);
    }
    if (out_path) {
        char err[COMPARE_ERR_LEN];
        struct compare_report_inputs ri = {in->runs,   in->nruns,   in->duets,
                                           in->nduets, in->regress, in->nregress};
        if (compare_report_write(out_path, &ri, rec, opt, v, err, sizeof err)) {
            fprintf(stderr, "compare: %s\n", err);
            return -1;
        }
        fprintf(stderr, "compare: report written to %s\n", out_path);
    }
    return 0;
}

/* Every FILE, each as results, duet or regress; the duet files matched to
 * their A/A context. 0, or -1 (said on stderr). */
static int compare_cli_load(char **files, int n, struct compare_inputs *in)
{
    char err[COMPARE_ERR_LEN];
    in->runs = calloc((size_t)n + 1, sizeof *in->runs);
    in->duets = calloc((size_t)n + 1, sizeof *in->duets);
    in->regress = calloc((size_t)n + 1, sizeof *in->regress);
    if (!in->runs || !in->duets || !in->regress) {
        fprintf(stderr, "compare: out of memory\n");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        enum compare_input_kind kind;
        if (compare_input_load(files[i], &in->runs[in->nruns], &in->duets[in->nduets],
                               &in->regress[in->nregress], &kind, err, sizeof err)) {
            fprintf(stderr, "compare: %s\n", err);
            return -1;
        }
        if (kind == COMPARE_INPUT_DUET)
            in->nduets++;
        else if (kind == COMPARE_INPUT_REGRESS)
            in->nregress++;
        else
            in->nruns++;
    }
    if (compare_duet_match(in->duets, in->nduets, err, sizeof err)) {
        fprintf(stderr, "compare: %s\n", err);
        return -1;
    }
    return 0;
}

int cmd_compare(int argc, char **argv)
{
    static const struct option longopts[] = {{"plan", required_argument, NULL, 'p'},
                                             {"slo", required_argument, NULL, 's'},
                                             {"slo-label", required_argument, NULL, 'l'},
                                             {"equivalent-p", required_argument, NULL, 'e'},
                                             {"allow-failed", no_argument, NULL, 'a'},
                                             {"output", required_argument, NULL, 'o'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    const char *plan_path = NULL, *out_path = NULL;
    int json_out = 0, rc = 2;
    struct compare_options opt;
    compare_options_default(&opt);
    const double equivalent_default = opt.equivalent_p;
    struct compare_slo *slos = calloc((size_t)argc + 1, sizeof *slos);
    const char **slo_labels = calloc((size_t)argc + 1, sizeof *slo_labels);
    struct compare_inputs in = {0};
    struct compare_recording rec = {0};
    int have_rec = 0;
    struct compare_verdict v = {0};
    int have_verdict = 0;
    char err[COMPARE_ERR_LEN];
    if (!slos || !slo_labels) {
        fprintf(stderr, "compare: out of memory\n");
        rc = 1;
        goto out;
    }
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            plan_path = optarg;
            break;
        case 's':
            if (compare_slo_parse(optarg, &slos[opt.nslos], err, sizeof err)) {
                fprintf(stderr, "compare: --slo: %s\n", err);
                goto out;
            }
            opt.nslos++;
            break;
        case 'l':
            slo_labels[opt.nslo_labels++] = optarg;
            break;
        case 'e': {
            char *end;
            opt.equivalent_p = strtod(optarg, &end);
            if (*end || end == optarg || !(opt.equivalent_p > 0 && opt.equivalent_p <= 1)) {
                fprintf(stderr, "compare: --equivalent-p '%s': expected a number in (0, 1]\n",
                        optarg);
                goto out;
            }
            break;
        }
        case 'a':
            opt.allow_failed = 1;
            break;
        case 'o':
            out_path = optarg;
            break;
        case 'j':
            json_out = 1;
            break;
        case 'h':
            compare_usage(stdout);
            rc = 0;
            goto out;
        default:
            compare_usage(stderr);
            goto out;
        }
    }
    opt.slos = slos;
    opt.slo_labels = slo_labels;
    if (optind >= argc) {
        fprintf(stderr, "compare: needs at least one results, duet or regress FILE (see --help)\n");
        goto out;
    }
    if (opt.nslo_labels && !opt.nslos) {
        fprintf(stderr, "compare: --slo-label needs an --slo to apply to\n");
        goto out;
    }
    rc = 1;
    if (compare_cli_load(argv + optind, argc - optind, &in))
        goto out;
    if (!in.nruns &&
        (plan_path || opt.nslos || opt.equivalent_p != equivalent_default || opt.allow_failed)) {
        fprintf(stderr,
                "compare: --plan, --slo, --equivalent-p and --allow-failed apply to "
                "results files; only %s files were given\n",
                !in.nregress ? "duet"
                : !in.nduets ? "regress"
                             : "duet and regress");
        rc = 2;
        goto out;
    }
    if (plan_path) {
        if (compare_recording_load(plan_path, &rec, err, sizeof err)) {
            compare_recording_free(&rec);
            fprintf(stderr, "compare: --plan: %s\n", err);
            goto out;
        }
        have_rec = 1;
    }
    if (in.nruns) {
        if (compare_check_consistent(in.runs, in.nruns, have_rec ? &rec : NULL, err, sizeof err)) {
            fprintf(stderr, "compare: %s\n", err);
            goto out;
        }
        if (compare_analyze(in.runs, in.nruns, have_rec ? &rec : NULL, &opt, &v, err, sizeof err)) {
            fprintf(stderr, "compare: %s\n", err);
            rc = 2;
            goto out;
        }
        have_verdict = 1;
    }
    if (compare_cli_emit(&in, have_rec ? &rec : NULL, &opt, have_verdict ? &v : NULL, json_out,
                         out_path))
        goto out;
    rc = !in.nruns || v.nranked ? 0 : 3;
out:
    if (have_verdict)
        compare_verdict_free(&v);
    for (size_t i = 0; i < in.nruns; i++)
        compare_run_free(&in.runs[i]);
    for (size_t i = 0; i < in.nduets; i++)
        compare_duet_free(&in.duets[i]);
    for (size_t i = 0; i < in.nregress; i++)
        compare_regress_free(&in.regress[i]);
    free(in.runs);
    free(in.duets);
    free(in.regress);
    if (have_rec)
        compare_recording_free(&rec);
    free(slos);
    free(slo_labels);
    return rc;
}
