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

static void drive_usage(FILE *out)
{
    fprintf(out,
            "usage: preplay drive PLAN --target HOST:PORT --token T\n"
            "                     [--mode independent|session] [--speed X] [--duration T]\n"
            "                     -o RESULTS\n\n"
            "Send the plan's front-end requests to a replayer and record every response time.\n"
            "  --mode independent  open loop at the recorded arrival times (default)\n"
            "  --mode session      closed loop per session, keeping think times\n"
            "  --speed X           divide arrival offsets and think times by X (default 1)\n"
            "  --duration T        repeat the schedule for T (e.g. 30s, 2m); default one pass\n"
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

int cmd_drive(int argc, char **argv)
{
    static const struct option opts[] = {
        {"target", required_argument, 0, 'T'},   {"token", required_argument, 0, 't'},
        {"mode", required_argument, 0, 'm'},     {"speed", required_argument, 0, 's'},
        {"duration", required_argument, 0, 'd'}, {"output", required_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0}};
    const char *target = NULL, *token_text = NULL, *out = NULL;
    enum replay_drive_mode mode = REPLAY_DRIVE_INDEPENDENT;
    double speed = 1, duration = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "T:t:m:s:d:o:h", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'T':
            target = optarg;
            break;
        case 't':
            token_text = optarg;
            break;
        case 'm':
            if (replay_parse_mode(optarg, &mode)) {
                fprintf(stderr, "drive: --mode '%s': expected independent or session\n", optarg);
                return 2;
            }
            break;
        case 's':
            speed = strtod(optarg, &end);
            if (*end || !(speed > 0) || !isfinite(speed)) {
                fprintf(stderr, "drive: --speed '%s': expected a positive number\n", optarg);
                return 2;
            }
            break;
        case 'd':
            if (replay_parse_duration(optarg, &duration) || !(duration > 0)) {
                fprintf(stderr, "drive: --duration '%s': expected e.g. 30s, 500ms, 2m\n", optarg);
                return 2;
            }
            break;
        case 'o':
            out = optarg;
            break;
        case 'h':
            drive_usage(stdout);
            return 0;
        default:
            drive_usage(stderr);
            return 2;
        }
    }
    if (optind + 1 != argc || !target || !out) {
        fprintf(stderr, "drive: needs PLAN, --target and -o (see --help)\n");
        return 2;
    }
    uint64_t token;
    if (!token_text || replay_token_parse(token_text, &token)) {
        fprintf(stderr, "drive: --token: expected 16 hex digits (the replayer's --token)\n");
        return 2;
    }
    struct plan *p = replay_cli_load_plan(argv[optind], "drive");
    if (!p)
        return 1;
    struct replay_drive_options o = {.plan = p,
                                     .target = target,
                                     .token = token,
                                     .mode = mode,
                                     .speed = speed,
                                     .duration_s = duration};
    struct replay_drive_result r;
    char err[512] = "";
    int rc = 1;
    json_t *root = NULL;
    struct replay_label_set ls = {0};
    if (replay_drive_run(&o, &r, err, sizeof err)) {
        fprintf(stderr, "drive: %s\n", err);
        goto out;
    }
    json_t *samples = json_array();
    if (replay_label_set_add(&ls, r.samples, r.nsamples) ||
        replay_results_samples(samples, p, r.samples, r.nsamples, 0)) {
        fprintf(stderr, "drive: out of memory building results\n");
        json_decref(samples);
        goto out;
    }
    struct results_drive doc = {.plan = argv[optind],
                                .recording_id = p->recording_id,
                                .target = target,
                                .mode = mode == REPLAY_DRIVE_SESSION ? "session" : "independent",
                                .speed = speed,
                                .duration_s = duration,
                                .elapsed_s = r.elapsed_s,
                                .requests = r.nsamples,
                                .failed = r.failed,
                                .connections = r.connections_opened,
                                .lateness = replay_results_lateness(r.samples, r.nsamples),
                                .labels = replay_results_labels(p, &ls, 0),
                                .samples = samples};
    root = results_drive_json(&doc);
    if (!root) {
        fprintf(stderr, "drive: out of memory building results\n");
        goto out;
    }
    if (results_save(root, out, err, sizeof err)) {
        fprintf(stderr, "drive: %s\n", err);
        goto out;
    }
    fprintf(stderr, "drive: %zu requests, %llu failed, %.3f s -> %s\n", r.nsamples,
            (unsigned long long)r.failed, r.elapsed_s, out);
    if (r.failed && r.failed == r.nsamples) {
        fprintf(stderr,
                r.refused ? "drive: %s refused every connection (is the replayer running?)\n"
                          : "drive: every request failed: the replayer closed the connections "
                            "(wrong --token or plan? see its log)\n",
                target);
        goto out;
    }
    rc = 0;
out:
    replay_label_set_free(&ls);
    json_decref(root);
    replay_drive_result_free(&r);
    plan_free(p);
    return rc;
}
