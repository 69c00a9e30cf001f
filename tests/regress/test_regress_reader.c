/* test_regress_reader.c - unit tests of the regress.json reader
 * (formats/regress_reader.h): a small valid document (two baselines,
 * stacking, a target of 4 windows, one flagged counter, two rules) reads
 * with every value in place; each damage, applied to a copy of it through
 * jansson, must be refused with exactly its one-line message (the file's
 * path, the key path and the limit), with nothing left allocated (the
 * ASan build checks); a 1.0 file (before target_values, min/median/max
 * and instance) still reads. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "regress_reader.h"
#include "test_tmpdir.h"

static const char *const regress_doc =
    "{\"format\": \"preplay-regress\", \"version\": 1, \"version_minor\": 1,"
    " \"method\": \"stacking\", \"discretization\": \"3level\", \"min_support\": 0.2,"
    " \"min_confidence\": 0.8, \"min_change\": 0.1, \"max_len\": 3, \"alpha\": 0.001,"
    " \"window_s\": 10, \"future_key\": [1],"
    " \"baselines\": [{\"path\": \"a.json\", \"instance\": \"small\", \"windows\": 4,"
    "   \"weight\": 0.5}, {\"path\": \"b.json\", \"instance\": null, \"windows\": 5,"
    "   \"weight\": 0.5}],"
    " \"target\": {\"path\": \"t.json\", \"instance\": \"large\", \"windows\": 4},"
    " \"levels\": {"
    "  \"cpu_user\": {\"low\": 0.1, \"high\": 0.3, \"min\": 0.05, \"median\": 0.2, \"max\": 0.35},"
    "  \"run_queue\": {\"low\": -0.5, \"high\": 2.5, \"min\": 0, \"median\": 1, \"max\": 3},"
    "  \"p95_s:GET\": {\"low\": null, \"high\": null, \"min\": null, \"median\": null,"
    "   \"max\": null}},"
    " \"flagged\": [{\"counter\": \"cpu_user\", \"severity\": 0.5, \"direction\": \"up\","
    "   \"votes\": 2, \"weight\": 1.0, \"shift_p\": 0.0001, \"windows_up\": 2,"
    "   \"windows_down\": 0, \"violating_windows\": [1, 3],"
    "   \"target_values\": [0.2, 0.5, null, 0.6]}],"
    " \"rules_total\": 5,"
    " \"rules\": [{\"model\": 0, \"premise\": [{\"counter\": \"run_queue\", \"level\": "
    "\"medium\"}],"
    "   \"consequent\": {\"counter\": \"cpu_user\", \"level\": \"medium\"}, \"support\": 0.5,"
    "   \"baseline_confidence\": 1.0, \"target_confidence\": 0.25, \"change\": 0.6,"
    "   \"p\": 0.0005, \"flagged\": true},"
    "  {\"model\": 1, \"premise\": [{\"counter\": \"cpu_user\", \"level\": \"medium\"},"
    "   {\"counter\": \"run_queue\", \"level\": \"medium\"}],"
    "   \"consequent\": {\"counter\": \"p95_s:GET\", \"level\": \"low\"}, \"support\": 0.4,"
    "   \"baseline_confidence\": 0.9, \"target_confidence\": null, \"change\": null,"
    "   \"p\": null, \"flagged\": false}]}";

/* Sets (value JSON text) or deletes (value NULL) the key at a '/'
 * separated path ("flagged/0/severity"; array indexes as numbers). */
static void regress_set(json_t *root, const char *path, const char *value)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *node = root;
    char *key = buf, *slash;
    while ((slash = strchr(key, '/'))) {
        *slash = 0;
        node = json_is_array(node) ? json_array_get(node, (size_t)atoi(key))
                                   : json_object_get(node, key);
        assert_non_null(node);
        key = slash + 1;
    }
    if (!value) {
        assert_int_equal(json_object_del(node, key), 0);
        return;
    }
    json_error_t je;
    json_t *v = json_loads(value, JSON_DECODE_ANY, &je);
    assert_non_null(v);
    if (json_is_array(node))
        assert_int_equal(json_array_set_new(node, (size_t)atoi(key), v), 0);
    else
        assert_int_equal(json_object_set_new(node, key, v), 0);
}

/* An edit: up to 3 (path, value) pairs. */
struct regress_edit {
    const char *path[3], *value[3];
};

