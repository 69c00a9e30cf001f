/* replayer_cli.h - the replayer's subcommands, one per file.
 * (replay_cli.h is something else: helpers the replay, drive and run
 * commands share.)
 * For tools/preplay_main.c, the dispatcher: the module's entry points and
 * nothing else, so the dispatcher never sees the module's internals. Each
 * command takes argv[0] = its own name, prints its own --help, reports bad
 * input as one line on stderr, and returns the exit status (2 usage, 1
 * failure). Never add anything here but cmd_* entry points. */
#ifndef PREPLAY_REPLAYER_CLI_H
#define PREPLAY_REPLAYER_CLI_H

int cmd_calibrate(int argc, char **argv);    /* calibrate_cli.c */
int cmd_prepare(int argc, char **argv);      /* prepare_cli.c */
int cmd_replay(int argc, char **argv);       /* replay_cli.c */
int cmd_drive(int argc, char **argv);        /* drive_cli.c */
int cmd_run(int argc, char **argv);          /* run_cli.c */
int cmd_duet(int argc, char **argv);         /* duet_cli.c */
int cmd_remote_agent(int argc, char **argv); /* run_remote.c */

#endif
