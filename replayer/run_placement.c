/* run_placement.c - where a run's clients and database were (results
 * "placement"): read from /proc, getifaddrs and the environment
 * tools/emulate sets, at the end of the run while the replayers and the
 * DB still run. Whatever cannot be read is reported unknown (null), never
 * guessed. Must never print or fail the run: it only describes it. */
#include "run_placement.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "results_writer.h"

/* MariaDB Connector/C's socket for "localhost" without ?socket= (Debian). */
#define RUN_PLACEMENT_DEFAULT_SOCKET "/run/mysqld/mysqld.sock"

/* 1 when the comma-separated controller list names ctl exactly. */
static int run_placement_has_controller(const char *list, size_t n, const char *ctl)
{
    size_t cl = strlen(ctl);
    for (const char *p = list, *end = list + n; p < end;) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        size_t len = c ? (size_t)(c - p) : (size_t)(end - p);
        if (len == cl && !memcmp(p, ctl, cl))
            return 1;
        p += len + 1;
    }
    return 0;
}

int run_placement_cpu_cgroup(pid_t pid, char *out, size_t len)
{
    char path[64], line[4352], v2[4096] = "";
    if (pid)
        snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
    else
        snprintf(path, sizeof path, "/proc/self/cgroup");
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        if (c2 == c1 + 1 && !strncmp(line, "0:", 2))
            snprintf(v2, sizeof v2, "%s", c2 + 1);
        else if (run_placement_has_controller(c1 + 1, (size_t)(c2 - c1 - 1), "cpu"))
            found = snprintf(out, len, "%s", c2 + 1) >= 0;
    }
    fclose(f);
    if (!found && v2[0])
        found = snprintf(out, len, "%s", v2) >= 0;
    return found ? 0 : -1;
}

/* 1 when a (sockaddr) is loopback or one of this namespace's addresses. */
static int run_placement_addr_is_local(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET &&
        (ntohl(((const struct sockaddr_in *)a)->sin_addr.s_addr) >> 24) == 127)
        return 1;
    if (a->sa_family == AF_INET6 &&
        IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a)->sin6_addr))
        return 1;
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs))
        return 0;
    int local = 0;
    for (struct ifaddrs *i = ifs; i && !local; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != a->sa_family)
            continue;
        if (a->sa_family == AF_INET)
            local = ((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
                    ((const struct sockaddr_in *)a)->sin_addr.s_addr;
        else
            local = !memcmp(&((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
                            &((const struct sockaddr_in6 *)a)->sin6_addr, sizeof(struct in6_addr));
    }
    freeifaddrs(ifs);
    return local;
}

const char *run_placement_db_where(const char *host, const char *socket_path)
{
    if ((socket_path && socket_path[0]) || !host[0] || !strcmp(host, "localhost"))
        return "local";
    const char *emu_host = getenv("PREPLAY_EMU_HOST_ADDR");
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, NULL, &hints, &res))
        return "remote"; /* the replayers could not have reached it either */
    const char *where = "remote";
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        char text[INET6_ADDRSTRLEN] = "";
        if (a->ai_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)a->ai_addr)->sin_addr, text, sizeof text);
        if (emu_host && text[0] && !strcmp(text, emu_host))
            where = "host";
        else if (run_placement_addr_is_local(a->ai_addr))
            where = "local";
        if (strcmp(where, "remote"))
            break;
    }
    freeaddrinfo(res);
    return where;
}

/* The inode of the socket listening on port in /proc/net/tcp or tcp6, or
 * on path in /proc/net/unix; 0 when none. */
static unsigned long run_placement_listener_inode(int port, const char *socket_path)
{
    static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6", "/proc/net/unix"};
    char line[4352];
    for (int k = socket_path ? 2 : 0; k < (socket_path ? 3 : 2); k++) {
        FILE *f = fopen(files[k], "r");
        if (!f)
            continue;
        unsigned long found = 0;
        while (!found && fgets(line, sizeof line, f)) {
            if (socket_path) { /* Num RefCount Protocol Flags Type St Inode Path */
                unsigned long inode;
                char p[4096];
                if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %4095s", &inode, p) == 2 &&
                    !strcmp(p, socket_path))
                    found = inode;
            } else { /* sl local:port remote:port st ... uid timeout inode */
                unsigned lport, st;
                unsigned long inode;
                if (sscanf(line, " %*s %*[0-9A-Fa-f]:%x %*s %x %*s %*s %*s %*s %*s %lu", &lport,
                           &st, &inode) == 3 &&
                    st == 0x0A && (int)lport == port)
                    found = inode;
            }
        }
        fclose(f);
        if (found)
            return found;
    }
    return 0;
}

