/* info_summary.h - the per component and per request label summary `preplay
 * info DIR` prints before each process in detail, built from the processes'
 * JSON objects (docs/preplay-info.md). Never changes the objects it reads. */
#ifndef PREPLAY_INFO_SUMMARY_H
#define PREPLAY_INFO_SUMMARY_H

#include <jansson.h>

/* [{component, processes, threads, events, cpu_ns, duration_ns, lost_events,
 * bytes_on_disk, bytes{...}, labelled_requests}] by component name, from an
 * array of info's process objects. */
json_t *info_summary_components(json_t *process_list);
/* [{component, label, count}]: LABEL events per component and label, by
 * component, then most requests first. */
json_t *info_summary_labels(json_t *process_list);
/* Both as text: "by component:" and "by request label:" sections. */
void info_summary_print(json_t *process_list);

#endif
