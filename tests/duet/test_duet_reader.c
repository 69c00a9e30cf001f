/* test_duet_reader.c - unit tests of the duet.json reader (duet_reader.h):
 * a small valid document (2 runs x 2 iterations, two labels, one skipped)
 * reads with every value in place; then each damage, applied to a copy of
 * it through jansson, must be refused with one line naming the key path
 * (and the limit where there is one), with nothing left allocated (the
 * ASan build checks). The A/A widths and verdict words compare prints come
 * from what is read here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "duet_reader.h"
#include "test_tmpdir.h"

static const char *const duet_doc =
    "{\"format\": \"preplay-duet\", \"kind\": \"duet\", \"version\": 1, \"version_minor\": 0,"
    " \"plan_a\": \"a.plan\", \"plan_b\": \"b.plan\", \"recording_a\": \"rec\","
    " \"recording_b\": \"rec\", \"aa\": false, \"same_recording\": true,"
    " \"procedure\": \"duet\", \"statistic\": \"median\", \"seed\": 3, \"runs\": 2,"
    " \"iterations\": 2, \"warmup\": 1, \"confidence\": 0.99, \"winsorize_pct\": 20.0,"
    " \"replicates\": 10000, \"failed_a\": 0, \"failed_b\": 1, \"future_key\": [1, 2],"
    " \"overall\": {\"gms\": 1.2, \"ci_low\": 1.1, \"ci_high\": 1.3, \"ci_width\": 0.2,"
    "   \"equal\": false, \"runs\": 2, \"iterations\": 4, \"samples_a\": 0, \"samples_b\": 0,"
    "   \"run_gms\": [1.15, 1.25], \"ratios\": [[1.1, 1.2], [1.2, 1.3]],"
    "   \"winsorized\": [-1, -1]},"
    " \"labels\": {"
    "  \"GET /\": {\"gms\": 1.0, \"ci_low\": 0.95, \"ci_high\": 1.05, \"ci_width\": 0.1,"
    "   \"equal\": true, \"runs\": 2, \"iterations\": 3, \"samples_a\": 30, \"samples_b\": 31,"
    "   \"run_gms\": [0.97, 1.03], \"ratios\": [[0.97], [1.0, 1.06]], \"winsorized\": [-1, 0]},"
    "  \"POST /x\": {\"gms\": 0.8, \"ci_low\": 0.7, \"ci_high\": 0.9, \"ci_width\": 0.2,"
    "   \"equal\": false, \"runs\": 2, \"iterations\": 4, \"samples_a\": 9, \"samples_b\": 9,"
    "   \"run_gms\": [0.75, 0.85], \"ratios\": [[0.7, 0.8], [0.8, 0.9]], \"winsorized\": [1, -1]}},"
    " \"labels_skipped\": {\"GET /b\": \"served by B only\"}}";

/* The document with edit applied, written to the temp dir; reads it and
 * returns duet_read's result with err. */
static int duet_try(void (*edit)(json_t *), char *err, size_t errlen, struct duet_file *df)
{
    json_error_t je;
    json_t *root = json_loads(duet_doc, 0, &je);
    assert_non_null(root);
    if (edit)
        edit(root);
    const char *path = test_tmpdir_path("duet.json");
    assert_int_equal(json_dump_file(root, path, JSON_REAL_PRECISION(9)), 0);
    json_decref(root);
    err[0] = 0;
    return duet_read(path, df, err, errlen);
}

static void test_valid(void **state)
{
    (void)state;
    char err[512];
    struct duet_file df;
    assert_int_equal(duet_try(NULL, err, sizeof err, &df), 0);
    assert_string_equal(df.plan_b, "b.plan");
    assert_int_equal(df.runs, 2);
    assert_int_equal(df.iterations, 2);
    assert_int_equal(df.median, 1);
    assert_int_equal(df.sequential, 0);
    assert_int_equal(df.failed_b, 1);
    assert_true(df.overall.present && df.overall.gms == 1.2 && df.overall.ci_width == 0.2);
    assert_string_equal(duet_verdict(&df.overall), "slower");
    assert_int_equal(df.nlabels, 2);
    const struct duet_label_read *g = duet_file_label(&df, "GET /");
    assert_non_null(g);
    assert_string_equal(duet_verdict(&g->m), "equal");
    assert_int_equal(g->m.iterations, 3);
    assert_int_equal(g->m.samples_b, 31);
    assert_true(g->m.run_gms[1] == 1.03);
    assert_string_equal(duet_verdict(&duet_file_label(&df, "POST /x")->m), "faster");
    assert_int_equal(df.nskipped, 1);
    assert_string_equal(df.skipped[0].why, "served by B only");
    duet_file_free(&df);
}

static json_t *duet_label(json_t *root, const char *name)
{
    return json_object_get(json_object_get(root, "labels"), name);
}

