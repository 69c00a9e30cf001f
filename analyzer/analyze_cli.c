/* analyze_cli.c - `preplay analyze DIR... -o PLAN`: runs the dependency
 * extraction and prints a one-line summary. Argument handling and
 * messages only; the work is in deps_analyze.c. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze_cli.h"
#include "label_rules.h"
#include "preplay_analyze.h"

static void analyze_usage(FILE *out)
{
    fprintf(out,
            "usage: preplay analyze DIR... -o PLAN [--salvage] [--window-ms N] [--grace-ms N]\n"
            "                       [--label NAME=REGEX]... [--label-file FILE] [--drop-query]\n"
            "                       [--blocks FILE] [--quiet]\n"
            "Rebuilds which events served which request from the trace directories of one\n"
            "recording (one directory per tier or host) and writes the replay plan.\n"
            "  -o, --output PLAN   plan file to write (atomically)\n"
            "  --salvage           analyze what is valid in damaged traces (skip a\n"
            "                      directory's unreadable ones with a warning)\n"
            "  --window-ms N       per-file reordering window, at most (default 200; it adapts\n"
            "                      to the disorder seen, from 20 ms)\n"
            "  --grace-ms N        wait for a connection's peer end this long (default 2000)\n"
            "  --label NAME=REGEX  label requests whose label as recorded (\"METHOD /path\", with\n"
            "                      \"?query\" if recorded with --keep-query) matches the POSIX\n"
            "                      extended REGEX as NAME (repeatable, first match wins)\n"
            "  --label-file FILE   read --label rules from FILE, one NAME=REGEX a line\n"
            "  --drop-query        cut the query string off labels no rule matched\n"
            "  --blocks FILE       also write every block and request as TSV (debugging)\n"
            "  -q, --quiet         no summary line\n");
}

/* The --label rules of this command: freed when it returns (cmd_analyze). */
static struct label_rules *analyze_label_rules;

/* Adds the rule (--label, c 'L') or the file's rules (--label-file); 0, or
 * 2 after saying which rule is wrong. */
static int analyze_add_labels(struct analyze_options *opt, int c, const char *arg)
{
    char err[640];
    if (!analyze_label_rules && !(analyze_label_rules = label_rules_new())) {
        fprintf(stderr, "preplay analyze: out of memory\n");
        return 2;
    }
    int bad = c == 'L' ? label_rules_add(analyze_label_rules, arg, err, sizeof err)
                       : label_rules_add_file(analyze_label_rules, arg, err, sizeof err);
    if (bad) {
        fprintf(stderr, "preplay analyze: %s %s\n", c == 'L' ? "--label" : "--label-file", err);
        return 2;
    }
    opt->label_rules = analyze_label_rules;
    return 0;
}

static int analyze_command(int argc, char **argv)
{
    static const struct option longopts[] = {{"output", required_argument, NULL, 'o'},
                                             {"label", required_argument, NULL, 'L'},
                                             {"label-file", required_argument, NULL, 'F'},
                                             {"drop-query", no_argument, NULL, 'D'},
                                             {"salvage", no_argument, NULL, 's'},
                                             {"window-ms", required_argument, NULL, 'w'},
                                             {"grace-ms", required_argument, NULL, 'g'},
                                             {"blocks", required_argument, NULL, 'b'},
                                             {"quiet", no_argument, NULL, 'q'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    struct analyze_options opt = {0};
    const char *out = NULL;
    int quiet = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 's':
            opt.salvage = 1;
            break;
        case 'w':
        case 'g': {
            unsigned long long v = strtoull(optarg, &end, 10);
            if (!*optarg || *end || v == 0 || v > 3600000) {
                fprintf(stderr, "preplay analyze: --%s wants milliseconds (1..3600000), got '%s'\n",
                        c == 'w' ? "window-ms" : "grace-ms", optarg);
                return 2;
            }
            if (c == 'w')
                opt.window_ns = v * 1000000ull;
            else
                opt.grace_ns = v * 1000000ull;
            break;
        }
        case 'b':
            opt.blocks_path = optarg;
            break;
        case 'L':
        case 'F':
            if (analyze_add_labels(&opt, c, optarg))
                return 2;
            break;
        case 'D':
            opt.drop_query = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            analyze_usage(stdout);
            return 0;
        default:
            analyze_usage(stderr);
            return 2;
        }
    }
    if (!out || optind >= argc) {
        fprintf(stderr, "preplay analyze: %s\n",
                !out ? "missing -o PLAN"
                     : "missing trace directory (preplay analyze DIR... -o PLAN)");
        return 2;
    }
    opt.progress = isatty(STDERR_FILENO) && !quiet ? stderr : NULL;
    opt.warnings = stderr;
    struct analyze_result r;
    char err[1024];
    if (analyze_run((const char *const *)argv + optind, argc - optind, out, &opt, &r, err,
                    sizeof err) != 0) {
        fprintf(stderr, "preplay analyze: %s\n", err);
        return 1;
    }
    if (!quiet)
        printf("%s: %" PRIu64 " requests, %" PRIu64 " blocks, %" PRIu64 " calls, %" PRIu64
               " external calls, %" PRIu64 " DB ops; coverage %.2f%% (%" PRIu64 " of %" PRIu64
               " in-request events; %.2f%% of all %" PRIu64 " resource events), %" PRIu64
               " unmatched bytes, %u violations (%" PRIu64 " events)\n",
               out, r.requests, r.blocks, r.calls, r.externals, r.db_ops, r.coverage * 100.0,
               r.covered_events, r.window_events, r.coverage_all * 100.0, r.resource_events,
               r.unmatched_bytes, r.violations, r.events);
    if (!quiet) {
        char outside[1024];
        analyze_outside_format(&r, outside, sizeof outside);
        printf("%s\n", outside);
    }
    if (r.db_cut)
        fprintf(stderr,
                "preplay analyze: warning: %" PRIu64 " DB ops were recorded cut (longer than the "
                "recording's --db-max-statement): they replay as waits of their recorded time, "
                "not as SQL; record with a larger --db-max-statement to replay them\n",
                r.db_cut);
    return 0;
}

int cmd_analyze(int argc, char **argv)
{
    int rc = analyze_command(argc, argv);
    label_rules_free(analyze_label_rules);
    analyze_label_rules = NULL;
    return rc;
}
