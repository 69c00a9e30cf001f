/* replay_cli.h - helpers the replay, drive and run commands share: plan
 * loading with one-line errors, component lookup, CPU ratio measurement and
 * burn calibration. */
#ifndef PREPLAY_REPLAY_CLI_H
#define PREPLAY_REPLAY_CLI_H

#include "plan.h"

struct plan *replay_cli_load_plan(const char *path, const char *who);
int replay_cli_component(const struct plan *p, const char *name); /* -1 = none */
/* Geometric-mean CPU kernel ratio against the plan's scores (1 with a note
 * when the plan has none). */
double replay_cli_cpu_ratio(const struct plan *p, const char *who, double *lo, double *hi);
/* Calibrates the burn and switches replay_cpu_burn to it. */
int replay_cli_calibrate(const char *who);

/* "30s", "500ms", "2m", "1h", bare seconds. 0 or -1. */
int replay_parse_duration(const char *text, double *seconds);
#include "replay_drive.h"
int replay_parse_mode(const char *text, enum replay_drive_mode *mode);

#endif
