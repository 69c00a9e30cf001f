/* test_results.c - the results format's writer and reader agree
 * (formats/results.h): a drive and a run document with every key the
 * writer can emit (bands, intervals, hosts, a price, an error, resources,
 * DB errors) must use exactly the keys the reader lists as known, object
 * by object, so a key added to the writer without the reader knowing it
 * (or a known key nothing writes any more) fails here; and what the
 * reader takes from such a file must come back as written. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "results_bands.h"
#include "results_reader.h"
#include "results_writer.h"
#include "test_tmpdir.h"

/* The replayer's STATS answer, as replay_engine_stats_json writes it. */
static const char test_stats[] =
    "{\"component\":\"web\",\"blocks\":3,\"labels\":{\"GET /\":{\"blocks\":3,\"cpu_s\":0.3,"
    "\"file_s\":0.1,\"lock_s\":0,\"db_s\":0.2,\"call_s\":0,\"external_s\":0.05,\"net_s\":0.01}},"
    "\"db_cut\":2,"
    "\"db_errors\":[{\"query\":\"SELECT 1\",\"count\":2,\"code\":1146,\"message\":\"no table\"}]}";

static json_t *test_labels(void)
{
    struct results_summary s = {.count = 3,
                                .mean_s = 0.02,
                                .median_s = 0.02,
                                .p95_s = 0.03,
                                .p99_s = 0.04,
                                .min_s = 0.01,
                                .max_s = 0.04,
                                .has_band = 1,
                                .band = {{0.015, 0.025}, {0.025, 0.035}, {0.035, 0.045}}};
    json_t *labels = json_object();
    json_object_set_new(labels, "GET /", results_summary_json(&s));
    return labels;
}

static json_t *test_samples(long interval)
{
    json_t *samples = json_array();
    static const double rt[3] = {0.01, 0.02, 0.04};
    for (int i = 0; i < 3; i++)
        assert_int_equal(
            results_sample_append(samples, "GET /", 0.1 * i, rt[i], 0.001, NULL, interval), 0);
    assert_int_equal(
        results_sample_append(samples, "GET /", 0.5, 0, 0.002, "connection refused", interval), 0);
    return samples;
}

/* Two counters, two windows: the second has nothing for "p95_s:GET /". */
static json_t *test_counters(void)
{
    struct results_environment env = {.host = "vm",
                                      .cpu_model = "Xeon",
                                      .kernel = "6.18",
                                      .emulated_type = NULL,
                                      .cpus = 2,
                                      .memory_bytes = 4e9};
    json_t *names = json_pack("[s, s]", "cpu_user", "p95_s:GET /"), *windows = json_array();
    const double w1[2] = {0.25, 0.004}, w2[2] = {0.5, NAN};
    json_array_append_new(windows, results_counter_window_json(1, 0, 10, w1, 2));
    json_array_append_new(windows, results_counter_window_json(2, 12.5, 7.5, w2, 2));
    return results_counters_json(10, 1, &env, names, windows);
}

static json_t *test_run_doc(void)
{
    json_t *intervals = json_array(), *resources = json_object(), *db_errors = json_array();
    json_t *restores = json_array(), *hosts = json_object();
    struct results_interval iv = {.interval = 1,
                                  .requests = 4,
                                  .failed = 1,
                                  .length_s = 2,
                                  .schedule_from_s = 12.5,
                                  .schedule_to_s = 14.5,
                                  .lateness = results_lateness_json(0.001, 0.002, 0.002),
                                  .fed = 1,
                                  .compared = 1,
                                  .p = 0.5,
                                  .action = "continue",
                                  .held_open_by = "(overall)"};
    json_array_append_new(intervals, results_interval_json(&iv));
    uint64_t db_cut = 0;
    results_resources_add(resources, db_errors, &db_cut, "web", test_stats);
    assert_int_equal(db_cut, 2);
    results_restore_append(restores, 1, 0.01, 0.2);
    results_host_set(hosts, "app", "user@h:22", "10.0.0.2:4000", "10.0.0.1", "/tmp/x");
    struct results_placement pl = {.emulated_type = "small",
                                   .client_host = "vm",
                                   .client_cpu_cgroup = "/preplay-emu-small-7",
                                   .client_in_type = 1,
                                   .has_db = 1,
                                   .db_address = "10.213.0.1:3307",
                                   .db_transport = "tcp",
                                   .db_where = "host",
                                   .db_cpu_cgroup = NULL,
                                   .db_in_type = 0};
    struct results_run r = {.plan = "p.plan",
                            .recording_id = "rec-1",
                            .instance = "m5.large",
                            .mode = "independent",
                            .scale = "linear",
                            .error = "replayer 'app' died",
                            .price = 0.096,
                            .speed = 1,
                            .cpu_ratio = 1.5,
                            .cpu_ratio_lo = 1.4,
                            .cpu_ratio_hi = 1.6,
                            .p0 = 0.9,
                            .schedule_s = 35.25,
                            .schedule_requests = 151,
                            .no_deps = 0,
                            .stopped = 1,
                            .hosts = hosts,
                            .placement = results_placement_json(&pl),
                            .counters = test_counters(),
                            .labels = test_labels(),
                            .intervals = intervals,
                            .resources = resources,
                            .db_errors = db_errors,
                            .db_cut = db_cut,
                            .samples = test_samples(1),
                            .db_method = "none",
                            .db_dump_s = 0.5,
                            .restores = restores,
                            .warmup_s = 2,
                            .warmup_requests = 40,
                            .warmup_failed = 1};
    json_t *root = results_run_json(&r);
    assert_non_null(root);
    return root;
}

