/* stats_cli.h - the `stats` subcommand (stats_cli.c).
 * For tools/preplay_main.c, the dispatcher: the module's entry points and
 * nothing else, so the dispatcher never sees the module's internals. Each
 * command takes argv[0] = its own name, prints its own --help, reports bad
 * input as one line on stderr, and returns the exit status (2 usage, 1
 * failure). Never add anything here but cmd_* entry points. */
#ifndef PREPLAY_STATS_CLI_H
#define PREPLAY_STATS_CLI_H

int cmd_stats(int argc, char **argv);

#endif
