/* results_writer.c - builds the results JSON (formats/RESULTS.md): every
 * object of the format with its keys in their order, so `preplay drive`
 * and `preplay run` write the same shapes and the reader's list of known
 * keys has one writer to agree with. Numbers come from the callers; never
 * computes statistics, never writes a partial file (temp file + rename). */
#include "results_writer.h"

#include "out_file.h"

#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

json_t *results_summary_json(const struct results_summary *s)
{
    static const char *const ci_names[3] = {"median_ci_s", "p95_ci_s", "p99_ci_s"};
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "count", json_integer((json_int_t)s->count));
    json_object_set_new(o, "mean_s", json_real(s->mean_s));
    json_object_set_new(o, "median_s", json_real(s->median_s));
    json_object_set_new(o, "p95_s", json_real(s->p95_s));
    json_object_set_new(o, "p99_s", json_real(s->p99_s));
    json_object_set_new(o, "min_s", json_real(s->min_s));
    json_object_set_new(o, "max_s", json_real(s->max_s));
    if (s->has_band)
        for (int i = 0; i < 3; i++) {
            json_t *a = json_array();
            json_array_append_new(a, json_real(s->band[i][0]));
            json_array_append_new(a, json_real(s->band[i][1]));
            json_object_set_new(o, ci_names[i], a);
        }
    return o;
}

int results_sample_append(json_t *samples, const char *label, double sent_s, double response_s,
                          double late_s, const char *failure, long interval)
{
    json_t *o = json_pack("{s:s, s:f, s:f, s:f, s:b}", "label", label, "sent_s", sent_s,
                          "response_s", response_s, "late_s", late_s, "ok", !failure);
    if (!o)
        return -1;
    if (failure)
        json_object_set_new(o, "failure", json_string(failure));
    if (interval > 0)
        json_object_set_new(o, "interval", json_integer(interval));
    return json_array_append_new(samples, o);
}

json_t *results_lateness_json(double median_s, double p99_s, double max_s)
{
    return json_pack("{s:f, s:f, s:f}", "median_s", median_s, "p99_s", p99_s, "max_s", max_s);
}

json_t *results_interval_json(struct results_interval *iv)
{
    json_t *o =
        json_pack("{s:I, s:I, s:I, s:f, s:f, s:f, s:o}", "interval", (json_int_t)iv->interval,
                  "requests", (json_int_t)iv->requests, "failed", (json_int_t)iv->failed,
                  "length_s", iv->length_s, "schedule_from_s", iv->schedule_from_s, "schedule_to_s",
                  iv->schedule_to_s, "lateness", iv->lateness);
    iv->lateness = NULL;
    if (!o)
        return NULL;
    if (iv->fed) {
        json_object_set_new(o, "p", iv->compared ? json_real(iv->p) : json_null());
        json_object_set_new(o, "action", json_string(iv->action));
        json_object_set_new(o, "held_open_by", json_string(iv->held_open_by));
    } else {
        json_object_set_new(o, "p", json_null());
    }
    return o;
}

/* dst[k] += num for every number of src (integers stay integers). */
static void results_sum_into(json_t *dst, json_t *src)
{
    const char *k;
    json_t *num;
    json_object_foreach(src, k, num)
    {
        json_t *old = json_object_get(dst, k);
        double sum = json_number_value(num) + (old ? json_number_value(old) : 0);
        json_object_set_new(dst, k,
                            json_is_integer(num) ? json_integer((json_int_t)sum) : json_real(sum));
    }
}

void results_resources_add(json_t *resources, json_t *db_errors, uint64_t *db_cut,
                           const char *component, const char *stats_text)
{
    json_t *st = json_loads(stats_text, 0, NULL);
    if (!st)
        return;
    *db_cut += (uint64_t)json_integer_value(json_object_get(st, "db_cut"));
    json_t *comp = json_object_get(resources, component);
    if (!comp) {
        comp = json_object();
        json_object_set_new(resources, component, comp);
    }
    const char *label;
    json_t *v;
    json_object_foreach(json_object_get(st, "labels"), label, v)
    {
        json_t *dst = json_object_get(comp, label);
        if (!dst) {
            dst = json_object();
            json_object_set_new(comp, label, dst);
        }
        results_sum_into(dst, v);
    }
    size_t i;
    json_array_foreach(json_object_get(st, "db_errors"), i, v)
    {
        json_t *e = json_deep_copy(v);
        json_object_set_new(e, "component", json_string(component));
        json_array_append_new(db_errors, e);
    }
    json_decref(st);
}

