/* regress_cli.h - the `regress` subcommand (regress_cli.c).
 * For tools/preplay_main.c, the dispatcher: the module's entry points and
 * nothing else. Each command takes argv[0] = its own name, prints its own
 * --help, reports bad input as one line on stderr, and returns the exit
 * status (2 usage, 1 failure). Never add anything here but cmd_* entry
 * points. */
#ifndef PREPLAY_REGRESS_CLI_H
#define PREPLAY_REGRESS_CLI_H

int cmd_regress(int argc, char **argv);

#endif