static json_t *test_drive_doc(void)
{
    struct results_drive d = {.plan = "p.plan",
                              .recording_id = "rec-1",
                              .target = "127.0.0.1:4000",
                              .mode = "session",
                              .speed = 2,
                              .duration_s = 0,
                              .elapsed_s = 1.25,
                              .requests = 4,
                              .failed = 1,
                              .connections = 2,
                              .lateness = results_lateness_json(0.001, 0.002, 0.002),
                              .labels = test_labels(),
                              .samples = test_samples(0)};
    json_t *root = results_drive_json(&d);
    assert_non_null(root);
    return root;
}

/* Keys seen per object kind over a whole document. */
struct test_seen {
    json_t *keys[RESULTS_NOBJECTS]; /* objects used as sets */
};

static void test_see(struct test_seen *seen, enum results_object kind, json_t *obj)
{
    assert_true(json_is_object(obj));
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        json_object_set_new(seen->keys[kind], k, json_true());
    }
}

static void test_see_each(struct test_seen *seen, enum results_object kind, json_t *container)
{
    size_t i;
    json_t *v;
    const char *k;
    if (json_is_array(container)) {
        json_array_foreach(container, i, v)
        {
            test_see(seen, kind, v);
        }
    } else {
        json_object_foreach(container, k, v)
        {
            test_see(seen, kind, v);
        }
    }
}

static void test_walk(struct test_seen *seen, json_t *root)
{
    int run = !strcmp(json_string_value(json_object_get(root, "kind")), "run");
    test_see(seen, run ? RESULTS_OBJ_RUN : RESULTS_OBJ_DRIVE, root);
    test_see_each(seen, RESULTS_OBJ_LABEL, json_object_get(root, "labels"));
    test_see_each(seen, RESULTS_OBJ_SAMPLE, json_object_get(root, "samples"));
    if (!run) {
        test_see(seen, RESULTS_OBJ_LATENESS, json_object_get(root, "lateness"));
        return;
    }
    json_t *intervals = json_object_get(root, "intervals");
    test_see_each(seen, RESULTS_OBJ_INTERVAL, intervals);
    size_t i;
    json_t *v;
    json_array_foreach(intervals, i, v)
    {
        test_see(seen, RESULTS_OBJ_LATENESS, json_object_get(v, "lateness"));
    }
    test_see_each(seen, RESULTS_OBJ_HOST, json_object_get(root, "hosts"));
    json_t *pl = json_object_get(root, "placement");
    test_see(seen, RESULTS_OBJ_PLACEMENT, pl);
    test_see(seen, RESULTS_OBJ_PLACEMENT_CLIENT, json_object_get(pl, "client"));
    test_see(seen, RESULTS_OBJ_PLACEMENT_DB, json_object_get(pl, "db"));
    json_t *co = json_object_get(root, "counters");
    test_see(seen, RESULTS_OBJ_COUNTERS, co);
    test_see(seen, RESULTS_OBJ_ENVIRONMENT, json_object_get(co, "environment"));
    test_see_each(seen, RESULTS_OBJ_COUNTER_WINDOW, json_object_get(co, "windows"));
    const char *comp;
    json_object_foreach(json_object_get(root, "resources"), comp, v)
    {
        test_see_each(seen, RESULTS_OBJ_RESOURCE, v);
    }
    test_see_each(seen, RESULTS_OBJ_DB_ERROR, json_object_get(root, "db_errors"));
    json_t *sr = json_object_get(root, "state_restore");
    test_see(seen, RESULTS_OBJ_STATE_RESTORE, sr);
    test_see_each(seen, RESULTS_OBJ_RESTORE, json_object_get(sr, "per_interval"));
    test_see(seen, RESULTS_OBJ_WARMUP, json_object_get(root, "warmup"));
}