void results_host_set(json_t *hosts, const char *component, const char *host, const char *address,
                      const char *controller_address, const char *dir)
{
    json_object_set_new(hosts, component,
                        json_pack("{s:s, s:s, s:s, s:s}", "host", host, "address", address,
                                  "controller_address", controller_address, "dir", dir));
}

void results_restore_append(json_t *restores, long interval, double files_s, double db_s)
{
    json_array_append_new(restores, json_pack("{s:I, s:f, s:f}", "interval", (json_int_t)interval,
                                              "files_s", files_s, "db_s", db_s));
}

static json_t *results_string_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *results_tristate(int x)
{
    return x < 0 ? json_null() : json_boolean(x);
}

json_t *results_placement_json(const struct results_placement *pl)
{
    json_t *client = json_object(), *db = pl->has_db ? json_object() : json_null();
    json_t *root = json_object();
    if (!client || !db || !root) {
        json_decref(client);
        json_decref(db);
        json_decref(root);
        return NULL;
    }
    json_object_set_new(client, "host", results_string_or_null(pl->client_host));
    json_object_set_new(client, "cpu_cgroup", results_string_or_null(pl->client_cpu_cgroup));
    json_object_set_new(client, "in_type", results_tristate(pl->client_in_type));
    if (pl->has_db) {
        json_object_set_new(db, "address", results_string_or_null(pl->db_address));
        json_object_set_new(db, "transport", results_string_or_null(pl->db_transport));
        json_object_set_new(db, "where", results_string_or_null(pl->db_where));
        json_object_set_new(db, "cpu_cgroup", results_string_or_null(pl->db_cpu_cgroup));
        json_object_set_new(db, "in_type", results_tristate(pl->db_in_type));
    }
    json_object_set_new(root, "emulated_type", results_string_or_null(pl->emulated_type));
    json_object_set_new(root, "client", client);
    json_object_set_new(root, "db", db);
    return root;
}

json_t *results_counter_window_json(long interval, double start_s, double length_s,
                                    const double *values, size_t nvalues)
{
    json_t *v = json_array();
    for (size_t i = 0; v && i < nvalues; i++)
        json_array_append_new(v, isfinite(values[i]) ? json_real(values[i]) : json_null());
    if (!v)
        return NULL;
    return json_pack("{s:I, s:f, s:f, s:o}", "interval", (json_int_t)interval, "start_s", start_s,
                     "length_s", length_s, "values", v);
}

json_t *results_counters_json(double window_s, double tick_s, const struct results_environment *env,
                              json_t *names, json_t *windows)
{
    json_t *e = json_object(), *root = json_object();
    if (!e || !root || !names || !windows) {
        json_decref(e);
        json_decref(root);
        json_decref(names);
        json_decref(windows);
        return NULL;
    }
    json_object_set_new(e, "host", results_string_or_null(env->host));
    json_object_set_new(e, "cpus", env->cpus > 0 ? json_integer(env->cpus) : json_null());
    json_object_set_new(e, "memory_bytes",
                        isfinite(env->memory_bytes) ? json_real(env->memory_bytes) : json_null());
    json_object_set_new(e, "cpu_model", results_string_or_null(env->cpu_model));
    json_object_set_new(e, "kernel", results_string_or_null(env->kernel));
    json_object_set_new(e, "emulated_type", results_string_or_null(env->emulated_type));
    json_object_set_new(root, "window_s", json_real(window_s));
    json_object_set_new(root, "tick_s", json_real(tick_s));
    json_object_set_new(root, "environment", e);
    json_object_set_new(root, "names", names);
    json_object_set_new(root, "windows", windows);
    return root;
}

/* "format", "version", "version_minor", "kind", "plan", "recording_id":
 * the common head. */
static json_t *results_head(const char *kind, const char *plan, const char *recording_id)
{
    json_t *root = json_object();
    if (!root)
        return NULL;
    json_object_set_new(root, "format", json_string(RESULTS_FORMAT));
    json_object_set_new(root, "version", json_integer(RESULTS_VERSION));
    json_object_set_new(root, "version_minor", json_integer(RESULTS_VERSION_MINOR));
    json_object_set_new(root, "kind", json_string(kind));
    json_object_set_new(root, "plan", json_string(plan));
    json_object_set_new(root, "recording_id", json_string(recording_id));
    return root;
}

