/* preplay_main.c - the `preplay` command: a table of subcommands, like git
 * and perf. Only dispatch lives here: each subcommand is implemented by the
 * module that owns it and declared in that module's *_cli.h, which is all
 * this file may include of a module (tools/check-layout enforces it). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "preplay_build_info.h"

#include "analyze_cli.h"
#include "compare_cli.h"
#include "inspect_cli.h"
#include "record_cli.h"
#include "regress_cli.h"
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
    {"duet", cmd_duet, "replay plans A and B side by side on two cores: is B slower?"},
    {"remote-agent", cmd_remote_agent,
     "the remote end of `preplay run --hosts` (started over ssh)"},
    {"compare", cmd_compare, "compare runs on instance types: SLO verdict, cost, HTML report"},
    {"regress", cmd_regress, "which counters changed between baseline runs and a target run"},
};

#define PREPLAY_NCOMMANDS (sizeof preplay_commands / sizeof preplay_commands[0])

static void preplay_usage(FILE *out)
{
    fprintf(out, "usage: preplay COMMAND [ARGS...]\n\n"
                 "Predict how an application will perform on another machine by\n"
                 "recording what it does and replaying it there.\n\ncommands:\n");
    for (size_t i = 0; i < PREPLAY_NCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", preplay_commands[i].name, preplay_commands[i].summary);
    fprintf(out, "\nRun `preplay COMMAND --help` for the options of a command,\n"
                 "`preplay help COMMAND` for its manual page.\n");
}

static const struct preplay_command *preplay_find(const char *name)
{
    for (size_t i = 0; i < PREPLAY_NCOMMANDS; i++)
        if (!strcmp(name, preplay_commands[i].name))
            return &preplay_commands[i];
    return NULL;
}

/* The first readable DIR/FILE among the directories tried, relative to
 * the directory of the running preplay: the installed layout (bin/ beside
 * share/) first, then the build tree (man/, doc/ beside the binary). */
static int preplay_find_beside_exe(const char *installed, const char *build_tree, const char *file,
                                   char *out, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -1;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -1;
    *slash = 0;
    const char *dirs[] = {installed, build_tree};
    for (size_t i = 0; i < 2; i++) {
        snprintf(out, cap, "%s/%s/%s", exe, dirs[i], file);
        if (access(out, R_OK) == 0)
            return 0;
    }
    return -1;
}

static int preplay_cat(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, stdout);
    fclose(f);
    return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -1;
}

/* `preplay help COMMAND`: the command's manual page through man(1); where
 * man is not installed, the page's text (docs/preplay-COMMAND.md, which
 * the page is made from); with neither, the command's --help. */
static int preplay_help(const char *name)
{
    char file[128], path[PATH_MAX + 160];
    if (!strcmp(name, "preplay"))
        snprintf(file, sizeof file, "preplay");
    else if (preplay_find(name))
        snprintf(file, sizeof file, "preplay-%s", name);
    else {
        fprintf(stderr, "preplay help: unknown command '%s' (see preplay --help)\n", name);
        return 2;
    }
    char page[140];
    snprintf(page, sizeof page, "%s.1", file);
    if (preplay_find_beside_exe("../share/man/man1", "man/man1", page, path, sizeof path) == 0) {
        fflush(stdout);
        execlp("man", "man", "-l", path, (char *)NULL);
        if (errno != ENOENT) {
            fprintf(stderr, "preplay help: cannot run man: %s\n", strerror(errno));
            return 1;
        }
    }
    char doc[140];
    snprintf(doc, sizeof doc, "%s.md", file);
    if (preplay_find_beside_exe("../share/doc/preplay", "doc", doc, path, sizeof path) == 0)
        return preplay_cat(path) == 0 ? 0 : 1;
    fprintf(stderr, "preplay help: no manual page for '%s' installed; its --help:\n\n", name);
    if (!strcmp(name, "preplay")) {
        preplay_usage(stdout);
        return 0;
    }
    char *argv[] = {(char *)name, "--help", NULL};
    return preplay_find(name)->run(2, argv);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        preplay_usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "help") && argc > 2)
        return preplay_help(argv[2]);
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        preplay_usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("preplay %s (commit %s)\n", PREPLAY_BUILD_VERSION, PREPLAY_BUILD_COMMIT);
        return 0;
    }
    const struct preplay_command *cmd = preplay_find(argv[1]);
    if (cmd)
        return cmd->run(argc - 1, argv + 1);
    fprintf(stderr, "preplay: unknown command '%s' (see preplay --help)\n", argv[1]);
    return 2;
}
