/* compare_placement.c - where each run had its database and its clients
 * (results "placement", formats/RESULTS.md), said in words for the report
 * and as JSON for `compare --json`, and whether the runs placed them
 * alike: the accuracy rules compare a prediction with a truth only when
 * both put the DB and the clients on the same side of the type. Must never
 * state a placement the results did not record: unknown stays unknown. */
#include "compare_placement.h"

#include <stdio.h>
#include <string.h>

static int compare_placement_put(char *buf, size_t len, size_t *n, const char *s)
{
    int w = snprintf(buf + *n, len - *n, "%s", s);
    if (w < 0 || (size_t)w >= len - *n) {
        *n = len - 1;
        return -1;
    }
    *n += (size_t)w;
    return 0;
}

/* ", inside the type's CPU cgroup" and its kin, by tristate. */
static const char *compare_placement_inside(int in_type, int emulated)
{
    if (in_type < 0)
        return "CPU cgroup not known";
    if (emulated)
        return in_type ? "inside the emulated type's CPU cgroup"
                       : "outside the emulated type's CPU cgroup";
    return in_type ? "sharing the candidate's CPU" : "not on the candidate's CPU";
}

const char *compare_placement_db_text(const struct results_placement_read *pl, char *buf,
                                      size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    if (!pl->present)
        return "not in the results (written before results 2.1)";
    if (!pl->has_db)
        return "none (run without --db)";
    int emu = pl->emulated_type != NULL;
    const char *where = !pl->db_where                    ? "where not known"
                        : !strcmp(pl->db_where, "local") ? (emu ? "on this machine, in the type's "
                                                                  "network namespace"
                                                                : "on this machine")
                        : !strcmp(pl->db_where, "host")
                            ? "on the host, outside the emulated type (its veth address)"
                            : "on another machine";
    compare_placement_put(buf, len, &n, pl->db_address ? pl->db_address : "(address not known)");
    compare_placement_put(buf, len, &n,
                          pl->db_transport && !strcmp(pl->db_transport, "unix") ? " (unix socket), "
                                                                                : " (TCP), ");
    compare_placement_put(buf, len, &n, where);
    compare_placement_put(buf, len, &n, ", ");
    compare_placement_put(buf, len, &n, compare_placement_inside(pl->db_in_type, emu));
    return buf;
}

const char *compare_placement_client_text(const struct results_placement_read *pl, char *buf,
                                          size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    if (!pl->present)
        return "not in the results (written before results 2.1)";
    int emu = pl->emulated_type != NULL;
    compare_placement_put(buf, len, &n, "the driver on ");
    compare_placement_put(buf, len, &n, pl->client_host ? pl->client_host : "(host not known)");
    if (emu) {
        compare_placement_put(buf, len, &n, " in emulated type ");
        compare_placement_put(buf, len, &n, pl->emulated_type);
    }
    if (pl->client_cpu_cgroup) {
        compare_placement_put(buf, len, &n, ", CPU cgroup ");
        compare_placement_put(buf, len, &n, pl->client_cpu_cgroup);
    }
    compare_placement_put(buf, len, &n, ", ");
    compare_placement_put(buf, len, &n,
                          pl->client_in_type < 0 ? "front end's CPU cgroup not known"
                          : pl->client_in_type   ? "with the front-end replayer (the clients took "
                                                   "CPU from it)"
                                                 : "apart from the front-end replayer");
    return buf;
}

static json_t *compare_placement_str(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *compare_placement_bool(int x)
{
    return x < 0 ? json_null() : json_boolean(x);
}

json_t *compare_placement_json(const struct results_placement_read *pl)
{
    if (!pl->present)
        return json_null();
    json_t *db = json_null();
    if (pl->has_db)
        db =
            json_pack("{s:o, s:o, s:o, s:o, s:o}", "address", compare_placement_str(pl->db_address),
                      "transport", compare_placement_str(pl->db_transport), "where",
                      compare_placement_str(pl->db_where), "cpu_cgroup",
                      compare_placement_str(pl->db_cpu_cgroup), "in_type",
                      compare_placement_bool(pl->db_in_type));
    json_t *client = json_pack("{s:o, s:o, s:o}", "host", compare_placement_str(pl->client_host),
                               "cpu_cgroup", compare_placement_str(pl->client_cpu_cgroup),
                               "in_type", compare_placement_bool(pl->client_in_type));
    return json_pack("{s:o, s:o, s:o}", "emulated_type", compare_placement_str(pl->emulated_type),
                     "client", client ? client : json_null(), "db", db ? db : json_null());
}

/* 1 when two known tristates differ or one run has a DB where the other
 * has none. */
static int compare_placement_differ(const struct results_placement_read *a,
                                    const struct results_placement_read *b)
{
    if (a->has_db != b->has_db)
        return 1;
    if (a->client_in_type >= 0 && b->client_in_type >= 0 && a->client_in_type != b->client_in_type)
        return 1;
    return a->has_db && a->db_in_type >= 0 && b->db_in_type >= 0 && a->db_in_type != b->db_in_type;
}

int compare_placement_alike(const struct compare_run *runs, size_t nruns)
{
    const struct results_placement_read *first = NULL;
    for (size_t i = 0; i < nruns; i++) {
        if (!runs[i].placement.present)
            continue;
        if (!first)
            first = &runs[i].placement;
        else if (compare_placement_differ(first, &runs[i].placement))
            return 0;
    }
    return 1;
}