/* Edits, each breaking one thing. */
static void e_format(json_t *r)
{
    json_object_set_new(r, "format", json_string("preplay-results"));
}
static void e_version(json_t *r)
{
    json_object_set_new(r, "version", json_integer(2));
}
static void e_kind(json_t *r)
{
    json_object_set_new(r, "kind", json_string("run"));
}
static void e_runs_low(json_t *r)
{
    json_object_set_new(r, "runs", json_integer(1));
}
static void e_runs_high(json_t *r)
{
    json_object_set_new(r, "runs", json_integer(100001));
}
static void e_iters(json_t *r)
{
    json_object_set_new(r, "iterations", json_integer(0));
}
static void e_conf(json_t *r)
{
    json_object_set_new(r, "confidence", json_real(1.0));
}
static void e_failed(json_t *r)
{
    json_object_set_new(r, "failed_a", json_integer(-1));
}
static void e_proc(json_t *r)
{
    json_object_set_new(r, "procedure", json_string("paired"));
}
static void e_aa(json_t *r)
{
    json_object_set_new(r, "aa", json_true());
    json_object_set_new(r, "recording_b", json_string("other"));
}
static void e_no_overall(json_t *r)
{
    json_object_del(r, "overall");
}
static void e_gms_string(json_t *r)
{
    json_object_set_new(json_object_get(r, "overall"), "gms", json_string("1.2"));
}
static void e_gms_negative(json_t *r)
{
    json_object_set_new(json_object_get(r, "overall"), "gms", json_real(-1.2));
}
static void e_gms_huge(json_t *r)
{
    json_object_set_new(json_object_get(r, "overall"), "ci_high", json_real(1e300));
}
static void e_gms_outside(json_t *r)
{
    json_object_set_new(json_object_get(r, "overall"), "ci_low", json_real(1.25));
}
static void e_width(json_t *r)
{
    json_object_set_new(duet_label(r, "GET /"), "ci_width", json_real(0.3));
}
static void e_equal_false(json_t *r)
{
    json_object_set_new(duet_label(r, "GET /"), "equal", json_false());
}
static void e_equal_true(json_t *r)
{
    json_object_set_new(duet_label(r, "POST /x"), "equal", json_true());
}
static void e_equal_missing(json_t *r)
{
    json_object_del(duet_label(r, "POST /x"), "equal");
}
static void e_metric_runs(json_t *r)
{
    json_object_set_new(duet_label(r, "GET /"), "runs", json_integer(3));
}
static void e_metric_iters(json_t *r)
{
    json_object_set_new(duet_label(r, "GET /"), "iterations", json_integer(4));
}
static void e_run_gms(json_t *r)
{
    json_array_remove(json_object_get(duet_label(r, "GET /"), "run_gms"), 0);
}
static void e_ratio_zero(json_t *r)
{
    json_t *run = json_array_get(json_object_get(duet_label(r, "POST /x"), "ratios"), 1);
    json_array_set_new(run, 1, json_real(0));
}
static void e_ratios_long(json_t *r)
{
    json_t *run = json_array_get(json_object_get(duet_label(r, "POST /x"), "ratios"), 1);
    json_array_append_new(run, json_real(1.0));
}
static void e_winsorized(json_t *r)
{
    json_array_set_new(json_object_get(duet_label(r, "GET /"), "winsorized"), 0, json_integer(1));
}
static void e_labels_array(json_t *r)
{
    json_object_set_new(r, "labels", json_array());
}
static void e_labels_many(json_t *r)
{
    json_t *l = json_object();
    char name[32];
    for (unsigned i = 0; i <= DUET_MAX_LABELS; i++) {
        snprintf(name, sizeof name, "L%u", i);
        json_object_set_new(l, name, json_null());
    }
    json_object_set_new(r, "labels", l);
}
static void e_label_long(json_t *r)
{
    char name[DUET_MAX_LABEL_BYTES + 2];
    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = 0;
    json_object_set(json_object_get(r, "labels"), name, duet_label(r, "GET /"));
}
static void e_label_null(json_t *r)
{
    json_object_set_new(json_object_get(r, "labels"), "GET /", json_null());
}
static void e_skipped(json_t *r)
{
    json_object_set_new(json_object_get(r, "labels_skipped"), "GET /b", json_integer(1));
}

