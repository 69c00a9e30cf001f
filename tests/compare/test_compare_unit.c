/* test_compare_unit.c - unit tests of `preplay compare`'s library: strict
 * SLO parsing (accepted forms and the exact refusals), and the verdict on
 * hand-written results files (pessimistic band edge, cheapest per million
 * requests, equivalence within noise, --slo-label, no type meeting, runs
 * of different recordings), and what the verdict cannot vouch for (a
 * failed replay is not ranked unless allowed, flagged plan blocks, labels
 * the stop rule did not judge). Never touches the network. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "compare.h"
#include "report_svg.h"
#include "results.h"
#include "test_tmpdir.h"

/* One label's p95 and its band; median/p99 are derived so they order. */
struct test_label {
    const char *name;
    double p95, lo, hi;
};

/* Writes a run results file with `count` = 3600 per label over 3600 s of
 * intervals, so requests per hour = 3600 * nlabels. */
static const char *test_write_run(const char *file, const char *instance, double price,
                                  const char *recording, const struct test_label *labels, size_t n)
{
    const char *path = test_tmpdir_path(file);
    json_t *root = json_pack("{s:s, s:i, s:s, s:s, s:s, s:b, s:f}", "format", "preplay-results",
                             "version", RESULTS_VERSION, "kind", "run", "instance", instance,
                             "recording_id", recording, "stopped", 1, "p0", 0.9);
    json_object_set_new(root, "price", price >= 0 ? json_real(price) : json_null());
    json_t *lo = json_object();
    for (size_t i = 0; i < n; i++) {
        const struct test_label *l = &labels[i];
        json_object_set_new(lo, l->name,
                            json_pack("{s:i, s:f, s:[f,f], s:f, s:[f,f], s:f, s:[f,f]}", "count",
                                      3600, "median_s", l->p95 / 2, "median_ci_s", l->lo / 2,
                                      l->hi / 2, "p95_s", l->p95, "p95_ci_s", l->lo, l->hi, "p99_s",
                                      l->p95 * 1.5, "p99_ci_s", l->lo * 1.5, l->hi * 1.5));
    }
    json_object_set_new(root, "labels", lo);
    json_object_set_new(root, "intervals",
                        json_pack("[{s:i, s:n, s:f}, {s:i, s:f, s:f}]", "requests", 100, "p",
                                  "length_s", 1800.0, "requests", 100, "p", 0.95, "length_s",
                                  1800.0));
    assert_int_equal(json_dump_file(root, path, 0), 0);
    json_decref(root);
    return path;
}

static void test_slo_accepts(void **state)
{
    (void)state;
    struct compare_slo s;
    char err[COMPARE_ERR_LEN];
    assert_int_equal(compare_slo_parse("p95<200ms", &s, err, sizeof err), 0);
    assert_int_equal(s.metric, COMPARE_P95);
    assert_int_equal(s.inclusive, 0);
    assert_true(fabs(s.limit_s - 0.2) < 1e-12);
    assert_string_equal(s.text, "p95 < 200 ms");
    assert_int_equal(compare_slo_parse("p99<=1s", &s, err, sizeof err), 0);
    assert_int_equal(s.metric, COMPARE_P99);
    assert_int_equal(s.inclusive, 1);
    assert_true(fabs(s.limit_s - 1.0) < 1e-12);
    assert_int_equal(compare_slo_parse(" median < 50.5 us ", &s, err, sizeof err), 0);
    assert_int_equal(s.metric, COMPARE_MEDIAN);
    assert_true(fabs(s.limit_s - 50.5e-6) < 1e-15);
    assert_string_equal(s.text, "median < 50.5 us");
    assert_int_equal(compare_slo_parse("p50<3ms", &s, err, sizeof err), 0);
    assert_int_equal(s.metric, COMPARE_MEDIAN);
}