/* The document with the edit applied, written to the temp dir and read. */
static int regress_try(const struct regress_edit *e, char *err, size_t errlen,
                       struct regress_file *rf)
{
    json_error_t je;
    json_t *root = json_loads(regress_doc, 0, &je);
    assert_non_null(root);
    for (int k = 0; e && k < 3 && e->path[k]; k++)
        regress_set(root, e->path[k], e->value[k]);
    const char *path = test_tmpdir_path("regress.json");
    assert_int_equal(json_dump_file(root, path, JSON_REAL_PRECISION(9)), 0);
    json_decref(root);
    err[0] = 0;
    return regress_file_read(path, rf, err, errlen);
}

static void test_valid(void **state)
{
    (void)state;
    char err[512];
    struct regress_file rf;
    assert_int_equal(regress_try(NULL, err, sizeof err, &rf), 0);
    assert_int_equal(rf.version_minor, 1);
    assert_int_equal(rf.method, REGRESS_FILE_STACKING);
    assert_int_equal(rf.equal_width, 0);
    assert_int_equal(rf.nbaselines, 2);
    assert_string_equal(rf.baselines[0].instance, "small");
    assert_null(rf.baselines[1].instance);
    assert_int_equal(rf.baselines[1].windows, 5);
    assert_string_equal(rf.target.instance, "large");
    assert_int_equal(rf.nlevels, 3);
    const struct regress_file_level *rq = regress_file_level(&rf, "run_queue");
    assert_non_null(rq);
    assert_true(rq->low == -0.5 && rq->max == 3);
    assert_true(isnan(regress_file_level(&rf, "p95_s:GET")->min));
    assert_int_equal(rf.nflagged, 1);
    const struct regress_file_flag *f = &rf.flagged[0];
    assert_string_equal(f->direction, "up");
    assert_ptr_equal(f->level, regress_file_level(&rf, "cpu_user"));
    assert_int_equal(f->nviolating, 2);
    assert_int_equal(f->violating[1], 3);
    assert_int_equal(f->nvalues, 4);
    assert_true(f->target_values[3] == 0.6 && isnan(f->target_values[2]));
    assert_int_equal(rf.rules_total, 5);
    assert_int_equal(rf.nrules, 2);
    assert_true(rf.rules[0].flagged && rf.rules[0].target_confidence == 0.25);
    assert_int_equal(rf.rules[1].npremise, 2);
    assert_true(isnan(rf.rules[1].change));
    regress_file_free(&rf);
}

/* A 1.0 file: no version_minor, target_values, min/median/max, instance. */
static void test_version_1_0(void **state)
{
    (void)state;
    char err[512];
    struct regress_file rf;
    struct regress_edit e = {{"version_minor", "flagged/0/target_values", "target/instance"},
                             {NULL, NULL, NULL}};
    assert_int_equal(regress_try(&e, err, sizeof err, &rf), 0);
    assert_int_equal(rf.version_minor, 0);
    assert_null(rf.flagged[0].target_values);
    assert_null(rf.target.instance);
    assert_true(isnan(rf.levels[0].min)); /* 1.0 has none: not read */
    regress_file_free(&rf);
}

