/* inspect_cli.h - the `info` and `dump` subcommands.
 * For tools/preplay_main.c, the dispatcher: the module's entry points and
 * nothing else, so the dispatcher never sees the module's internals. Each
 * command takes argv[0] = its own name, prints its own --help, reports bad
 * input as one line on stderr, and returns the exit status (2 usage, 1
 * failure). Never add anything here but cmd_* entry points. */
#ifndef PREPLAY_INSPECT_CLI_H
#define PREPLAY_INSPECT_CLI_H

int cmd_info(int argc, char **argv); /* info.c: summarize a trace, a trace dir or a plan */
int cmd_dump(int argc, char **argv); /* dump.c: every event of a trace, one per line */

#endif