static void test_slo_refuses(void **state)
{
    (void)state;
    static const struct {
        const char *text, *message;
    } cases[] = {
        {"", "SLO '': expected METRIC<LIMIT, e.g. p95<200ms"},
        {"p90<1s", "SLO 'p90<1s': unknown metric 'p90' (use median, p95 or p99)"},
        {"p95>200ms", "SLO 'p95>200ms': expected < or <= after 'p95'"},
        {"p95=200ms", "SLO 'p95=200ms': expected < or <= after 'p95'"},
        {"p95<ms", "SLO 'p95<ms': expected a positive number after '<'"},
        {"p95<-5ms", "SLO 'p95<-5ms': expected a positive number after '<'"},
        {"p95<1.2.3ms", "SLO 'p95<1.2.3ms': expected a positive number after '<'"},
        {"p95<0ms", "SLO 'p95<0ms': the limit must be greater than 0"},
        {"p95<200", "SLO 'p95<200': missing unit after 200 (use us, ms or s)"},
        {"p95<200min", "SLO 'p95<200min': unknown unit 'min' (use us, ms or s)"},
        {"p95<200ms and more", "SLO 'p95<200ms and more': unexpected 'and more' after the unit"},
        {"p95<=", "SLO 'p95<=': expected a positive number after '<='"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct compare_slo s;
        char err[COMPARE_ERR_LEN] = "";
        assert_int_equal(compare_slo_parse(cases[i].text, &s, err, sizeof err), -1);
        assert_string_equal(err, cases[i].message);
    }
}

static void test_slo_pessimistic_edge(void **state)
{
    (void)state;
    struct compare_slo lt, le;
    char err[COMPARE_ERR_LEN];
    assert_int_equal(compare_slo_parse("p95<199ms", &lt, err, sizeof err), 0);
    assert_int_equal(compare_slo_parse("p95<=199ms", &le, err, sizeof err), 0);
    struct compare_stat s = {.value = 0.150, .lo = 0.140, .hi = 0.199, .has_band = 1};
    assert_int_equal(compare_slo_met(&lt, &s), 0); /* upper edge == limit: not strictly below */
    assert_int_equal(compare_slo_met(&le, &s), 1);
    s.hi = 0.210; /* value meets it, the band does not */
    assert_int_equal(compare_slo_met(&le, &s), 0);
}

struct test_fixture {
    struct compare_run runs[8];
    size_t n;
    struct compare_verdict v;
};

static void test_load(struct test_fixture *fx, const char *path)
{
    char err[COMPARE_ERR_LEN] = "";
    int rc = compare_run_load(path, &fx->runs[fx->n], err, sizeof err);
    if (rc)
        fail_msg("%s", err);
    fx->n++;
}

static void test_fixture_free(struct test_fixture *fx)
{
    compare_verdict_free(&fx->v);
    for (size_t i = 0; i < fx->n; i++)
        compare_run_free(&fx->runs[i]);
}

static void test_verdict_cheapest_and_equivalent(void **state)
{
    (void)state;
    struct test_fixture fx = {0};
    /* small: p95 value 180 ms passes a 200 ms SLO, its band (up to 230 ms) does not */
    struct test_label small[] = {{"GET /a", 0.180, 0.150, 0.230}, {"GET /b", 0.050, 0.045, 0.055}};
    /* medium and large overlap on both labels: equivalent; large costs more */
    struct test_label medium[] = {{"GET /a", 0.100, 0.090, 0.120}, {"GET /b", 0.030, 0.028, 0.033}};
    struct test_label large[] = {{"GET /a", 0.095, 0.085, 0.110}, {"GET /b", 0.029, 0.027, 0.032}};
    /* xlarge: clearly faster, dearest */
    struct test_label xlarge[] = {{"GET /a", 0.040, 0.038, 0.042}, {"GET /b", 0.010, 0.009, 0.011}};
    test_load(&fx, test_write_run("s.json", "small", 0.05, "rec1", small, 2));
    test_load(&fx, test_write_run("m.json", "medium", 0.10, "rec1", medium, 2));
    test_load(&fx, test_write_run("l.json", "large", 0.20, "rec1", large, 2));
    test_load(&fx, test_write_run("x.json", "xlarge", 0.40, "rec1", xlarge, 2));
    struct compare_slo slo;
    char err[COMPARE_ERR_LEN];
    assert_int_equal(compare_slo_parse("p95<200ms", &slo, err, sizeof err), 0);
    struct compare_options opt;
    compare_options_default(&opt);
    opt.slos = &slo;
    opt.nslos = 1;
    assert_int_equal(compare_check_consistent(fx.runs, fx.n, NULL, err, sizeof err), 0);
    assert_int_equal(compare_analyze(fx.runs, fx.n, NULL, &opt, &fx.v, err, sizeof err), 0);
    assert_int_equal(fx.v.nlabels, 2);
    assert_string_equal(fx.v.labels[0], "GET /a");
    assert_int_equal(fx.runs[0].meets_slo, 0);
    assert_string_equal(fx.runs[0].slo_failure, "GET /a: p95 up to 230 ms, SLO p95 < 200 ms");
    assert_int_equal(fx.runs[1].meets_slo, 1);
    assert_int_equal(fx.runs[2].meets_slo, 1);
    assert_int_equal(fx.runs[3].meets_slo, 1);
    /* 7200 successful requests over 3600 s = 7200 per hour; 0.1 $/h -> 13.888.. $/M */
    assert_true(fabs(fx.runs[1].requests_per_hour - 7200) < 1e-6);
    assert_true(fabs(fx.runs[1].cost_per_million - 0.10 / 7200 * 1e6) < 1e-9);
    assert_int_equal(fx.v.recommended, 1);
    assert_string_equal(
        fx.v.reason, "medium meets every SLO and is the cheapest at $13.89 per million requests");
    /* equivalence: medium ~ large, nobody else */
    assert_int_equal(fx.v.equivalent[1 * 4 + 2], 1);
    assert_int_equal(fx.v.equivalent[2 * 4 + 1], 1);
    assert_int_equal(fx.v.equivalent[0 * 4 + 1], 0);
    assert_int_equal(fx.v.equivalent[3 * 4 + 2], 0);
    /* tiers: xlarge alone first, medium and large share tier 2 (not ranked), small last */
    assert_int_equal(fx.runs[3].tier, 1);
    assert_int_equal(fx.runs[1].tier, 2);
    assert_int_equal(fx.runs[2].tier, 2);
    assert_int_equal(fx.runs[0].tier, 3);
    test_fixture_free(&fx);
}

static void test_verdict_slo_label_and_none(void **state)
{
    (void)state;
    struct test_fixture fx = {0};
    struct test_label a[] = {{"GET /a", 0.100, 0.090, 0.110}, {"GET /slow", 2.0, 1.9, 2.1}};
    struct test_label b[] = {{"GET /a", 0.300, 0.290, 0.310}, {"GET /slow", 1.0, 0.9, 1.1}};
    test_load(&fx, test_write_run("a.json", "a", 0.3, "rec1", a, 2));
    test_load(&fx, test_write_run("b.json", "b", 0.1, "rec1", b, 2));
    struct compare_slo slo;
    char err[COMPARE_ERR_LEN];
    assert_int_equal(compare_slo_parse("p95<=110ms", &slo, err, sizeof err), 0);
    struct compare_options opt;
    compare_options_default(&opt);
    opt.slos = &slo;
    opt.nslos = 1;
    /* every label: nobody meets (a fails on GET /slow, b on GET /a) */
    assert_int_equal(compare_analyze(fx.runs, fx.n, NULL, &opt, &fx.v, err, sizeof err), 0);
    assert_int_equal(fx.v.recommended, (size_t)-1);
    assert_string_equal(fx.v.reason, "no instance type meets p95 <= 110 ms for every label");
    compare_verdict_free(&fx.v);
    /* only GET /a: a meets at its band's edge (110 ms, inclusive), b does not */
    const char *only[] = {"GET /a"};
    opt.slo_labels = only;
    opt.nslo_labels = 1;
    assert_int_equal(compare_analyze(fx.runs, fx.n, NULL, &opt, &fx.v, err, sizeof err), 0);
    assert_int_equal(fx.runs[0].meets_slo, 1);
    assert_int_equal(fx.runs[1].meets_slo, 0);
    assert_int_equal(fx.v.recommended, 0);
    compare_verdict_free(&fx.v);
    /* an unknown --slo-label is refused */
    const char *unknown[] = {"GET /nope"};
    opt.slo_labels = unknown;
    assert_int_equal(compare_analyze(fx.runs, fx.n, NULL, &opt, &fx.v, err, sizeof err), -1);
    assert_string_equal(err, "--slo-label 'GET /nope': no results have this label");
    test_fixture_free(&fx);
}

static void test_verdict_unpriced(void **state)
{
    (void)state;
    struct test_fixture fx = {0};
    struct test_label a[] = {{"GET /a", 0.100, 0.090, 0.110}};
    struct test_label b[] = {{"GET /a", 0.105, 0.095, 0.115}};
    test_load(&fx, test_write_run("ua.json", "a", -1, "rec1", a, 1));
    test_load(&fx, test_write_run("ub.json", "b", -1, "rec1", b, 1));
    struct compare_options opt;
    compare_options_default(&opt);
    char err[COMPARE_ERR_LEN];
    assert_int_equal(compare_analyze(fx.runs, fx.n, NULL, &opt, &fx.v, err, sizeof err), 0);
    assert_true(isnan(fx.runs[0].cost_per_million));
    assert_int_equal(fx.v.recommended, (size_t)-1);
    assert_string_equal(fx.v.reason, "no prices (run with --price): 2 types meet the SLOs and are "
                                     "equivalent within noise (tier 1)");
    test_fixture_free(&fx);
}

static void test_consistency(void **state)
{
    (void)state;
    struct test_fixture fx = {0};
    struct test_label a[] = {{"GET /a", 0.100, 0.090, 0.110}};
    char p1[128], p2[128], p3[128];
    snprintf(p1, sizeof p1, "%s", test_write_run("c1.json", "a", 1, "rec1", a, 1));
    snprintf(p2, sizeof p2, "%s", test_write_run("c2.json", "b", 1, "rec2", a, 1));
    snprintf(p3, sizeof p3, "%s", test_write_run("c3.json", "a", 1, "rec1", a, 1));
    test_load(&fx, p1);
    test_load(&fx, p2);
    test_load(&fx, p3);
    char err[COMPARE_ERR_LEN], want[COMPARE_ERR_LEN];
    assert_int_equal(compare_check_consistent(fx.runs, 2, NULL, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "%s and %s come from different recordings (rec1 vs rec2): compare runs of one plan",
             p1, p2);
    assert_string_equal(err, want);
    struct compare_run pair[2] = {fx.runs[0], fx.runs[2]};
    assert_int_equal(compare_check_consistent(pair, 2, NULL, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "%s and %s both name instance 'a' (give each run its own --instance)", p1, p3);
    assert_string_equal(err, want);
    test_fixture_free(&fx);
}

/* Adds failed requests and DB errors to a results file written by
 * test_write_run: 2 failed requests in interval 2, two kinds of DB error. */
static void test_add_failures(const char *path)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    assert_non_null(root);
    json_object_set_new(json_array_get(json_object_get(root, "intervals"), 1), "failed",
                        json_integer(2));
    json_object_set_new(
        root, "db_errors",
        json_pack("[{s:s, s:s, s:i, s:i, s:s}, {s:s, s:s, s:i, s:i, s:s}, {s:s, s:s, s:i, s:i, "
                  "s:s}]",
                  "component", "php", "query", "SELEC 1", "count", 5, "code", 1064, "message",
                  "You have an error in your SQL syntax; check the manual", "component", "php",
                  "query", "SELEC 2", "count", 15, "code", 1064, "message",
                  "You have an error in your SQL syntax; check the manual", "component", "php",
                  "query", "SELECT * FROM gone", "count", 1, "code", 1146, "message",
                  "Table 'shop.gone' doesn't exist"));
    assert_int_equal(json_dump_file(root, path, 0), 0);
    json_decref(root);
}

static void test_failed_replay_not_ranked(void **state)
{
    (void)state;
    struct test_fixture fx = {0};
    struct test_label a[] = {{"GET /a", 0.100, 0.090, 0.110}, {"POST /b", 0.1, 0.09, 0.11}};
    struct test_label b[] = {{"GET /a", 0.050, 0.045, 0.055}};
    test_load(&fx, test_write_run("fa.json", "a", 0.3, "rec1", a, 2));
    const char *pb = test_write_run("fb.json", "b", 0.1, "rec1", b, 1);
    test_add_failures(pb);
    test_load(&fx, pb);
    struct compare_options opt;
    compare_options_default(&opt);
    char err[COMPARE_ERR_LEN];
    assert_int_equal(compare_analyze(fx.runs, fx.n, NULL, &opt, &fx.v, err, sizeof err), 0);
    const struct compare_run *r = &fx.runs[1];
    assert_int_equal(r->failed, 2);
    assert_int_equal(r->nproblems, 3);
    assert_string_equal(r->problems[0], "21 DB queries failed (component php: 20 × 'You have an "
                                        "error in your SQL syntax; ch…'; component php: 1 × "
                                        "'Table 'shop.gone' doesn't exist')");
    assert_string_equal(r->problems[1], "2 requests failed");
    assert_string_equal(r->problems[2], "label 'POST /b' never replayed successfully");
    assert_false(r->ranked);
    assert_int_equal(r->tier, 0);
    assert_true(fx.runs[0].ranked);
    assert_int_equal(fx.v.nranked, 1);
    assert_int_equal(fx.v.recommended, 0); /* b is cheaper and faster, but failed */
    assert_string_equal(fx.v.caveats,
                        "Not ranked, the replay failed: b (--allow-failed ranks them).");
    compare_verdict_free(&fx.v);
    opt.allow_failed = 1;
    assert_int_equal(compare_analyze(fx.runs, fx.n, NULL, &opt, &fx.v, err, sizeof err), 0);
    assert_true(fx.runs[1].ranked);
    assert_int_equal(fx.v.nranked, 2);
    assert_int_equal(fx.v.recommended, 1);
    assert_string_equal(fx.v.caveats, "Ranked although the replay failed (--allow-failed): b.");
    compare_verdict_free(&fx.v);
    /* nothing left to rank */
    opt.allow_failed = 0;
    assert_int_equal(compare_analyze(&fx.runs[1], 1, NULL, &opt, &fx.v, err, sizeof err), 0);
    assert_int_equal(fx.v.nranked, 0);
    assert_int_equal(fx.v.recommended, (size_t)-1);
    assert_string_equal(fx.v.reason, "no instance type could be ranked: every replay failed");
    test_fixture_free(&fx);
}

static void test_flagged_blocks_named(void **state)
{
    (void)state;
    struct test_fixture fx = {0};
    struct test_label a[] = {{"GET /a", 0.100, 0.090, 0.110}};
    test_load(&fx, test_write_run("fl.json", "a", 0.2, "rec1", a, 1));
    char *names[] = {"GET /a", "(unlabelled)"};
    size_t counts[] = {3, 1};
    double rec_a[] = {0.1, 0.2};
    double *recorded[] = {rec_a};
    size_t nrecorded[] = {2};
    char *label_names[] = {"GET /a"};
    struct compare_recording rec = {.recording_id = "rec1",
                                    .nlabels = 1,
                                    .label_names = label_names,
                                    .recorded_s = recorded,
                                    .nrecorded = nrecorded,
                                    .nflagged_labels = 2,
                                    .flagged_labels = names,
                                    .nflagged = counts};
    struct compare_options opt;
    compare_options_default(&opt);
    char err[COMPARE_ERR_LEN];
    assert_int_equal(compare_analyze(fx.runs, fx.n, &rec, &opt, &fx.v, err, sizeof err), 0);
    assert_string_equal(fx.v.caveats, "Not judged: plan: 4 blocks built by the analyzer's fallback "
                                      "for interleaving threads ('GET /a' 3, '(unlabelled)' 1).");
    assert_true(fx.runs[0].ranked);
    /* no samples in the file: whether the stop rule judged a label is unknown */
    assert_int_equal(fx.runs[0].labels[0].judged, -1);
    test_fixture_free(&fx);
}

/* The CPU ratio's interval moves the bands by the label's CPU share: GET
 * /a spends 50 ms of CPU per request of its 100 ms median (20 ms its own,
 * 60 ms waiting for an inner tier that is half CPU), so a ratio of 1.0 in
 * [0.9, 1.2] takes 5% off the lower edges and adds 10% to the upper ones,
 * once however often the runs are analyzed. */
/* An axis whose step is lost in its values' magnitude (1e308 + 1 ==
 * 1e308, from a hostile results file) draws at most REPORT_MAX_TICKS
 * ticks: the tick loop used to add the step forever, writing an endless
 * report (66 GB before it was stopped). */
static void test_chart_ticks_bounded(void **state)
{
    (void)state;
    static const double ranges[][4] = {
        {0, 1, 1e308, 1e308}, {1e308, 1e308, 0, 1}, {-1e308, 1e308, -1e308, 1e308}, {0, 10, 0, 1}};
    for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        assert_non_null(f);
        struct report_chart c;
        report_chart_begin(&c, f, 1, "t", "x", "y", ranges[k][0], ranges[k][1], ranges[k][2],
                           ranges[k][3], REPORT_X_NUMERIC);
        fclose(f);
        size_t ticks = 0;
        for (const char *p = buf; (p = strstr(p, "text-anchor=\"end\"")); p++)
            ticks++;
        if (ticks > REPORT_MAX_TICKS || len > 64 * 1024)
            fail_msg("range %zu: %zu y ticks, %zu bytes", k, ticks, len);
        if (k == 3 && ticks < 2)
            fail_msg("a plain range lost its ticks: %zu", ticks);
        free(buf);
    }
}

static void test_ratio_interval_widens_bands(void **state)
{
    (void)state;
    struct test_fixture fx = {0};
    struct test_label a[] = {{"GET /a", 0.200, 0.180, 0.220}};
    const char *path = test_write_run("ratio.json", "small", 0.1, "rec", a, 1);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    assert_non_null(root);
    json_object_set_new(root, "cpu_ratio", json_real(1.0));
    json_object_set_new(root, "cpu_ratio_ci", json_pack("[f,f]", 0.9, 1.2));
    json_object_set_new(root, "resources",
                        json_pack("{s:{s:{s:i, s:f, s:f}}, s:{s:{s:i, s:f, s:f}}}", "web", "GET /a",
                                  "blocks", 10, "cpu_s", 0.2, "call_s", 0.6, "php", "php: /a",
                                  "blocks", 10, "cpu_s", 0.3, "db_s", 0.3));
    assert_int_equal(json_dump_file(root, path, 0), 0);
    json_decref(root);
    test_load(&fx, path);
    struct compare_options opt;
    compare_options_default(&opt);
    char err[COMPARE_ERR_LEN];
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(compare_analyze(fx.runs, fx.n, NULL, &opt, &fx.v, err, sizeof err), 0);
        const struct compare_stat *p95 = &fx.runs[0].labels[0].stat[COMPARE_P95];
        assert_true(fabs(p95->lo - 0.180 * 0.95) < 1e-9);
        assert_true(fabs(p95->hi - 0.220 * 1.10) < 1e-9);
        assert_true(fabs(p95->value - 0.200) < 1e-12);
        compare_verdict_free(&fx.v);
    }
    memset(&fx.v, 0, sizeof fx.v);
    test_fixture_free(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slo_accepts),
        cmocka_unit_test(test_slo_refuses),
        cmocka_unit_test(test_slo_pessimistic_edge),
        cmocka_unit_test(test_verdict_cheapest_and_equivalent),
        cmocka_unit_test(test_verdict_slo_label_and_none),
        cmocka_unit_test(test_verdict_unpriced),
        cmocka_unit_test(test_consistency),
        cmocka_unit_test(test_failed_replay_not_ranked),
        cmocka_unit_test(test_flagged_blocks_named),
        cmocka_unit_test(test_ratio_interval_widens_bands),
        cmocka_unit_test(test_chart_ticks_bounded),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
