/* preplay_main.c - the `preplay` command: a table of subcommands, like git
 * and perf. Only dispatch lives here: each subcommand is implemented by the
 * module that owns it and declared in that module's *_cli.h, which is all
 * this file may include of a module (tools/check-layout enforces it). */
#include <stdio.h>
#include <string.h>

#include "analyze_cli.h"
#include "compare_cli.h"
#include "inspect_cli.h"
#include "record_cli.h"
#include "replayer_cli.h"
#include "stats_cli.h"

struct preplay_command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct preplay_command preplay_commands[] = {
    {"record", cmd_record, "run a command under the tracer and write its trace"},
    {"collect", cmd_collect, "run a standalone collector for apps started elsewhere"},
    {"info", cmd_info, "summarize a trace file or a trace directory"},
    {"dump", cmd_dump, "print every event of a trace, one per line"},
    {"stats", cmd_stats, "PT4Cloud statistics: stop rule, similarity of samples"},
    {"analyze", cmd_analyze, "rebuild request blocks from traces and write a replay plan"},
    {"calibrate", cmd_calibrate, "calibrate the CPU burn and score this machine's CPU"},
    {"prepare", cmd_prepare, "create a plan's dummy files for replay"},
    {"replay", cmd_replay, "serve one component's event blocks (replay server)"},
    {"drive", cmd_drive, "send a plan's requests to a replayer, record response times"},
    {"run", cmd_run, "replay a plan interval by interval until PT4Cloud says stable"},
    {"remote-agent", cmd_remote_agent,
     "the remote end of `preplay run --hosts` (started over ssh)"},
    {"compare", cmd_compare, "compare runs on instance types: SLO verdict, cost, HTML report"},
};

#define PREPLAY_NCOMMANDS (sizeof preplay_commands / sizeof preplay_commands[0])

static void preplay_usage(FILE *out)
{
    fprintf(out, "usage: preplay COMMAND [ARGS...]\n\n"
                 "Predict how an application will perform on another machine by\n"
                 "recording what it does and replaying it there.\n\ncommands:\n");
    for (size_t i = 0; i < PREPLAY_NCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", preplay_commands[i].name, preplay_commands[i].summary);
    fprintf(out, "\nRun `preplay COMMAND --help` for the options of a command.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        preplay_usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        preplay_usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("preplay %s\n", PREPLAY_VERSION);
        return 0;
    }
    for (size_t i = 0; i < PREPLAY_NCOMMANDS; i++)
        if (!strcmp(argv[1], preplay_commands[i].name))
            return preplay_commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "preplay: unknown command '%s' (see preplay --help)\n", argv[1]);
    return 2;
}
