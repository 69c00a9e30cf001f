/* drive_cli.c - `preplay drive PLAN --target ADDR --token T --mode M -o OUT`:
 * sends the plan's front-end requests to a replayer (replay_drive.h) and
 * writes every response time with its label (formats/RESULTS.md, through
 * the results writer of formats/results.h). */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayer_cli.h"
#include "replay_cli.h"
#include "replay_drive.h"
#include "replay_proto.h"
#include "replay_results.h"
#include "results_writer.h"
#include "run_failures.h"

static void drive_usage(FILE *out)
{
    fprintf(out,
            "usage: preplay drive PLAN --target HOST:PORT (--token T | --token-file F)\n"
            "                     [--mode independent|session] [--speed X] [--duration T]\n"
            "                     [--max-failed N|P%%] -o RESULTS\n\n"
            "Send the plan's front-end requests to a replayer and record every response time.\n"
            "  --mode independent  open loop at the recorded arrival times (default)\n"
            "  --mode session      closed loop per session, keeping think times\n"
            "  --speed X           divide arrival offsets and think times by X (default 1)\n"
            "  --duration T        repeat the schedule for T (e.g. 30s, 2m); default one pass\n"
            "  --token-file F      read the token from F's first line (- = stdin): --token\n"
            "                      is visible in `ps`\n"
            "  --max-failed N|P%%   failed requests tolerated, a count or a percentage of\n"
            "                      those sent (default 0); more: exit status 3\n"
            "  -o RESULTS          results JSON (formats/RESULTS.md)\n");
}

int replay_parse_duration(const char *text, double *seconds)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || !(v >= 0) || !isfinite(v))
        return -1;
    if (!strcmp(end, "") || !strcmp(end, "s"))
        *seconds = v;
    else if (!strcmp(end, "ms"))
        *seconds = v / 1000;
    else if (!strcmp(end, "m"))
        *seconds = v * 60;
    else if (!strcmp(end, "h"))
        *seconds = v * 3600;
    else
        return -1;
    return 0;
}

int replay_parse_mode(const char *text, enum replay_drive_mode *mode)
{
    if (!strcmp(text, "independent"))
        *mode = REPLAY_DRIVE_INDEPENDENT;
    else if (!strcmp(text, "session"))
        *mode = REPLAY_DRIVE_SESSION;
    else
        return -1;
    return 0;
}

struct drive_config {
    const char *plan_path, *target, *out;
    uint64_t token;
    enum replay_drive_mode mode;
    double speed, duration;
    double max_failed; /* --max-failed: a count, or with max_failed_pct a percentage */
    int max_failed_pct;
};

/* The options into c. 0: go on; -1: exit with *exit_code (2 for a bad
 * option, 0 after --help), the message printed. */
static int drive_parse(int argc, char **argv, struct drive_config *c, int *exit_code)
{
    static const struct option opts[] = {{"target", required_argument, 0, 'T'},
                                         {"token", required_argument, 0, 't'},
                                         {"mode", required_argument, 0, 'm'},
                                         {"speed", required_argument, 0, 's'},
                                         {"duration", required_argument, 0, 'd'},
                                         {"output", required_argument, 0, 'o'},
                                         {"token-file", required_argument, 0, 'F'},
                                         {"max-failed", required_argument, 0, 'M'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *token_text = NULL, *token_file = NULL;
    *c = (struct drive_config){.mode = REPLAY_DRIVE_INDEPENDENT, .speed = 1};
    *exit_code = 2;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "T:t:F:M:m:s:d:o:h", opts, NULL)) != -1) {
        char *end;
        switch (opt) {
        case 'T':
            c->target = optarg;
            break;
        case 't':
            token_text = optarg;
            break;
        case 'F':
            token_file = optarg;
            break;
        case 'm':
            if (replay_parse_mode(optarg, &c->mode)) {
                fprintf(stderr, "drive: --mode '%s': expected independent or session\n", optarg);
                return -1;
            }
            break;
        case 's':
            c->speed = strtod(optarg, &end);
            if (*end || !(c->speed > 0) || !isfinite(c->speed)) {
                fprintf(stderr, "drive: --speed '%s': expected a positive number\n", optarg);
                return -1;
            }
            break;
        case 'd':
            if (replay_parse_duration(optarg, &c->duration) || !(c->duration > 0)) {
                fprintf(stderr, "drive: --duration '%s': expected e.g. 30s, 500ms, 2m\n", optarg);
                return -1;
            }
            break;
        case 'o':
            c->out = optarg;
            break;
        case 'M':
            if (run_failures_parse_max(optarg, &c->max_failed, &c->max_failed_pct)) {
                fprintf(stderr, "drive: --max-failed '%s': %s\n", optarg,
                        RUN_FAILURES_MAX_EXPECTED);
                return -1;
            }
            break;
        case 'h':
            drive_usage(stdout);
            *exit_code = 0;
            return -1;
        default:
            drive_usage(stderr);
            return -1;
        }
    }
    if (optind + 1 != argc || !c->target || !c->out) {
        fprintf(stderr, "drive: needs PLAN, --target and -o (see --help)\n");
        return -1;
    }
    if (token_file) {
        if (replay_cli_token("drive", token_text, token_file, &c->token))
            return -1;
    } else if (!token_text || replay_token_parse(token_text, &c->token)) {
        fprintf(stderr, "drive: --token: expected 16 hex digits (the replayer's --token)\n");
        return -1;
    }
    c->plan_path = argv[optind];
    return 0;
}

