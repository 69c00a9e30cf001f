/* commands.h - the entry point of every `preplay` subcommand.
 *
 * Each module implements its subcommands as `int cmd_NAME(int argc, char **argv)`
 * (argv[0] is the subcommand name) returning the process exit status, and
 * lists them here; tools/preplay_main.c dispatches to them. A command prints
 * its own --help and reports bad input as one line on stderr, exit 2 for
 * usage errors and 1 for failures. */
#ifndef PREPLAY_COMMANDS_H
#define PREPLAY_COMMANDS_H

int cmd_record(int argc, char **argv);       /* tracer/collector/record_cli.c */
int cmd_collect(int argc, char **argv);      /* tracer/collector/record_cli.c */
int cmd_info(int argc, char **argv);         /* inspect/info.c */
int cmd_dump(int argc, char **argv);         /* inspect/dump.c */
int cmd_stats(int argc, char **argv);        /* stats/stats_cli.c */
int cmd_analyze(int argc, char **argv);      /* analyzer/analyze_cli.c */
int cmd_calibrate(int argc, char **argv);    /* replayer/calibrate_cli.c */
int cmd_prepare(int argc, char **argv);      /* replayer/prepare_cli.c */
int cmd_replay(int argc, char **argv);       /* replayer/replay_cli.c */
int cmd_drive(int argc, char **argv);        /* replayer/drive_cli.c */
int cmd_run(int argc, char **argv);          /* replayer/run_cli.c */
int cmd_remote_agent(int argc, char **argv); /* replayer/run_remote.c */
int cmd_compare(int argc, char **argv);      /* compare/compare_cli.c */

#endif
