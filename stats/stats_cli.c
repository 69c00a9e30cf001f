/* stats_cli.c - `preplay stats`: the PT4Cloud stop rule run offline on
 * recorded samples (`pt4cloud`) and the similarity p of two sample sets
 * (`similarity`). Reading, slicing into intervals and printing live here;
 * every statistic comes from the library (stats.h), the same code the
 * replayer's controller runs live. Exit 0 on success, 1 when records were
 * rejected or a computation failed (results for the valid rest are still
 * printed), 2 on usage errors. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "stats_cli.h"
#include "stats.h"
#include "stats_input.h"
#include "stats_svg.h"

#define STATS_MAX_MESSAGES 10

struct stats_cli_opts {
    struct stats_config cfg;
    struct stats_band_options band;
    int json;
    const char *svg;
    long per_interval;
    const char *interval_text, *max_interval_text;
    double hourly;
};

static void stats_usage(FILE *out)
{
    fprintf(out,
            "usage: preplay stats pt4cloud [OPTIONS] FILE\n"
            "       preplay stats similarity [OPTIONS] A B\n\n"
            "pt4cloud: run the PT4Cloud stop rule over recorded samples, interval by interval.\n"
            "  FILE is CSV (value,interval[,label] or value,timestamp[,label] with --interval;\n"
            "  a header line may name the columns) or one number per line (--per-interval N).\n"
            "  --per-interval N     one number per line, N samples per interval\n"
            "  --interval DUR       interval length for timestamps (90s, 30m, 12h, 7d, 1w)\n"
            "  --short              short intervals (PT4Cloud Fig. 7): lengthen when unstable\n"
            "  --max-interval X     cap of --short (default 7d, or 64 x N with --per-interval)\n"
            "  --lengthen F         interval growth factor of --short (2)\n"
            "  --no-validate        skip the two validation intervals of --short\n"
            "  --hourly PORTION     keep only the first PORTION of every hour (e.g. 0.5)\n"
            "  --p0 P               objective probability (0.9)\n"
            "  --min-samples N      judge labels with at least N samples in d1 (30)\n"
            "  --cl C               confidence level of the band (0.99)\n"
            "  --bootstrap R        bootstrap resamples (1000)\n"
            "  --seed S             bootstrap seed (1)\n"
            "  --svg FILE           draw d1, d2 and the band\n"
            "similarity: the probability p that A and B have the same distribution\n"
            "  (PT4Cloud Eq. 3; files as above, only the value column is used).\n"
            "common:\n"
            "  --strips M           strips of the grid (1000)\n"
            "  --bandwidth B        scott (default), silverman or a number\n"
            "  --exact | --fast     exact KDE sums | binned KDE (default: exact when cheap)\n"
            "  --log                estimate on ln(value) (positive, heavy-tailed data;\n"
            "                       not the paper's default; grid and densities in ln units)\n"
            "  --json               machine-readable output\n");
}

static int stats_parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int stats_parse_double(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* --bandwidth: scott, silverman or a positive number. */
static int stats_parse_bandwidth(const char *s, struct stats_kde_options *kde)
{
    double d;
    if (!strcmp(s, "scott"))
        kde->bandwidth_rule = STATS_BW_SCOTT;
    else if (!strcmp(s, "silverman"))
        kde->bandwidth_rule = STATS_BW_SILVERMAN;
    else if (!stats_parse_double(s, &d) && d > 0) {
        kde->bandwidth_rule = STATS_BW_FIXED;
        kde->bandwidth = d;
    } else
        return -1;
    return 0;
}

enum {
    OPT_PER_INTERVAL = 256,
    OPT_INTERVAL,
    OPT_SHORT,
    OPT_MAX_INTERVAL,
    OPT_LENGTHEN,
    OPT_NO_VALIDATE,
    OPT_HOURLY,
    OPT_P0,
    OPT_MIN_SAMPLES,
    OPT_CL,
    OPT_BOOTSTRAP,
    OPT_SEED,
    OPT_SVG,
    OPT_STRIPS,
    OPT_BANDWIDTH,
    OPT_EXACT,
    OPT_FAST,
    OPT_LOG,
    OPT_JSON,
    OPT_HELP,
};