/* The results document of one drive, written to -o. 0 or -1 with the
 * reason printed. */
static int drive_write_results(const struct drive_config *c, const struct plan *p,
                               const struct replay_drive_result *r)
{
    char err[512] = "";
    int rc = -1;
    json_t *root = NULL, *samples = json_array();
    struct replay_label_set ls = {0};
    if (replay_label_set_add(&ls, r->samples, r->nsamples) ||
        replay_results_samples(samples, p, r->samples, r->nsamples, 0)) {
        fprintf(stderr, "drive: out of memory building results\n");
        json_decref(samples);
        goto out;
    }
    struct results_drive doc = {.plan = c->plan_path,
                                .recording_id = p->recording_id,
                                .target = c->target,
                                .mode = c->mode == REPLAY_DRIVE_SESSION ? "session" : "independent",
                                .speed = c->speed,
                                .duration_s = c->duration,
                                .elapsed_s = r->elapsed_s,
                                .requests = r->nsamples,
                                .failed = r->failed,
                                .connections = r->connections_opened,
                                .lateness = replay_results_lateness(r->samples, r->nsamples),
                                .labels = replay_results_labels(p, &ls, 0),
                                .samples = samples};
    root = results_drive_json(&doc);
    if (!root) {
        fprintf(stderr, "drive: out of memory building results\n");
        goto out;
    }
    if (results_save(root, c->out, err, sizeof err)) {
        fprintf(stderr, "drive: %s\n", err);
        goto out;
    }
    rc = 0;
out:
    replay_label_set_free(&ls);
    json_decref(root);
    return rc;
}

/* Some requests failed: which, per label and why, and whether more than
 * --max-failed allows. 0, RUN_EXIT_FAILED when more, 1 out of memory. */
static int drive_failures_report(const struct drive_config *c, const struct plan *p,
                                 const struct replay_drive_result *r)
{
    if (!r->failed)
        return 0;
    struct run_failures f = {0};
    char *text = run_failures_add(&f, r->samples, r->nsamples) ? NULL : run_failures_text(&f, p);
    int over = run_failures_exceed(&f, c->max_failed, c->max_failed_pct);
    if (text)
        fprintf(stderr, "drive: %s; %s --max-failed %g%s%s\n", text, over ? "more than" : "within",
                c->max_failed, c->max_failed_pct ? "%" : "", over ? " (exit status 3)" : "");
    else
        fprintf(stderr, "drive: out of memory naming the failed requests\n");
    free(text);
    run_failures_free(&f);
    return !text ? 1 : over ? RUN_EXIT_FAILED : 0;
}

int cmd_drive(int argc, char **argv)
{
    struct drive_config c;
    int rc;
    if (drive_parse(argc, argv, &c, &rc))
        return rc;
    struct plan *p = replay_cli_load_plan(c.plan_path, "drive");
    if (!p)
        return 1;
    struct replay_drive_options o = {.plan = p,
                                     .target = c.target,
                                     .token = c.token,
                                     .mode = c.mode,
                                     .speed = c.speed,
                                     .duration_s = c.duration};
    struct replay_drive_result r;
    char err[512] = "";
    rc = 1;
    if (replay_drive_run(&o, &r, err, sizeof err)) {
        fprintf(stderr, "drive: %s\n", err);
        goto out;
    }
    if (drive_write_results(&c, p, &r))
        goto out;
    fprintf(stderr, "drive: %zu requests, %llu failed, %.3f s -> %s\n", r.nsamples,
            (unsigned long long)r.failed, r.elapsed_s, c.out);
    if (!r.realtime)
        fprintf(stderr, "drive: %s\n", REPLAY_DRIVE_NOT_REALTIME);
    if (r.failed && r.failed == r.nsamples) {
        fprintf(stderr,
                r.refused ? "drive: %s refused every connection (is the replayer running?)\n"
                          : "drive: every request failed: the replayer closed the connections "
                            "(wrong --token or plan? see its log)\n",
                c.target);
        goto out;
    }
    rc = drive_failures_report(&c, p, &r);
out:
    replay_drive_result_free(&r);
    plan_free(p);
    return rc;
}