static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        void (*edit)(json_t *);
        const char *want;
    } cases[] = {
        {e_format, "not a preplay duet file (no \"format\": \"preplay-duet\")"},
        {e_version, ": version: expected 1"},
        {e_kind, ": kind: expected \"duet\""},
        {e_runs_low, ": runs: expected an integer in [2, 100000]"},
        {e_runs_high, ": runs: expected an integer in [2, 100000]"},
        {e_iters, ": iterations: expected an integer in [1, 1000000]"},
        {e_conf, ": confidence: expected a level in (0, 1)"},
        {e_failed, ": failed_a and failed_b: expected integers in [0, 1099511627776]"},
        {e_proc, ": procedure: expected \"sequential\" or \"duet\""},
        {e_aa, ": aa: true, but recording_a and recording_b differ"},
        {e_no_overall, ": overall: expected an object"},
        {e_gms_string, ": overall.gms: expected a ratio in [1e-09, 1e+09]"},
        {e_gms_negative, ": overall.gms: expected a ratio in [1e-09, 1e+09]"},
        {e_gms_huge, ": overall.ci_high: expected a ratio in [1e-09, 1e+09]"},
        {e_gms_outside, ": overall: expected ci_low <= gms <= ci_high, got 1.25, 1.2, 1.3"},
        {e_width, ": labels.\"GET /\".ci_width: expected ci_high - ci_low (0.1"},
        {e_equal_false,
         ": labels.\"GET /\".equal: false, but the interval [0.95, 1.05] contains 1"},
        {e_equal_true,
         ": labels.\"POST /x\".equal: true, but the interval [0.7, 0.9] does not contain 1"},
        {e_equal_missing, ": labels.\"POST /x\".equal: expected true or false"},
        {e_metric_runs, ": labels.\"GET /\".runs: expected 2 (every run has a gm)"},
        {e_metric_iters, ": labels.\"GET /\".iterations: 4, but ratios holds 3"},
        {e_run_gms, ": labels.\"GET /\".run_gms: expected an array of 2 ratios"},
        {e_ratio_zero, ": labels.\"POST /x\".ratios[1][1]: expected a ratio in [1e-09, 1e+09]"},
        {e_ratios_long, ": labels.\"POST /x\".ratios[1]: expected an array of 1 to 2 ratios"},
        {e_winsorized, ": labels.\"GET /\".winsorized[0]: expected -1 or an index below 1"},
        {e_labels_array, ": labels: expected an object (label -> metric)"},
        {e_labels_many, ": labels: 65537 entries exceed the limit 65536"},
        {e_label_long, ": labels: a name of 4097 bytes exceeds the limit 4096"},
        {e_label_null, ": labels.\"GET /\": expected an object (a metric, or {\"skipped\": why})"},
        {e_skipped, ": labels_skipped: expected label -> reason, each at most 4096 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[512];
        struct duet_file df;
        int rc = duet_try(cases[i].edit, err, sizeof err, &df);
        if (rc != -1 || !strstr(err, cases[i].want) || strchr(err, '\n'))
            fail_msg("case %zu: rc %d, err '%s', want '%s'", i, rc, err, cases[i].want);
        /* the file's path leads the line */
        assert_non_null(strstr(err, test_tmpdir_path("duet.json")));
        assert_null(df.labels);
        assert_null(df.plan_a);
    }
}

/* Accepted though unusual: a lower bound of 1.000000004 written with 9
 * significant digits is "1", with equal false as computed before the
 * rounding; an overall that was skipped. */
static void e_edge(json_t *r)
{
    json_t *o = json_object_get(r, "overall");
    json_object_set_new(o, "gms", json_real(1.05));
    json_object_set_new(o, "ci_low", json_real(1.0));
    json_object_set_new(o, "ci_high", json_real(1.1));
    json_object_set_new(o, "ci_width", json_real(0.1));
}
static void e_skipped_overall(json_t *r)
{
    json_object_set_new(r, "overall", json_pack("{s:s}", "skipped", "no iteration of run 2"));
}

static void test_accepted(void **state)
{
    (void)state;
    char err[512];
    struct duet_file df;
    assert_int_equal(duet_try(e_edge, err, sizeof err, &df), 0);
    assert_string_equal(duet_verdict(&df.overall), "slower");
    duet_file_free(&df);
    assert_int_equal(duet_try(e_skipped_overall, err, sizeof err, &df), 0);
    assert_false(df.overall.present);
    assert_null(duet_verdict(&df.overall));
    assert_string_equal(df.overall.skipped, "no iteration of run 2");
    duet_file_free(&df);
}

static void test_not_json(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("dup.json");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"format\": \"preplay-duet\", \"format\": \"preplay-duet\"}", f);
    fclose(f);
    char err[512];
    struct duet_file df;
    assert_int_equal(duet_read(path, &df, err, sizeof err), -1);
    assert_non_null(strstr(err, "not valid JSON (duplicate object key"));
    assert_int_equal(duet_read(test_tmpdir_path("absent.json"), &df, err, sizeof err), -1);
    assert_non_null(strstr(err, "absent.json: cannot open (No such file or directory)"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_accepted),
        cmocka_unit_test(test_not_json),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