static const struct option stats_long_options[] = {
    {"per-interval", required_argument, 0, OPT_PER_INTERVAL},
    {"interval", required_argument, 0, OPT_INTERVAL},
    {"short", no_argument, 0, OPT_SHORT},
    {"max-interval", required_argument, 0, OPT_MAX_INTERVAL},
    {"lengthen", required_argument, 0, OPT_LENGTHEN},
    {"no-validate", no_argument, 0, OPT_NO_VALIDATE},
    {"hourly", required_argument, 0, OPT_HOURLY},
    {"p0", required_argument, 0, OPT_P0},
    {"min-samples", required_argument, 0, OPT_MIN_SAMPLES},
    {"cl", required_argument, 0, OPT_CL},
    {"bootstrap", required_argument, 0, OPT_BOOTSTRAP},
    {"seed", required_argument, 0, OPT_SEED},
    {"svg", required_argument, 0, OPT_SVG},
    {"strips", required_argument, 0, OPT_STRIPS},
    {"bandwidth", required_argument, 0, OPT_BANDWIDTH},
    {"exact", no_argument, 0, OPT_EXACT},
    {"fast", no_argument, 0, OPT_FAST},
    {"log", no_argument, 0, OPT_LOG},
    {"json", no_argument, 0, OPT_JSON},
    {"help", no_argument, 0, OPT_HELP},
    {0, 0, 0, 0},
};

/* Returns 0 to go on, 1 when --help was printed, 2 on a usage error. */
static int stats_parse_options(int argc, char **argv, struct stats_cli_opts *o)
{
    memset(o, 0, sizeof *o);
    stats_config_default(&o->cfg);
    stats_band_options_default(&o->band);
    o->hourly = 1.0;
    optind = 1;
    opterr = 0;
    int c, index = 0;
    while ((c = getopt_long(argc, argv, "h", stats_long_options, &index)) != -1) {
        long l;
        switch (c) {
        case OPT_PER_INTERVAL:
            if (stats_parse_long(optarg, 2, 1000000000L, &o->per_interval))
                goto bad_value;
            break;
        case OPT_INTERVAL:
            o->interval_text = optarg;
            if (stats_parse_duration(optarg) <= 0)
                goto bad_value;
            break;
        case OPT_SHORT:
            o->cfg.short_intervals = 1;
            break;
        case OPT_MAX_INTERVAL:
            o->max_interval_text = optarg;
            break;
        case OPT_LENGTHEN:
            if (stats_parse_double(optarg, &o->cfg.lengthen_factor) ||
                !(o->cfg.lengthen_factor > 1))
                goto bad_value;
            break;
        case OPT_NO_VALIDATE:
            o->cfg.validate = 0;
            break;
        case OPT_HOURLY:
            if (stats_parse_double(optarg, &o->hourly) || !(o->hourly > 0 && o->hourly <= 1))
                goto bad_value;
            break;
        case OPT_P0:
            if (stats_parse_double(optarg, &o->cfg.p0) || !(o->cfg.p0 > 0 && o->cfg.p0 <= 1))
                goto bad_value;
            break;
        case OPT_MIN_SAMPLES:
            if (stats_parse_long(optarg, 2, 1000000000L, &l))
                goto bad_value;
            o->cfg.min_samples = (size_t)l;
            break;
        case OPT_CL:
            if (stats_parse_double(optarg, &o->band.cl) || !(o->band.cl > 0 && o->band.cl < 1))
                goto bad_value;
            break;
        case OPT_BOOTSTRAP:
            if (stats_parse_long(optarg, 2, 1000000, &l))
                goto bad_value;
            o->band.resamples = (int)l;
            break;
        case OPT_SEED:
            if (stats_parse_long(optarg, 0, 0x7fffffffffffffffL, &l))
                goto bad_value;
            o->band.seed = (uint64_t)l;
            break;
        case OPT_SVG:
            o->svg = optarg;
            break;
        case OPT_STRIPS:
            if (stats_parse_long(optarg, 2, 10000000, &l))
                goto bad_value;
            o->cfg.kde.strips = (int)l;
            break;
        case OPT_BANDWIDTH:
            if (stats_parse_bandwidth(optarg, &o->cfg.kde))
                goto bad_value;
            break;
        case OPT_EXACT:
            o->cfg.kde.method = STATS_METHOD_EXACT;
            o->band.exact = 1;
            break;
        case OPT_FAST:
            o->cfg.kde.method = STATS_METHOD_BINNED;
            break;
        case OPT_LOG:
            o->cfg.kde.log_scale = 1;
            break;
        case OPT_JSON:
            o->json = 1;
            break;
        case 'h':
        case OPT_HELP:
            stats_usage(stdout);
            return 1;
        default:
            fprintf(stderr, "preplay stats: unknown option '%s' (see preplay stats --help)\n",
                    argv[optind - 1]);
            return 2;
        }
        continue;
    bad_value:
        fprintf(stderr, "preplay stats: bad value '%s' for --%s\n", optarg,
                stats_long_options[index].name);
        return 2;
    }
    return 0;
}