static void test_refusals(void **state)
{
    (void)state;
    static const struct {
        struct regress_edit e;
        const char *want;
    } cases[] = {
        {{{"format"}, {"\"preplay-results\""}},
         "not a preplay regress file (no \"format\": \"preplay-regress\")"},
        {{{"version"}, {"2"}}, "version: expected 1 (the regress version this preplay reads)"},
        {{{"method"}, {"\"vote\""}}, "method: expected \"single\", \"bagging\" or \"stacking\""},
        {{{"discretization"}, {"\"5level\""}}, "discretization: expected \"3level\" or \"ew\""},
        {{{"min_support"}, {"0"}}, "min_support: expected a number in (0, 1]"},
        {{{"window_s"}, {"1e6"}}, "window_s: expected a number in (0, 86400]"},
        {{{"max_len"}, {"9"}}, "max_len: expected an integer in [2, 8]"},
        {{{"baselines"}, {"[]"}}, "baselines: expected an array of 1 to 4096 baselines"},
        {{{"baselines/1/weight"}, {"null"}}, "baselines[1].weight: expected a weight in [0, 1]"},
        {{{"method"}, {"\"single\""}}, "baselines[0].weight: expected null (method single)"},
        {{{"target/windows"}, {"1000001"}}, "target.windows: expected an integer in [1, 1000000]"},
        {{{"target/path"}, {"5"}}, "target.path: expected a string of at most 4096 bytes"},
        {{{"levels/cpu_user/low"}, {"0.4"}},
         "levels.\"cpu_user\": expected {low, high}: numbers, low <= high, or both null"},
        {{{"levels/cpu_user/median"}, {"0.01"}},
         "levels.\"cpu_user\": expected min <= median <= max, numbers >= 0, or all three null"},
        {{{"discretization", "levels/cpu_user/bins", "levels/p95_s:GET/bins"},
          {"\"ew\"", "3", "1"}},
         "levels.\"run_queue\".bins: expected an integer in [1, 1000]"},
        {{{"flagged/0/counter"}, {"\"disk\""}}, "flagged[0].counter: \"disk\" has no levels"},
        {{{"flagged/0/severity"}, {"0.75"}},
         "flagged[0].severity: expected 2 violating of 4 target windows (0.5)"},
        {{{"flagged/0/direction"}, {"\"down\""}},
         "flagged[0].direction: expected \"up\" (windows up 2, down 0)"},
        {{{"flagged/0/votes"}, {"3"}},
         "flagged[0].votes: expected an integer in [1, 2] (the models)"},
        {{{"flagged/0/windows_down"}, {"3"}},
         "flagged[0]: windows_up and windows_down: expected integers summing to at most 4 "
         "(target.windows)"},
        {{{"flagged/0/violating_windows"}, {"[1, 4]"}},
         "flagged[0].violating_windows[1]: expected an index in [2, 4), increasing"},
        {{{"flagged/0/target_values"}, {"[0.2, -1, null, 0.6]"}},
         "flagged[0].target_values[1]: expected a number >= 0 or null"},
        {{{"flagged/0/target_values"}, {NULL}},
         "flagged[0].target_values: expected an array of 4 values (target.windows)"},
        {{{"flagged/0/shift_p"}, {"2"}},
         "flagged[0].shift_p: expected a probability in [0, 1] or null"},
        {{{"rules_total"}, {"1"}},
         "rules_total: expected an integer in [2 (the rules), 1099511627776]"},
        {{{"rules/0/model"}, {"2"}}, "rules[0].model: expected an index below 2 (the baselines)"},
        {{{"rules/0/premise"}, {"[]"}}, "rules[0].premise: expected an array of 1 to 7 items"},
        {{{"rules/1/consequent/counter"}, {"\"nope\""}},
         "rules[1].consequent.counter: \"nope\" has no levels"},
        {{{"rules/1/change"}, {"0.5"}},
         "rules[1]: target_confidence, change and p: expected all three null or none"},
        {{{"rules/0/p"}, {"0.5"}},
         "rules[0].flagged: expected false (change below min_change or p above alpha)"},
        {{{"rules/0/support"}, {"0"}}, "rules[0].support: expected a number in (0, 1]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[512], want[768];
        struct regress_file rf;
        int rc = regress_try(&cases[i].e, err, sizeof err, &rf);
        snprintf(want, sizeof want, "%s: %s", test_tmpdir_path("regress.json"), cases[i].want);
        if (rc != -1 || strcmp(err, want))
            fail_msg("case %zu: rc %d, err '%s', want '%s'", i, rc, err, want);
        assert_null(rf.baselines); /* nothing left allocated */
        assert_null(rf.flagged);
    }
}

/* More levels than the limit: refused before any is read. */
static void test_levels_limit(void **state)
{
    (void)state;
    json_error_t je;
    json_t *root = json_loads(regress_doc, 0, &je);
    json_t *lv = json_object_get(root, "levels");
    for (unsigned i = 0; i < REGRESS_MAX_COUNTERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "c%u", i);
        json_object_set_new(lv, name, json_pack("{s:f, s:f}", "low", 0.0, "high", 1.0));
    }
    const char *path = test_tmpdir_path("many.json");
    assert_int_equal(json_dump_file(root, path, 0), 0);
    json_decref(root);
    char err[512], want[600];
    struct regress_file rf;
    assert_int_equal(regress_file_read(path, &rf, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: levels: expected an object of at most 4096 counters", path);
    assert_string_equal(err, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_version_1_0),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_levels_limit),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
