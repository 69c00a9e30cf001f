/* info_plan.h - `preplay info` on a replay plan (info_plan.c). */
#ifndef PREPLAY_INFO_PLAN_H
#define PREPLAY_INFO_PLAN_H

/* Prints the summary of the plan at path (JSON when as_json) on stdout.
 * Returns 0, or INSPECT_EXIT_DAMAGED when the plan cannot be read (said on
 * stderr) or stdout fails. */
int info_plan_print(const char *path, int as_json);

#endif
