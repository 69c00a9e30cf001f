/* mem_budget.c - the memory budget of the plan and trace readers
 * (mem_budget.h): what the machine has available (MemAvailable, or the
 * memory cgroup's room) and a counter charged before each allocation a
 * file's counts decide. Reads /proc and /sys only; never allocates beyond
 * stdio's, never prints. */
#include "mem_budget.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* the live budgets of the process: what they hold together, and 7/8 of
 * what was available when the first of those open now began */
static pthread_mutex_t mem_budget_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t mem_budget_live_used, mem_budget_live_max;

/* A number from a file of one line ("max": none), or UINT64_MAX. */
static uint64_t mem_budget_file_number(const char *path)
{
    FILE *f = fopen(path, "re");
    unsigned long long v;
    int ok = f && fscanf(f, "%llu", &v) == 1;
    if (f)
        fclose(f);
    return ok ? (uint64_t)v : UINT64_MAX;
}

/* Room left under a memory cgroup limit: v2 memory.max - memory.current,
 * v1 memory.limit_in_bytes - memory.usage_in_bytes (UINT64_MAX: none). */
static uint64_t mem_budget_cgroup_room(void)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    char line[1024], path[1200];
    uint64_t room = UINT64_MAX;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *ctrl = strchr(line, ':'), *cg = ctrl ? strchr(ctrl + 1, ':') : NULL;
        if (!cg)
            continue;
        *cg++ = '\0';
        uint64_t max = UINT64_MAX, used = 0;
        if (!strcmp(ctrl + 1, "")) { /* v2: 0::/path */
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.max", cg);
            max = mem_budget_file_number(path);
            snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.current", cg);
            used = mem_budget_file_number(path);
        } else if (strstr(ctrl + 1, "memory")) {
            snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.limit_in_bytes", cg);
            max = mem_budget_file_number(path);
            snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.usage_in_bytes", cg);
            used = mem_budget_file_number(path);
        }
        if (max != UINT64_MAX && used != UINT64_MAX) {
            uint64_t r = max > used ? max - used : 0;
            room = r < room ? r : room;
        }
    }
    if (f)
        fclose(f);
    return room;
}

uint64_t mem_budget_available(void)
{
    uint64_t avail = UINT64_MAX;
    FILE *f = fopen("/proc/meminfo", "re");
    char line[256];
    unsigned long long kb;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            avail = (uint64_t)kb * 1024;
    if (f)
        fclose(f);
    uint64_t room = mem_budget_cgroup_room();
    return room < avail ? room : avail;
}

void mem_budget_init(struct mem_budget *b, uint64_t max)
{
    b->used = 0;
    b->live = max == 0;
    b->max = max ? max : mem_budget_available();
}

int mem_budget_charge(struct mem_budget *b, uint64_t bytes)
{
    if (!bytes)
        return 0;
    if (b->live) {
        pthread_mutex_lock(&mem_budget_lock);
        if (!mem_budget_live_used) { /* 1/8 stays for the rest of the process */
            uint64_t avail = mem_budget_available();
            mem_budget_live_max = avail - avail / 8;
        }
        uint64_t now = mem_budget_available(), others = mem_budget_live_used - b->used;
        uint64_t mine = mem_budget_live_max > others ? mem_budget_live_max - others : 0;
        b->max = now + b->used < mine ? now + b->used : mine; /* this one's, in all */
        int ok = bytes <= now && b->used <= mine && bytes <= mine - b->used;
        if (ok) {
            mem_budget_live_used += bytes;
            b->used += bytes;
        }
        pthread_mutex_unlock(&mem_budget_lock);
        return ok ? 0 : -1;
    }
    if (bytes > b->max || b->used > b->max - bytes)
        return -1;
    b->used += bytes;
    return 0;
}

void mem_budget_uncharge(struct mem_budget *b, uint64_t bytes)
{
    if (bytes > b->used)
        bytes = b->used;
    if (b->live) {
        pthread_mutex_lock(&mem_budget_lock);
        mem_budget_live_used -= bytes;
        pthread_mutex_unlock(&mem_budget_lock);
    }
    b->used -= bytes;
}

void mem_budget_release(struct mem_budget *b)
{
    if (b->live) {
        pthread_mutex_lock(&mem_budget_lock);
        mem_budget_live_used -= b->used;
        pthread_mutex_unlock(&mem_budget_lock);
    }
    b->used = 0;
}

double mem_budget_mb(const struct mem_budget *b)
{
    return (double)b->max / 1e6;
}