/* Every key written is known to the reader, and every known key is written. */
static void test_writer_keys_are_known(void **state)
{
    (void)state;
    struct test_seen seen;
    for (int o = 0; o < RESULTS_NOBJECTS; o++)
        seen.keys[o] = json_object();
    json_t *run = test_run_doc(), *drive = test_drive_doc();
    assert_int_equal(results_widen_ratio_bands(run), 1); /* as run does: "cpu_share" */
    test_walk(&seen, run);
    test_walk(&seen, drive);
    for (int o = 0; o < RESULTS_NOBJECTS; o++) {
        const char *const *known = results_known_keys((enum results_object)o);
        assert_non_null(known);
        size_t nknown = 0;
        for (; known[nknown]; nknown++)
            if (!json_object_get(seen.keys[o], known[nknown]))
                fail_msg("object %d: the reader knows \"%s\" but the writer never writes it", o,
                         known[nknown]);
        const char *k;
        json_t *v;
        json_object_foreach(seen.keys[o], k, v)
        {
            size_t i = 0;
            while (known[i] && strcmp(known[i], k))
                i++;
            if (!known[i])
                fail_msg("object %d: the writer writes \"%s\" but the reader does not know it", o,
                         k);
        }
        assert_int_equal(json_object_size(seen.keys[o]), nknown);
        json_decref(seen.keys[o]);
    }
    json_decref(run);
    json_decref(drive);
}

static void test_check_label(const struct results_file *rf)
{
    assert_int_equal(rf->nlabels, 1);
    const struct results_label *l = results_file_label(rf, "GET /");
    assert_non_null(l);
    assert_int_equal(l->count, 3);
    static const double value[3] = {0.02, 0.03, 0.04}, lo[3] = {0.015, 0.025, 0.035};
    for (int m = 0; m < RESULTS_NMETRICS; m++) {
        assert_true(l->has_band[m]);
        assert_true(fabs(l->value[m] - value[m]) < 1e-12);
        assert_true(fabs(l->lo[m] - lo[m]) < 1e-12);
        assert_true(fabs(l->hi[m] - (lo[m] + 0.01)) < 1e-12);
    }
    assert_int_equal(l->nsamples, 3); /* the failed sample is not one */
    assert_true(fabs(l->samples[2] - 0.04) < 1e-12);
}