/* Whole file into memory. */
static char *stats_read_file(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "preplay stats: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    if (f != stdin)
        fclose(f);
    if (!buf || failed) {
        fprintf(stderr, "preplay stats: %s: %s\n", path, buf ? "read error" : "out of memory");
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

static int stats_load(const char *path, int flags, struct stats_input *in)
{
    size_t len;
    char *buf = stats_read_file(path, &len);
    if (!buf)
        return -1;
    char err[STATS_ERR_LEN];
    int r = stats_input_parse(buf, len, path, flags, stderr, STATS_MAX_MESSAGES, in, err);
    free(buf);
    if (r) {
        fprintf(stderr, "preplay stats: %s\n", err);
        return -1;
    }
    return 0;
}

static json_t *stats_json_array(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

static json_t *stats_json_grid_x(const struct stats_grid *g)
{
    json_t *a = json_array();
    for (int i = 0; i < g->strips; i++)
        json_array_append_new(a, json_real(stats_grid_x(g, i)));
    return a;
}

static json_t *stats_json_number_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

static int stats_json_print(json_t *root)
{
    int r = json_dumpf(root, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
    putchar('\n');
    json_decref(root);
    return r;
}

/* ---- similarity ---------------------------------------------------------- */

static int stats_similarity_main(int argc, char **argv)
{
    struct stats_cli_opts o;
    int r = stats_parse_options(argc, argv, &o);
    if (r)
        return r == 1 ? 0 : 2;
    if (argc - optind != 2) {
        fprintf(stderr, "preplay stats similarity: needs two files, A and B\n");
        return 2;
    }
    struct stats_input a, b;
    int flags = o.cfg.kde.log_scale ? STATS_INPUT_POSITIVE : 0;
    if (stats_load(argv[optind], flags, &a))
        return 1;
    if (stats_load(argv[optind + 1], flags, &b)) {
        stats_input_free(&a);
        return 1;
    }
    int status = a.bad || b.bad ? 1 : 0;
    struct stats_similarity sim;
    char err[STATS_ERR_LEN];
    if (stats_similarity_compute(a.value, a.n, b.value, b.n, &o.cfg.kde, &sim, err)) {
        fprintf(stderr, "preplay stats similarity: %s\n", err);
        status = 1;
        goto done;
    }
    if (o.json) {
        json_t *root = json_object();
        json_object_set_new(root, "p", json_real(sim.p));
        json_object_set_new(root, "kl_ab", stats_json_number_or_null(sim.kl12));
        json_object_set_new(root, "kl_ba", stats_json_number_or_null(sim.kl21));
        json_object_set_new(root, "n_a", json_integer((json_int_t)a.n));
        json_object_set_new(root, "n_b", json_integer((json_int_t)b.n));
        json_object_set_new(root, "bandwidth_a", json_real(sim.h1));
        json_object_set_new(root, "bandwidth_b", json_real(sim.h2));
        json_object_set_new(root, "note", sim.note ? json_string(sim.note) : json_null());
        json_object_set_new(root, "scale", json_string(o.cfg.kde.log_scale ? "log" : "linear"));
        if (sim.d1) {
            json_object_set_new(
                root, "method_a",
                json_string(sim.method1 == STATS_METHOD_EXACT ? "exact" : "binned"));
            json_object_set_new(
                root, "method_b",
                json_string(sim.method2 == STATS_METHOD_EXACT ? "exact" : "binned"));
            json_object_set_new(root, "grid_lo", json_real(sim.grid.lo));
            json_object_set_new(root, "grid_width", json_real(sim.grid.width));
            json_object_set_new(root, "grid", stats_json_grid_x(&sim.grid));
            json_object_set_new(root, "density_a", stats_json_array(sim.d1, sim.grid.strips));
            json_object_set_new(root, "density_b", stats_json_array(sim.d2, sim.grid.strips));
        }
        stats_json_print(root);
    } else {
        printf("p = %.6f  (KL(A||B) = %.6g bits, KL(B||A) = %.6g bits)\n", sim.p, sim.kl12,
               sim.kl21);
        printf("A: %zu samples, bandwidth %.6g; B: %zu samples, bandwidth %.6g%s\n", a.n, sim.h1,
               b.n, sim.h2, o.cfg.kde.log_scale ? " (ln units)" : "");
        if (sim.note)
            printf("note: %s\n", sim.note);
    }
    stats_similarity_free(&sim);
done:
    stats_input_free(&a);
    stats_input_free(&b);
    return status;
}

/* ---- pt4cloud: offline driver ---------------------------------------------- */

struct stats_run {
    struct stats_input in;
    size_t *order; /* samples sorted by time */
    size_t norder;
    double *vals; /* one interval's values, all then per label */
    double **label_vals;
    size_t *label_n;
    struct stats_label_samples *labels;
    json_t *steps;
    int skipped_empty;
    int intervals_fed;
    int stopped_at;
    int stable;
    int data_ended_incomplete;
};

static const struct stats_input *stats_sort_input;

static int stats_cmp_time(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    double ti = stats_sort_input->time[i], tj = stats_sort_input->time[j];
    if (ti != tj)
        return ti < tj ? -1 : 1;
    return i < j ? -1 : (i > j);
}

static const char *stats_format_length(double v, enum stats_time_kind kind, char *buf, size_t len)
{
    if (kind == STATS_TIME_TIMESTAMP) {
        if (v >= 86400 && fmod(v, 86400) == 0)
            snprintf(buf, len, "%gd", v / 86400);
        else if (v >= 3600 && fmod(v, 3600) == 0)
            snprintf(buf, len, "%gh", v / 3600);
        else
            snprintf(buf, len, "%gs", v);
    } else if (kind == STATS_TIME_NONE) {
        snprintf(buf, len, "%g samples", v);
    } else {
        snprintf(buf, len, "1");
    }
    return buf;
}

/* Feed samples order[from, to) as one interval. */
static int stats_feed(struct stats_machine *m, struct stats_run *run, size_t from, size_t to,
                      struct stats_step *step, char *err)
{
    const struct stats_input *in = &run->in;
    size_t n = 0;
    for (size_t l = 0; l < in->nlabels; l++)
        run->label_n[l] = 0;
    for (size_t k = from; k < to; k++) {
        size_t i = run->order[k];
        run->vals[n++] = in->value[i];
        uint32_t l = in->label_id[i];
        if (l != STATS_NO_LABEL)
            run->label_vals[l][run->label_n[l]++] = in->value[i];
    }
    size_t nl = 0;
    for (size_t l = 0; l < in->nlabels; l++)
        if (run->label_n[l]) {
            run->labels[nl].label = in->labels[l];
            run->labels[nl].values = run->label_vals[l];
            run->labels[nl].n = run->label_n[l];
            nl++;
        }
    return stats_machine_feed(m, run->vals, n, run->labels, nl, step, err);
}

static void stats_report_step(const struct stats_cli_opts *o, struct stats_run *run,
                              const struct stats_step *s, size_t samples)
{
    char len[64];
    run->intervals_fed = s->interval;
    stats_format_length(s->interval_length, run->in.time_kind, len, sizeof len);
    if (o->json) {
        json_t *j = json_object();
        json_object_set_new(j, "interval", json_integer(s->interval));
        json_object_set_new(j, "length", json_real(s->interval_length));
        json_object_set_new(j, "samples", json_integer((json_int_t)samples));
        json_object_set_new(j, "p", s->compared ? json_real(s->p) : json_null());
        json_object_set_new(j, "min_p", s->compared ? json_real(s->min_p) : json_null());
        json_object_set_new(j, "validation", json_boolean(s->validation));
        json_object_set_new(j, "labels_judged", json_integer(s->labels_judged));
        json_object_set_new(j, "held_open_by",
                            s->held_open_by[0] ? json_string(s->held_open_by) : json_null());
        json_object_set_new(j, "action", json_string(stats_action_name(s->action)));
        json_array_append_new(run->steps, j);
        return;
    }
    if (s->interval == 1)
        printf("%-9s %-12s %-9s %-9s %-9s %-9s %s\n", "interval", "length", "samples", "p", "min p",
               "action", "held open by");
    char p[32] = "-", minp[32] = "-";
    if (s->compared) {
        snprintf(p, sizeof p, "%.4f%s", s->p, s->validation ? "v" : "");
        snprintf(minp, sizeof minp, "%.4f", s->min_p);
    }
    printf("%-9d %-12s %-9zu %-9s %-9s %-9s %s\n", s->interval, len, samples, p, minp,
           stats_action_name(s->action), s->held_open_by);
}

/* Slices the sorted samples into intervals and feeds them until the machine
 * stops or the data ends. */
static int stats_drive(const struct stats_cli_opts *o, struct stats_machine *m,
                       struct stats_run *run, const char *path)
{
    const struct stats_input *in = &run->in;
    char err[STATS_ERR_LEN];
    struct stats_step step;
    size_t k = 0, total = 0;
    if (in->time_kind == STATS_TIME_INDEX) {
        double expected = in->time[run->order[0]];
        while (k < run->norder && !stats_machine_stopped(m)) {
            double idx = in->time[run->order[k]];
            for (; expected < idx; expected++) {
                fprintf(stderr, "%s: interval %.0f has no samples: skipped\n", path, expected);
                run->skipped_empty++;
            }
            size_t end = k;
            while (end < run->norder && in->time[run->order[end]] == idx)
                end++;
            if (stats_feed(m, run, k, end, &step, err)) {
                fprintf(stderr, "%s: interval %.0f: %s\n", path, idx, err);
                return -1;
            }
            total += end - k;
            stats_report_step(o, run, &step, total);
            k = end;
            expected = idx + 1;
        }
        return 0;
    }
    double t0 = in->time_kind == STATS_TIME_TIMESTAMP ? in->time[run->order[0]] : 0;
    double t_last = in->time[run->order[run->norder - 1]];
    double t_end = in->time_kind == STATS_TIME_TIMESTAMP
                       ? t_last + (run->norder > 1 ? (t_last - t0) / (double)(run->norder - 1) : 0)
                       : (double)run->norder;
    double cursor = t0;
    while (!stats_machine_stopped(m)) {
        double len = stats_machine_interval_length(m);
        if (cursor + len > t_end * (1 + 1e-12) + 1e-9) {
            run->data_ended_incomplete = 1;
            break;
        }
        while (k < run->norder && in->time[run->order[k]] < cursor)
            k++;
        size_t end = k;
        while (end < run->norder && in->time[run->order[end]] < cursor + len)
            end++;
        if (end == k) {
            fprintf(stderr, "%s: the interval starting at %.17g has no samples: skipped\n", path,
                    cursor);
            run->skipped_empty++;
            cursor += len;
            continue;
        }
        if (stats_feed(m, run, k, end, &step, err)) {
            fprintf(stderr, "%s: interval at %.17g: %s\n", path, cursor, err);
            return -1;
        }
        total = step.action == STATS_LENGTHEN ? 0 : total + (end - k);
        stats_report_step(o, run, &step, step.action == STATS_LENGTHEN ? end - k : total);
        cursor += len;
        k = end;
    }
    return 0;
}

static const char *const stats_pct_names[STATS_NPCT] = {"median", "p5", "p95", "p99"};

static json_t *stats_json_summary(const struct stats_band *b)
{
    json_t *s = json_object();
    for (int k = 0; k < STATS_NPCT; k++) {
        json_t *e = json_object();
        json_object_set_new(e, "value", json_real(b->pct[k]));
        json_object_set_new(e, "low", json_real(b->pct_low[k]));
        json_object_set_new(e, "high", json_real(b->pct_high[k]));
        json_object_set_new(s, stats_pct_names[k], e);
    }
    return s;
}

/* Which slicing applies to the input (one number per line, timestamps or
 * interval indices) and the interval lengths it implies, into o->cfg.
 * 0, or 2 after printing the usage error. */
static int stats_pt4cloud_configure(struct stats_cli_opts *o, const struct stats_input *in,
                                    const char *path)
{
    if (in->time_kind == STATS_TIME_NONE) {
        if (!o->per_interval) {
            fprintf(stderr,
                    "preplay stats pt4cloud: %s has one number per line: give "
                    "--per-interval N\n",
                    path);
            return 2;
        }
        o->cfg.interval = (double)o->per_interval;
        o->cfg.max_interval = o->cfg.interval * 64;
    } else if (in->time_kind == STATS_TIME_TIMESTAMP) {
        if (!o->interval_text) {
            fprintf(stderr, "preplay stats pt4cloud: %s has timestamps: give --interval DUR\n",
                    path);
            return 2;
        }
        o->cfg.interval = stats_parse_duration(o->interval_text);
        o->cfg.max_interval = 7 * 86400.0;
    } else if (o->cfg.short_intervals || o->per_interval || o->interval_text || o->hourly < 1) {
        fprintf(stderr,
                "preplay stats pt4cloud: %s has interval indices: --short, --interval "
                "and --per-interval need timestamps or one number per line\n",
                path);
        return 2;
    } else {
        o->cfg.interval = o->cfg.max_interval = 1; /* one interval index */
    }
    if (o->max_interval_text) {
        double v = in->time_kind == STATS_TIME_TIMESTAMP
                       ? stats_parse_duration(o->max_interval_text)
                       : strtod(o->max_interval_text, NULL);
        if (!(v > 0)) {
            fprintf(stderr, "preplay stats: bad value '%s' for --max-interval\n",
                    o->max_interval_text);
            return 2;
        }
        o->cfg.max_interval = v;
    }
    if (o->cfg.short_intervals && o->cfg.max_interval < o->cfg.interval)
        o->cfg.max_interval = o->cfg.interval;
    if (o->hourly < 1 && in->time_kind != STATS_TIME_TIMESTAMP) {
        fprintf(stderr, "preplay stats pt4cloud: --hourly needs timestamps\n");
        return 2;
    }
    o->cfg.hourly_portion = o->hourly;
    return 0;
}

/* The buffers stats_feed fills: the sample order, one interval's values and,
 * per label, an array that can hold all of that label's samples. -1 when out
 * of memory (stats_run_free releases what was allocated). */
static int stats_run_alloc(struct stats_run *run)
{
    const struct stats_input *in = &run->in;
    run->order = malloc(sizeof(size_t) * in->n);
    run->vals = malloc(sizeof(double) * in->n);
    run->label_vals = calloc(in->nlabels + 1, sizeof(double *));
    run->label_n = calloc(in->nlabels + 1, sizeof(size_t));
    run->labels = calloc(in->nlabels + 1, sizeof *run->labels);
    if (!run->order || !run->vals || !run->label_vals || !run->label_n || !run->labels)
        return -1;
    size_t *per_label = calloc(in->nlabels + 1, sizeof(size_t));
    if (!per_label)
        return -1;
    for (size_t i = 0; i < in->n; i++)
        if (in->label_id[i] != STATS_NO_LABEL)
            per_label[in->label_id[i]]++;
    int rc = 0;
    for (size_t l = 0; l < in->nlabels && !rc; l++) {
        run->label_vals[l] = malloc(sizeof(double) * (per_label[l] ? per_label[l] : 1));
        if (!run->label_vals[l])
            rc = -1;
    }
    free(per_label);
    return rc;
}

static void stats_run_free(struct stats_run *run)
{
    if (run->steps)
        json_decref(run->steps);
    if (run->label_vals)
        for (size_t l = 0; l < run->in.nlabels; l++)
            free(run->label_vals[l]);
    free(run->label_vals);
    free(run->label_n);
    free(run->labels);
    free(run->order);
    free(run->vals);
    stats_input_free(&run->in);
}

/* run->order: the samples to feed, sorted by time. Hourly sampling keeps
 * the first portion of every hour since the start. */
static void stats_run_order(struct stats_run *run, const struct stats_machine *m, double hourly,
                            const char *path)
{
    const struct stats_input *in = &run->in;
    double t0 = in->n ? in->time[0] : 0;
    for (size_t i = 0; i < in->n; i++)
        t0 = in->time[i] < t0 ? in->time[i] : t0;
    int unsorted = 0;
    for (size_t i = 0; i < in->n; i++) {
        if (i && in->time[i] < in->time[i - 1])
            unsorted = 1;
        if (hourly < 1 && !stats_machine_should_run(m, in->time[i] - t0))
            continue;
        run->order[run->norder++] = i;
    }
    if (unsorted && in->time_kind == STATS_TIME_TIMESTAMP)
        fprintf(stderr, "%s: timestamps are not in order: samples were sorted by time\n", path);
    stats_sort_input = in;
    qsort(run->order, run->norder, sizeof(size_t), stats_cmp_time);
}

/* What the stop rule ended with: the final distribution (d2) with its band
 * and, for the chart, the reference distribution (d1) on the band's grid. */
struct stats_outcome {
    int stopped;
    size_t final_n;
    int have_band;
    struct stats_band band;
    double *d1; /* NULL when d1 could not be estimated */
};

/* The density of the reference samples on the band's grid, or NULL when
 * there are too few of them or the estimate fails (d1 is only drawn). */
static double *stats_reference_density(const struct stats_cli_opts *o,
                                       const struct stats_machine *m, const struct stats_grid *grid)
{
    const double *ref_v;
    size_t ref_n;
    stats_machine_reference_samples(m, NULL, &ref_v, &ref_n);
    char err[STATS_ERR_LEN];
    double *d1 = NULL, *ref_log = NULL;
    if (ref_n >= 2 && o->cfg.kde.log_scale) {
        if (stats_log_copy(ref_v, ref_n, "d1", &ref_log, err))
            ref_n = 0;
        ref_v = ref_log;
    }
    if (ref_n >= 2) {
        double h1;
        d1 = malloc(sizeof(double) * (size_t)grid->strips);
        if (!d1 || stats_bandwidth(ref_v, ref_n, &o->cfg.kde, &h1, err) || h1 == 0 ||
            stats_density(ref_v, ref_n, h1, grid, o->cfg.kde.method, d1, err)) {
            free(d1);
            d1 = NULL;
        }
    }
    free(ref_log);
    return d1;
}

/* Fills out from the machine; 0, or 1 after printing why the final
 * distribution's band failed. */
static int stats_pt4cloud_outcome(const struct stats_cli_opts *o, const struct stats_machine *m,
                                  struct stats_outcome *out)
{
    memset(out, 0, sizeof *out);
    out->stopped = stats_machine_stopped(m);
    const double *final_v;
    stats_machine_final_samples(m, NULL, &final_v, &out->final_n);
    if (out->final_n < 2)
        return 0;
    char err[STATS_ERR_LEN];
    if (stats_band_compute(final_v, out->final_n, NULL, &o->cfg.kde, &o->band, &out->band, err)) {
        fprintf(stderr, "preplay stats pt4cloud: final distribution: %s\n", err);
        return 1;
    }
    out->have_band = 1;
    out->d1 = stats_reference_density(o, m, &out->band.grid);
    return 0;
}

static void stats_outcome_free(struct stats_outcome *out)
{
    free(out->d1);
    if (out->have_band)
        stats_band_free(&out->band);
}

/* --svg: d1, d2 and the band. 0, or 1 after printing why it was not written. */
static int stats_pt4cloud_svg(const struct stats_cli_opts *o, const struct stats_outcome *out)
{
    if (!o->svg || !out->have_band)
        return 0;
    const struct stats_band *b = &out->band;
    const char *title = b->log_scale ? (out->stopped ? "PT4Cloud: stable (ln of values)"
                                                     : "PT4Cloud: not stable (ln of values)")
                                     : (out->stopped ? "PT4Cloud: stable" : "PT4Cloud: not stable");
    char err[1024];
    if (!stats_svg_write(o->svg, &b->grid, out->d1, b->density, b->low, b->high, title, err,
                         sizeof err))
        return 0;
    fprintf(stderr, "preplay stats pt4cloud: %s\n", err);
    return 1;
}

/* --json: the verdict, the steps (moved out of run) and the band. */
static void stats_pt4cloud_print_json(const struct stats_cli_opts *o, struct stats_run *run,
                                      const struct stats_outcome *out)
{
    json_t *root = json_object();
    json_object_set_new(root, "stable", json_boolean(out->stopped));
    json_object_set_new(root, "stopped_at_interval",
                        out->stopped ? json_integer(run->intervals_fed) : json_null());
    json_object_set_new(root, "p0", json_real(o->cfg.p0));
    json_object_set_new(root, "final_samples", json_integer((json_int_t)out->final_n));
    json_object_set_new(root, "skipped_empty_intervals", json_integer(run->skipped_empty));
    json_object_set_new(root, "rejected_records", json_integer((json_int_t)run->in.bad));
    json_object_set_new(root, "steps", run->steps);
    run->steps = NULL;
    if (out->have_band) {
        const struct stats_band *b = &out->band;
        int strips = b->grid.strips;
        json_object_set_new(root, "scale", json_string(b->log_scale ? "log" : "linear"));
        json_object_set_new(root, "bandwidth", json_real(b->h));
        json_object_set_new(root, "cl", json_real(o->band.cl));
        json_object_set_new(root, "grid", stats_json_grid_x(&b->grid));
        json_object_set_new(root, "density", stats_json_array(b->density, strips));
        json_object_set_new(root, "band_low", stats_json_array(b->low, strips));
        json_object_set_new(root, "band_high", stats_json_array(b->high, strips));
        json_object_set_new(root, "density_d1",
                            out->d1 ? stats_json_array(out->d1, strips) : json_null());
        json_object_set_new(root, "summary", stats_json_summary(b));
    }
    stats_json_print(root);
}

/* Text: the verdict, then the final distribution's percentiles with their
 * bootstrap intervals. */
static void stats_pt4cloud_print_text(const struct stats_cli_opts *o, const struct stats_run *run,
                                      const struct stats_outcome *out)
{
    int fed = run->intervals_fed;
    if (out->stopped)
        printf("stopped at interval %d: stable (p >= p0 = %g)\n", fed, o->cfg.p0);
    else
        printf("not stable after %d intervals (p0 = %g): the data ended%s\n", fed, o->cfg.p0,
               run->data_ended_incomplete ? " before the next interval was complete" : "");
    if (!out->have_band)
        return;
    const struct stats_band *b = &out->band;
    printf("final distribution: %zu samples, bandwidth %.6g%s, band at CL %g from %d "
           "resamples\n",
           out->final_n, b->h, b->log_scale ? " (ln units)" : "", o->band.cl, o->band.resamples);
    for (int k = 0; k < STATS_NPCT; k++)
        printf("  %-6s %.6g  [%.6g, %.6g]\n", stats_pct_names[k], b->pct[k], b->pct_low[k],
               b->pct_high[k]);
}

static int stats_pt4cloud_main(int argc, char **argv)
{
    struct stats_cli_opts o;
    int r = stats_parse_options(argc, argv, &o);
    if (r)
        return r == 1 ? 0 : 2;
    if (argc - optind != 1) {
        fprintf(stderr, "preplay stats pt4cloud: needs exactly one FILE\n");
        return 2;
    }
    const char *path = argv[optind];
    struct stats_run run;
    memset(&run, 0, sizeof run);
    struct stats_machine *m = NULL;
    if (stats_load(path,
                   (o.interval_text ? STATS_INPUT_TIMESTAMPS : 0) |
                       (o.cfg.kde.log_scale ? STATS_INPUT_POSITIVE : 0),
                   &run.in))
        return 1;
    const struct stats_input *in = &run.in;
    int status = in->bad ? 1 : 0;
    if (stats_pt4cloud_configure(&o, in, path)) {
        status = 2;
        goto done;
    }
    char err[STATS_ERR_LEN];
    m = stats_machine_new(&o.cfg, err);
    if (!m) {
        fprintf(stderr, "preplay stats pt4cloud: %s\n", err);
        status = 2;
        goto done;
    }
    if (in->n == 0) {
        fprintf(stderr, "preplay stats pt4cloud: %s: no valid samples\n", path);
        status = 1;
        goto done;
    }
    if (stats_run_alloc(&run)) {
        fprintf(stderr, "preplay stats pt4cloud: out of memory for %zu samples\n", in->n);
        status = 1;
        goto done;
    }
    stats_run_order(&run, m, o.hourly, path);
    run.steps = json_array();
    if (run.norder == 0 || stats_drive(&o, m, &run, path))
        status = 1;
    struct stats_outcome out;
    if (stats_pt4cloud_outcome(&o, m, &out))
        status = 1;
    if (stats_pt4cloud_svg(&o, &out))
        status = 1;
    if (o.json)
        stats_pt4cloud_print_json(&o, &run, &out);
    else
        stats_pt4cloud_print_text(&o, &run, &out);
    stats_outcome_free(&out);
done:
    stats_run_free(&run);
    stats_machine_free(m);
    return status;
}

int cmd_stats(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        stats_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "pt4cloud"))
        return stats_pt4cloud_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "similarity"))
        return stats_similarity_main(argc - 1, argv + 1);
    fprintf(stderr, "preplay stats: unknown subcommand '%s' (pt4cloud, similarity)\n", argv[1]);
    return 2;
}