json_t *results_drive_json(struct results_drive *d)
{
    json_t *root = results_head("drive", d->plan, d->recording_id);
    if (root) {
        json_object_set_new(root, "target", json_string(d->target));
        json_object_set_new(root, "mode", json_string(d->mode));
        json_object_set_new(root, "speed", json_real(d->speed));
        json_object_set_new(root, "duration_s", json_real(d->duration_s));
        json_object_set_new(root, "elapsed_s", json_real(d->elapsed_s));
        json_object_set_new(root, "requests", json_integer((json_int_t)d->requests));
        json_object_set_new(root, "failed", json_integer((json_int_t)d->failed));
        json_object_set_new(root, "connections", json_integer(d->connections));
        json_object_set_new(root, "lateness", d->lateness);
        json_object_set_new(root, "labels", d->labels);
        json_object_set_new(root, "samples", d->samples);
    } else {
        json_decref(d->lateness);
        json_decref(d->labels);
        json_decref(d->samples);
    }
    d->lateness = d->labels = d->samples = NULL;
    return root;
}

/* The run document's keys after the head, in their order. */
static void results_run_fill(json_t *root, struct results_run *r)
{
    json_object_set_new(root, "instance", json_string(r->instance));
    json_object_set_new(root, "price", isnan(r->price) ? json_null() : json_real(r->price));
    json_object_set_new(root, "mode", json_string(r->mode));
    json_object_set_new(root, "speed", json_real(r->speed));
    json_object_set_new(root, "cpu_ratio", json_real(r->cpu_ratio));
    if (r->cpu_ratio_lo > 0 && r->cpu_ratio_lo <= r->cpu_ratio && r->cpu_ratio <= r->cpu_ratio_hi &&
        isfinite(r->cpu_ratio_hi))
        json_object_set_new(root, "cpu_ratio_ci",
                            json_pack("[f, f]", r->cpu_ratio_lo, r->cpu_ratio_hi));
    if (json_object_get(root, "cpu_ratio_ci")) /* results_widen_ratio_bands makes it true */
        json_object_set_new(root, "cpu_ratio_in_bands", json_false());
    json_object_set_new(root, "no_deps", json_boolean(r->no_deps));
    json_object_set_new(root, "p0", json_real(r->p0));
    json_object_set_new(root, "scale", json_string(r->scale));
    json_object_set_new(root, "schedule_s", json_real(r->schedule_s));
    json_object_set_new(root, "schedule_requests", json_integer((json_int_t)r->schedule_requests));
    json_object_set_new(root, "stopped", json_boolean(r->stopped));
    json_object_set_new(root, "error", r->error ? json_string(r->error) : json_null());
    if (r->hosts)
        json_object_set_new(root, "hosts", r->hosts);
    if (r->placement)
        json_object_set_new(root, "placement", r->placement);
    if (r->counters)
        json_object_set_new(root, "counters", r->counters);
    json_object_set_new(root, "labels", r->labels);
    json_object_set_new(root, "intervals", r->intervals);
    json_object_set_new(root, "resources", r->resources);
    json_object_set_new(root, "db_errors", r->db_errors);
    json_object_set_new(root, "db_cut", json_integer((json_int_t)r->db_cut));
    json_object_set_new(root, "state_restore",
                        json_pack("{s:s, s:f, s:o}", "db_method", r->db_method, "db_dump_s",
                                  r->db_dump_s, "per_interval", r->restores));
    if (r->warmup_s > 0)
        json_object_set_new(root, "warmup",
                            json_pack("{s:f, s:I, s:I}", "length_s", r->warmup_s, "requests",
                                      (json_int_t)r->warmup_requests, "failed",
                                      (json_int_t)r->warmup_failed));
    json_object_set_new(root, "samples", r->samples);
}

json_t *results_run_json(struct results_run *r)
{
    json_t *root = results_head("run", r->plan, r->recording_id);
    if (root) {
        results_run_fill(root, r);
    } else {
        json_decref(r->hosts);
        json_decref(r->placement);
        json_decref(r->counters);
        json_decref(r->labels);
        json_decref(r->intervals);
        json_decref(r->resources);
        json_decref(r->db_errors);
        json_decref(r->restores);
        json_decref(r->samples);
    }
    r->hosts = r->placement = r->counters = r->labels = r->intervals = r->resources = r->db_errors =
        r->restores = r->samples = NULL;
    return root;
}

int results_save(json_t *root, const char *path, char *err, size_t errlen)
{
    struct out_file o; /* never through a planted link (out_file.h) */
    /* mode 0600, like traces: db_errors hold query text */
    if (out_file_begin(&o, path, 0600, err, errlen))
        return -1;
    FILE *f = out_file_stream(&o, err, errlen);
    if (!f || json_dumpf(root, f, JSON_INDENT(1) | JSON_REAL_PRECISION(9))) {
        if (f)
            snprintf(err, errlen, "%s: cannot write", path);
        out_file_abort(&o);
        return -1;
    }
    return out_file_commit(&o, err, errlen);
}