/* A run document: saved, read back, every value the reader keeps as written. */
static void test_run_round_trip(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("run.json");
    char err[RESULTS_ERR_LEN] = "";
    json_t *root = test_run_doc();
    assert_int_equal(results_save(root, path, err, sizeof err), 0);
    json_decref(root);
    struct results_file rf;
    if (results_read(path, &rf, err, sizeof err))
        fail_msg("%s", err);
    assert_true(rf.is_run);
    assert_string_equal(rf.instance, "m5.large");
    assert_string_equal(rf.recording_id, "rec-1");
    assert_string_equal(rf.plan, "p.plan");
    assert_string_equal(rf.error, "replayer 'app' died");
    assert_true(rf.stopped);
    assert_true(fabs(rf.price - 0.096) < 1e-12 && fabs(rf.p0 - 0.9) < 1e-12);
    assert_true(isnan(rf.elapsed_s));
    assert_true(rf.cpu_ratio == 1.5 && rf.cpu_ratio_lo == 1.4 && rf.cpu_ratio_hi == 1.6);
    test_check_label(&rf);
    assert_int_equal(rf.nintervals, 1);
    assert_int_equal(rf.intervals[0].requests, 4);
    assert_true(rf.intervals[0].p == 0.5 && rf.intervals[0].length_s == 2);
    assert_true(rf.intervals[0].schedule_from_s == 12.5 && rf.intervals[0].schedule_to_s == 14.5);
    assert_true(rf.schedule_s == 35.25 && rf.schedule_requests == 151);
    assert_int_equal(rf.nresources, 1);
    assert_string_equal(rf.resources[0].component, "web");
    assert_string_equal(rf.resources[0].label, "GET /");
    assert_int_equal(rf.resources[0].blocks, 3);
    assert_true(fabs(rf.resources[0].s[RESULTS_CPU] - 0.3) < 1e-12);
    assert_true(fabs(rf.resources[0].s[RESULTS_EXTERNAL] - 0.05) < 1e-12);
    assert_int_equal(rf.version_minor, RESULTS_VERSION_MINOR);
    const struct results_placement_read *pl = &rf.placement;
    assert_true(pl->present && pl->has_db);
    assert_string_equal(pl->emulated_type, "small");
    assert_string_equal(pl->client_host, "vm");
    assert_string_equal(pl->client_cpu_cgroup, "/preplay-emu-small-7");
    assert_int_equal(pl->client_in_type, 1);
    assert_string_equal(pl->db_address, "10.213.0.1:3307");
    assert_string_equal(pl->db_transport, "tcp");
    assert_string_equal(pl->db_where, "host");
    assert_null(pl->db_cpu_cgroup);
    assert_int_equal(pl->db_in_type, 0);
    const struct results_counters_read *c = &rf.counters;
    assert_true(c->present && c->window_s == 10 && c->tick_s == 1);
    assert_string_equal(c->host, "vm");
    assert_null(c->emulated_type);
    assert_true(c->cpus == 2 && c->memory_bytes == 4e9);
    assert_int_equal(c->nnames, 2);
    assert_int_equal(results_counter_index(c, "p95_s:GET /"), 1);
    assert_int_equal(c->nwindows, 2);
    assert_true(c->windows[1].interval == 2 && c->windows[1].start_s == 12.5 &&
                c->windows[1].length_s == 7.5);
    assert_true(c->windows[0].values[1] == 0.004 && isnan(c->windows[1].values[1]));
    results_file_free(&rf);
}

/* A 2.0 run file (no version_minor, no placement) still reads: placement
 * unknown. */