pid_t run_placement_listener_pid(int port, const char *socket_path)
{
    unsigned long inode = run_placement_listener_inode(port, socket_path);
    if (!inode)
        return 0;
    char want[64], path[300], link[128];
    snprintf(want, sizeof want, "socket:[%lu]", inode);
    DIR *proc = opendir("/proc");
    pid_t owner = 0;
    struct dirent *pe;
    while (proc && !owner && (pe = readdir(proc))) {
        char *end;
        long pid = strtol(pe->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%ld/fd", pid);
        DIR *fds = opendir(path);
        struct dirent *fe;
        while (fds && !owner && (fe = readdir(fds))) {
            snprintf(path, sizeof path, "/proc/%ld/fd/%.200s", pid, fe->d_name);
            ssize_t n = readlink(path, link, sizeof link - 1);
            if (n > 0 && (link[n] = 0, !strcmp(link, want)))
                owner = (pid_t)pid;
        }
        if (fds)
            closedir(fds);
    }
    if (proc)
        closedir(proc);
    return owner;
}

json_t *run_placement_json(pid_t frontend_pid, const char *db_host, const char *db_port,
                           const char *db_socket)
{
    char host[256] = "", mine[4096], fe[4096], dbcg[4096], addr[600];
    int have_mine = run_placement_cpu_cgroup(0, mine, sizeof mine) == 0;
    if (gethostname(host, sizeof host - 1))
        host[0] = 0;
    const char *emu = getenv("PREPLAY_EMU_TYPE");
    struct results_placement pl = {.emulated_type = emu && emu[0] ? emu : NULL,
                                   .client_host = host[0] ? host : NULL,
                                   .client_cpu_cgroup = have_mine ? mine : NULL,
                                   .client_in_type = frontend_pid ? -1 : 0,
                                   .db_in_type = -1};
    int have_fe = frontend_pid && run_placement_cpu_cgroup(frontend_pid, fe, sizeof fe) == 0;
    if (have_fe && have_mine)
        pl.client_in_type = !strcmp(mine, fe);
    /* The type is where the replayers run: the controller may have left it
     * (a client outside the instance: the accuracy benchmarks move it to
     * the host's cgroups once the replayers started), and a DB beside the
     * replayers is still inside the type. */
    const char *type_cg = have_fe ? fe : have_mine ? mine : NULL;
    if (db_host) {
        int is_unix = (db_socket && db_socket[0]) || !db_host[0] || !strcmp(db_host, "localhost");
        const char *sock = db_socket && db_socket[0] ? db_socket : RUN_PLACEMENT_DEFAULT_SOCKET;
        int port = db_port && db_port[0] ? atoi(db_port) : 3306;
        if (is_unix)
            snprintf(addr, sizeof addr, "%s", sock);
        else
            snprintf(addr, sizeof addr, strchr(db_host, ':') ? "[%s]:%d" : "%s:%d", db_host, port);
        pl.has_db = 1;
        pl.db_address = addr;
        pl.db_transport = is_unix ? "unix" : "tcp";
        pl.db_where = run_placement_db_where(db_host, is_unix ? sock : NULL);
        pid_t owner = 0;
        if (!strcmp(pl.db_where, "local"))
            owner = run_placement_listener_pid(port, is_unix ? sock : NULL);
        if (owner && run_placement_cpu_cgroup(owner, dbcg, sizeof dbcg) == 0)
            pl.db_cpu_cgroup = dbcg;
        if (strcmp(pl.db_where, "local"))
            pl.db_in_type = 0; /* on the emulation's host or another machine */
        else if (!pl.emulated_type)
            pl.db_in_type = 1; /* this machine: the candidate itself */
        else if (pl.db_cpu_cgroup && type_cg)
            pl.db_in_type = !strcmp(pl.db_cpu_cgroup, type_cg);
    }
    return results_placement_json(&pl);
}
