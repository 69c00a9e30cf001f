/* run_placement.h - where a `preplay run` had its clients and its
 * database (results "placement", formats/RESULTS.md): the driver's host
 * and CPU cgroup against the front-end replayer's, the --db endpoint's
 * address, whether it is on this machine, on the host outside a
 * tools/emulate type or elsewhere, and the CPU cgroup of the process
 * listening there when it can be found in /proc. Read from the system as
 * it is, never assumed from options; unknown stays unknown. Never prints. */
#ifndef PREPLAY_RUN_PLACEMENT_H
#define PREPLAY_RUN_PLACEMENT_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

/* The CPU cgroup path of pid (0: this process) from /proc/PID/cgroup: the
 * v1 hierarchy whose controllers include "cpu", else the v2 line. 0, or
 * -1 when it cannot be read. */
int run_placement_cpu_cgroup(pid_t pid, char *out, size_t len);

/* Where the DB of a --db URL is: "local" (a unix socket, loopback, or an
 * address of this network namespace), "host" (PREPLAY_EMU_HOST_ADDR: the
 * host outside the emulated type) or "remote". host "" or "localhost"
 * with no port counts as the default unix socket. */
const char *run_placement_db_where(const char *host, const char *socket_path);

/* The pid of a process holding the socket listening on TCP port `port`
 * (any local address) or, with socket_path, on that unix socket path; 0
 * when none is found (not in this namespace, not readable). */
pid_t run_placement_listener_pid(int port, const char *socket_path);

/* The "placement" object (results_placement_json). frontend_pid: the local
 * front-end replayer, 0 when it runs elsewhere (--hosts). db_host,
 * db_port, db_socket: the parsed --db URL, db_host NULL without --db.
 * NULL on allocation failure. */
json_t *run_placement_json(pid_t frontend_pid, const char *db_host, const char *db_port,
                           const char *db_socket);

#endif