static void test_minor_0_reads(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("v2.0.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"format\": \"preplay-results\", \"version\": 2, \"kind\": \"run\", "
               "\"stopped\": true, \"labels\": {}, \"intervals\": []}");
    fclose(f);
    char err[RESULTS_ERR_LEN];
    struct results_file rf;
    if (results_read(path, &rf, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(rf.version_minor, 0);
    assert_false(rf.placement.present);
    assert_int_equal(rf.placement.client_in_type, -1);
    assert_false(rf.counters.present);
    results_file_free(&rf);
}

/* Counter windows whose values do not match the names, or hold a
 * negative number, are refused naming the window and the counter. */
static void test_counters_refused(void **state)
{
    (void)state;
    static const char *const bodies[] = {
        "{\"window_s\": 10, \"tick_s\": 1, \"names\": [\"a\", \"b\"], \"windows\": "
        "[{\"interval\": 1, \"start_s\": 0, \"length_s\": 10, \"values\": [1]}]}",
        "{\"window_s\": 10, \"tick_s\": 1, \"names\": [\"a\", \"b\"], \"windows\": "
        "[{\"interval\": 1, \"start_s\": 0, \"length_s\": 10, \"values\": [1, -2]}]}",
        "{\"window_s\": 10, \"tick_s\": 1, \"names\": [\"a\", \"a\"], \"windows\": []}",
        "{\"window_s\": 0, \"tick_s\": 1, \"names\": [], \"windows\": []}",
    };
    static const char *const wants[] = {
        "counters.windows[0].values: expected 2 values (one per name)",
        "counters.windows[0].values[1] (b): expected a number >= 0 or null",
        "counters.names[1]: \"a\" is listed twice",
        ("counters: expected {\"window_s\" in (0, 86400], \"tick_s\" in (0, window_s], "
         "\"names\", \"windows\"}"),
    };
    for (size_t i = 0; i < sizeof bodies / sizeof *bodies; i++) {
        const char *path = test_tmpdir_path("counters.json");
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f,
                "{\"format\": \"preplay-results\", \"version\": 2, \"version_minor\": 2, "
                "\"kind\": \"run\", \"stopped\": true, \"labels\": {}, \"intervals\": [], "
                "\"counters\": %s}",
                bodies[i]);
        fclose(f);
        char err[RESULTS_ERR_LEN], want[RESULTS_ERR_LEN + 128];
        struct results_file rf;
        assert_int_equal(results_read(path, &rf, err, sizeof err), -1);
        snprintf(want, sizeof want, "%s: %s", path, wants[i]);
        assert_string_equal(err, want);
    }
}

/* A placement with a word the format does not define is refused, naming
 * the key. */
static void test_placement_refused(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("placement.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"format\": \"preplay-results\", \"version\": 2, \"version_minor\": 1, "
               "\"kind\": \"run\", \"stopped\": true, \"labels\": {}, \"intervals\": [], "
               "\"placement\": {\"client\": {\"in_type\": true}, \"db\": {\"where\": "
               "\"moon\"}}}");
    fclose(f);
    char err[RESULTS_ERR_LEN], want[RESULTS_ERR_LEN + 64];
    struct results_file rf;
    assert_int_equal(results_read(path, &rf, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "%s: placement.db.where: expected local, host or remote, not \"moon\"", path);
    assert_string_equal(err, want);
}

static void test_drive_round_trip(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("drive.json");
    char err[RESULTS_ERR_LEN] = "";
    json_t *root = test_drive_doc();
    mode_t old = umask(022);
    assert_int_equal(results_save(root, path, err, sizeof err), 0);
    umask(old);
    json_decref(root);
    /* 0600 like traces, whatever the umask: db_errors hold query text */
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    struct results_file rf;
    if (results_read(path, &rf, err, sizeof err))
        fail_msg("%s", err);
    assert_false(rf.is_run);
    assert_null(rf.instance);
    assert_true(isnan(rf.price) && isnan(rf.p0));
    assert_true(rf.elapsed_s == 1.25 && rf.failed == 1);
    assert_false(rf.has_intervals);
    assert_true(isnan(rf.schedule_s) && isnan(rf.schedule_requests));
    test_check_label(&rf);
    results_file_free(&rf);
}

/* A version the reader does not read is refused with the version named. */
static void test_version_refused(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("v2.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"format\": \"preplay-results\", \"version\": %d}", RESULTS_VERSION + 1);
    fclose(f);
    char err[RESULTS_ERR_LEN], want[RESULTS_ERR_LEN + 64];
    struct results_file rf;
    assert_int_equal(results_read(path, &rf, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: results version %d is not supported (this preplay reads %d)",
             path, RESULTS_VERSION + 1, RESULTS_VERSION);
    assert_string_equal(err, want);
}

/* Version 1 (response_s from the first byte sent) is refused saying what
 * its response_s meant and what to do. */
static void test_version_1_refused(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("v1.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "{\"format\": \"preplay-results\", \"version\": 1}");
    fclose(f);
    char err[RESULTS_ERR_LEN], want[RESULTS_ERR_LEN + 64];
    struct results_file rf;
    assert_int_equal(results_read(path, &rf, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "%s: results version 1 is not supported (this preplay reads 2): its response_s "
             "counts from the first byte sent, not from the scheduled arrival; replay again "
             "(or add late_s to every response_s)",
             path);
    assert_string_equal(err, want);
}

/* An interval whose schedule coverage ends before it starts is refused. */
static void test_schedule_refused(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("backwards.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"format\": \"preplay-results\", \"version\": %d, \"kind\": \"run\", "
            "\"stopped\": false, \"labels\": {}, \"intervals\": [{\"requests\": 1, "
            "\"schedule_from_s\": 5, \"schedule_to_s\": 2}]}",
            RESULTS_VERSION);
    fclose(f);
    char err[RESULTS_ERR_LEN], want[RESULTS_ERR_LEN + 64];
    struct results_file rf;
    assert_int_equal(results_read(path, &rf, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "%s: intervals[0]: schedule_from_s and schedule_to_s: expected numbers, 0 <= from "
             "<= to",
             path);
    assert_string_equal(err, want);
}

/* A drive document with `root` (extra root keys, leading comma) and the
 * label summary `label` ("count" and the three percentiles). */
static const char *test_write_drive(const char *name, const char *root, const char *label)
{
    const char *path = test_tmpdir_path(name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"format\": \"preplay-results\", \"version\": %d, \"kind\": \"drive\"%s, "
            "\"labels\": {\"GET /\": {%s}}}",
            RESULTS_VERSION, root, label);
    fclose(f);
    return path;
}

static void test_expect_refused(const char *path, const char *why)
{
    char err[RESULTS_ERR_LEN], want[RESULTS_ERR_LEN + 64];
    struct results_file rf;
    assert_int_equal(results_read(path, &rf, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: %s", path, why);
    assert_string_equal(err, want);
}

/* Counts are non-negative, elapsed_s positive, every time finite and
 * within RESULTS_MAX_SECONDS (a median of 1e308 once showed as inf in
 * compare), lists within their limits; each refusal names the key. */
static void test_ranges_refused(void **state)
{
    (void)state;
    static const char good[] = "\"count\": 1, \"median_s\": 0.1, \"p95_s\": 0.2, \"p99_s\": 0.3";
    struct results_file rf;
    char err[RESULTS_ERR_LEN];
    const char *path =
        test_write_drive("ok.json", ", \"requests\": 0, \"elapsed_s\": 2678400", good);
    if (results_read(path, &rf, err, sizeof err))
        fail_msg("%s", err);
    results_file_free(&rf);
    test_expect_refused(test_write_drive("req.json", ", \"requests\": -1", good),
                        "requests: expected an integer in [0, 1099511627776]");
    test_expect_refused(test_write_drive("failed.json", ", \"failed\": 1.5", good),
                        "failed: expected an integer in [0, 1099511627776]");
    test_expect_refused(test_write_drive("cut.json", ", \"db_cut\": 1e308", good),
                        "db_cut: expected an integer in [0, 1099511627776]");
    test_expect_refused(test_write_drive("el0.json", ", \"elapsed_s\": 0", good),
                        "elapsed_s: expected seconds in (0, 2.6784e+06]");
    test_expect_refused(test_write_drive("elbig.json", ", \"elapsed_s\": 2678400.5", good),
                        "elapsed_s: expected seconds in (0, 2.6784e+06]");
    test_expect_refused(
        test_write_drive("med.json", "",
                         "\"count\": 1, \"median_s\": 1e308, \"p95_s\": 0.2, \"p99_s\": 0.3"),
        "labels.\"GET /\".median_s: expected a number of seconds in [0, 2.6784e+06]");
    test_expect_refused(
        test_write_drive("cnt.json", "",
                         "\"count\": -1, \"median_s\": 0.1, \"p95_s\": 0.2, \"p99_s\": 0.3"),
        "labels.\"GET /\".count: expected an integer in [0, 1099511627776]");
    test_expect_refused(
        test_write_drive("ci.json", "",
                         "\"count\": 1, \"median_s\": 0.1, \"p95_s\": 0.2, \"p99_s\": 0.3, "
                         "\"median_ci_s\": [0, 1e300]"),
        "labels.\"GET /\".median_ci_s: expected [low, high] with 0 <= low <= high <= 2.6784e+06");
    test_expect_refused(
        test_write_drive("sample.json",
                         ", \"samples\": [{\"label\": \"GET /\", \"response_s\": 1e308}]", good),
        "samples[0]: expected {\"label\": string, \"response_s\": seconds in [0, 2.6784e+06], "
        "\"ok\": bool}");
    test_expect_refused(
        test_write_drive("ivreq.json", ", \"intervals\": [{\"requests\": -1}]", good),
        "intervals[0]: expected {\"requests\": integer in [0, 1099511627776], \"p\": number or "
        "null}");
    test_expect_refused(test_write_drive("ivlen.json",
                                         ", \"intervals\": [{\"requests\": 1, \"length_s\": -2}]",
                                         good),
                        "intervals[0].length_s: expected seconds in [0, 2.6784e+06]");
    /* a price of 1e308 USD per hour showed as inf in compare's cost column;
     * a p0 or an interval's p outside a probability was taken (p0 as
     * absent, p drawn off the chart) */
    path = test_write_drive("price-ok.json", ", \"price\": 1000000, \"p0\": 1", good);
    if (results_read(path, &rf, err, sizeof err))
        fail_msg("%s", err);
    results_file_free(&rf);
    test_expect_refused(test_write_drive("price.json", ", \"price\": 1e308", good),
                        "price: expected a number in [0, 1e+06] (USD per hour) or null");
    test_expect_refused(test_write_drive("p0.json", ", \"p0\": 7", good),
                        "p0: expected a probability in (0, 1] or null");
    test_expect_refused(test_write_drive("p0neg.json", ", \"p0\": -1e308", good),
                        "p0: expected a probability in (0, 1] or null");
    test_expect_refused(
        test_write_drive("ivp.json", ", \"intervals\": [{\"requests\": 1, \"p\": 5}]", good),
        "intervals[0].p: expected a probability in [0, 1] or null");
    /* what compare reads of resources, db_errors and samples (issue 24
     * item 1): a resource time of 1e308 made the report's time chart loop
     * over ticks without end (13 GB of HTML in 15 s); a count of 2^63 - 1
     * failed queries was summed; a sample's interval of -1, 1e308 or
     * "NaN" was taken as "not given" by the stop rule's sample count */
    path = test_write_drive("res-ok.json",
                            ", \"resources\": {\"web\": {\"GET /\": {\"blocks\": 2, "
                            "\"cpu_s\": 5356800}}}, \"db_errors\": [{\"count\": 1099511627776, "
                            "\"code\": -1}], \"samples\": [{\"label\": \"GET /\", "
                            "\"response_s\": 0.1, \"interval\": 65536}]",
                            good);
    if (results_read(path, &rf, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(rf.nresources, 1);
    assert_true(rf.resources[0].s[RESULTS_CPU] == 5356800);
    assert_int_equal(rf.db_errors[0].count, 1099511627776ull);
    assert_int_equal(rf.labels[0].nsamples, 1);
    assert_int_equal(rf.labels[0].sample_interval[0], 65536);
    results_file_free(&rf);
    const char *const res_bad[] = {"1e308", "5356800.5", "-1"};
    for (size_t i = 0; i < 3; i++) {
        char root[160];
        snprintf(root, sizeof root,
                 ", \"resources\": {\"web\": {\"GET /\": {\"blocks\": 2, \"net_s\": %s}}}",
                 res_bad[i]);
        test_expect_refused(test_write_drive("res.json", root, good),
                            "resources.\"web\".\"GET /\".net_s: expected seconds in [0, "
                            "5.3568e+06] (2 blocks x 2.6784e+06)");
    }
    test_expect_refused(
        test_write_drive("res0.json",
                         ", \"resources\": {\"web\": {\"GET /\": {\"blocks\": 0, \"cpu_s\": "
                         "1e300}}}",
                         good),
        "resources.\"web\".\"GET /\".cpu_s: expected seconds in [0, 2.6784e+06] (1 blocks x "
        "2.6784e+06)");
    const char *const count_bad[] = {"9223372036854775807", "1099511627777", "-1", "1.5"};
    for (size_t i = 0; i < 4; i++) {
        char root[96];
        snprintf(root, sizeof root, ", \"db_errors\": [{\"count\": %s}]", count_bad[i]);
        test_expect_refused(test_write_drive("dbe.json", root, good),
                            "db_errors[0]: expected {\"count\": integer in [0, 1099511627776], "
                            "\"code\": integer}");
    }
    const char *const iv_bad[] = {"-1", "0", "1e308", "\"NaN\"", "1.5", "65537"};
    for (size_t i = 0; i < 6; i++)
        for (int ok = 0; ok < 2; ok++) { /* a failed sample's too */
            char root[160];
            snprintf(root, sizeof root,
                     ", \"samples\": [{\"label\": \"GET /\", \"response_s\": 0.1, \"ok\": %s, "
                     "\"interval\": %s}]",
                     ok ? "true" : "false", iv_bad[i]);
            test_expect_refused(test_write_drive("siv.json", root, good),
                                "samples[0].interval: expected an integer in [1, 65536] or null");
        }
    /* RESULTS_MAX_INTERVALS intervals read; one more is refused */
    for (unsigned extra = 0; extra < 2; extra++) {
        size_t n = RESULTS_MAX_INTERVALS + extra, len = 32 + n * 16;
        char *iv = malloc(len), *q = iv;
        q += sprintf(q, ", \"intervals\": [");
        for (size_t i = 0; i < n; i++)
            q += sprintf(q, "%s{\"requests\": 1}", i ? "," : "");
        strcpy(q, "]");
        path = test_write_drive("many.json", iv, good);
        free(iv);
        if (!extra) {
            if (results_read(path, &rf, err, sizeof err))
                fail_msg("%s", err);
            assert_int_equal(rf.nintervals, RESULTS_MAX_INTERVALS);
            results_file_free(&rf);
        } else {
            test_expect_refused(path, "intervals: 65537 entries exceed the limit 65536");
        }
    }
}

/* A run's bands hold the CPU ratio's interval: with the label's CPU share
 * f (its own blocks' CPU plus its wait for an inner tier times that tier's
 * CPU share) over its mean response time, low edges x (1 - f (1 -
 * lo/ratio)), high edges x (1 + f (hi/ratio - 1)); values untouched; once
 * only; nothing without an interval. */
static void test_ratio_widens_bands(void **state)
{
    (void)state;
    struct results_summary s = {.count = 3,
                                .mean_s = 0.1,
                                .median_s = 0.1,
                                .p95_s = 0.2,
                                .p99_s = 0.3,
                                .min_s = 0.05,
                                .max_s = 0.3,
                                .has_band = 1,
                                .band = {{0.09, 0.11}, {0.18, 0.22}, {0.27, 0.33}}};
    json_t *root =
        json_pack("{s:f, s:[f, f], s:{s:o}, s:{s:{s:{s:i, s:f, s:f}}, s:{s:{s:i, s:f, "
                  "s:f}}}}",
                  "cpu_ratio", 1.0, "cpu_ratio_ci", 0.9, 1.2, "labels", "GET /a",
                  results_summary_json(&s), "resources", "web", "GET /a", "blocks", 10, "cpu_s",
                  0.2, "call_s", 0.6, "php", "php: /a", "blocks", 10, "cpu_s", 0.3, "db_s", 0.3);
    assert_non_null(root);
    json_t *resources = json_object_get(root, "resources"),
           *labels = json_object_get(root, "labels");
    /* 0.02 s of its own CPU + 0.06 s waiting for php, half of whose time is CPU */
    assert_float_equal(results_label_cpu_s(resources, labels, "GET /a"), 0.05, 1e-12);
    assert_int_equal(results_widen_ratio_bands(root), 1);
    json_t *lab = json_object_get(labels, "GET /a");
    json_t *p95 = json_object_get(lab, "p95_ci_s");
    /* f = 0.05 / 0.1: low x (1 - 0.5 x 0.1), high x (1 + 0.5 x 0.2) */
    assert_float_equal(json_number_value(json_array_get(p95, 0)), 0.18 * 0.95, 1e-12);
    assert_float_equal(json_number_value(json_array_get(p95, 1)), 0.22 * 1.10, 1e-12);
    assert_float_equal(json_number_value(json_object_get(lab, "p95_s")), 0.2, 0);
    assert_float_equal(json_number_value(json_object_get(lab, "cpu_share")), 0.5, 1e-12);
    assert_true(json_is_true(json_object_get(root, "cpu_ratio_in_bands")));
    /* once: a second call (compare loading a 2.4 file) changes nothing */
    assert_int_equal(results_widen_ratio_bands(root), 0);
    assert_float_equal(json_number_value(json_array_get(p95, 1)), 0.22 * 1.10, 1e-12);
    json_decref(root);
    /* no interval: nothing widened */
    root =
        json_pack("{s:f, s:{s:o}}", "cpu_ratio", 1.0, "labels", "GET /a", results_summary_json(&s));
    assert_int_equal(results_widen_ratio_bands(root), 0);
    p95 = json_object_get(json_object_get(json_object_get(root, "labels"), "GET /a"), "p95_ci_s");
    assert_float_equal(json_number_value(json_array_get(p95, 1)), 0.22, 0);
    json_decref(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_keys_are_known), cmocka_unit_test(test_run_round_trip),
        cmocka_unit_test(test_drive_round_trip),      cmocka_unit_test(test_version_refused),
        cmocka_unit_test(test_version_1_refused),     cmocka_unit_test(test_schedule_refused),
        cmocka_unit_test(test_minor_0_reads),         cmocka_unit_test(test_ratio_widens_bands),
        cmocka_unit_test(test_placement_refused),     cmocka_unit_test(test_counters_refused),
        cmocka_unit_test(test_ranges_refused),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
