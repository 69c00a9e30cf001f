/* test_label_rules.c - `--label 'NAME=REGEX'` rules (labels/label_rules.c):
 * the first matching rule names the label, matched against the whole
 * "METHOD /path?query" and only its len bytes; unmatched labels keep their
 * text, cut at '?' only when asked; each bad rule is refused with its one
 * line; rule files skip comments and blanks and name the bad line; the
 * label shape the collector rewrites; the record_options spelling, quoting
 * and what happens when it does not fit. Writes only in its temp dir. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "label_rules.h"
#include "test_tmpdir.h"

/* The WordPress rules of docs/user-guide.md. */
static struct label_rules *wp_rules(void)
{
    struct label_rules *r = label_rules_new();
    char err[256];
    assert_non_null(r);
    assert_int_equal(
        label_rules_add(r, "post=^GET /(index\\.php)?\\?(.*&)?p=[0-9]", err, sizeof err), 0);
    assert_int_equal(label_rules_add(r, "search=^GET /(index\\.php)?\\?(.*&)?s=", err, sizeof err),
                     0);
    assert_int_equal(label_rules_add(r, "any-get=^GET ", err, sizeof err), 0);
    return r;
}

/* apply() on a C string, as a C string. */
static const char *apply(const struct label_rules *r, const char *label, int drop_query)
{
    static char buf[256];
    const char *out = NULL;
    size_t n = label_rules_apply(r, label, strlen(label), drop_query, &out);
    snprintf(buf, sizeof buf, "%.*s", (int)n, out);
    return buf;
}

static void test_first_match_wins(void **state)
{
    (void)state;
    struct label_rules *r = wp_rules();
    assert_int_equal(label_rules_count(r), 3);
    assert_string_equal(apply(r, "GET /?p=123", 1), "post");
    assert_string_equal(apply(r, "GET /index.php?lang=en&p=7", 1), "post");
    assert_string_equal(apply(r, "GET /?s=hello+world", 0), "search");
    /* "p=" in the search words is not a post: the rule wants p= as a parameter */
    assert_string_equal(apply(r, "GET /?s=p=1", 1), "search");
    /* the third rule takes every other GET, before the query is looked at */
    assert_string_equal(apply(r, "GET /wp-login.php?x=1", 1), "any-get");
    /* unmatched: kept, or cut at '?' */
    assert_string_equal(apply(r, "POST /wp-comments-post.php?a=b", 1),
                        "POST /wp-comments-post.php");
    assert_string_equal(apply(r, "POST /wp-comments-post.php?a=b", 0),
                        "POST /wp-comments-post.php?a=b");
    label_rules_free(r);
}

static void test_no_rules(void **state)
{
    (void)state;
    assert_string_equal(apply(NULL, "GET /a?b", 1), "GET /a");
    assert_string_equal(apply(NULL, "GET /a?b", 0), "GET /a?b");
    struct label_rules *r = label_rules_new();
    assert_int_equal(label_rules_count(r), 0);
    assert_string_equal(apply(r, "GET /?x", 1), "GET /");
    label_rules_free(r);
    label_rules_free(NULL);
}

static void test_only_len_bytes(void **state)
{
    (void)state;
    struct label_rules *r = label_rules_new();
    char err[256];
    assert_int_equal(label_rules_add(r, "end=^GET /a$", err, sizeof err), 0);
    const char *out;
    /* a trace string has no NUL of its own: what follows len is not seen */
    const char bytes[] = "GET /abc";
    size_t n = label_rules_apply(r, bytes, 6, 1, &out);
    assert_int_equal(n, 3);
    assert_memory_equal(out, "end", 3);
    n = label_rules_apply(r, bytes, 8, 1, &out);
    assert_int_equal(n, 8);
    assert_ptr_equal(out, bytes);
    label_rules_free(r);
}

static void expect_bad(const char *spec, const char *message)
{
    struct label_rules *r = label_rules_new();
    char err[512] = "";
    assert_int_equal(label_rules_add(r, spec, err, sizeof err), -1);
    assert_string_equal(err, message);
    assert_int_equal(label_rules_count(r), 0);
    label_rules_free(r);
}

static void test_bad_rules(void **state)
{
    (void)state;
    expect_bad("post", "rule 'post': no '=' (NAME=REGEX)");
    expect_bad("=^GET", "rule '=^GET': empty NAME (NAME=REGEX)");
    expect_bad("post=", "rule 'post=': empty REGEX (NAME=REGEX)");
    expect_bad("a\tb=x", "rule 'a\tb=x': control character in NAME");
    char spec[128];
    memset(spec, 'n', 64);
    snprintf(spec + 64, sizeof spec - 64, "=x");
    char want[256];
    snprintf(want, sizeof want, "rule '%s': NAME longer than 63 bytes", spec);
    expect_bad(spec, want);
    spec[1] = '=';
    snprintf(spec + 2, sizeof spec - 2, "x"); /* 1 byte: fine */
    struct label_rules *r = label_rules_new();
    char err[512] = "";
    memset(spec, 'n', 63);
    snprintf(spec + 63, sizeof spec - 63, "=x");
    assert_int_equal(label_rules_add(r, spec, err, sizeof err), 0); /* 63 bytes: fine */
    /* the regex library's own words follow "bad REGEX: " */
    assert_int_equal(label_rules_add(r, "post=^GET /(", err, sizeof err), -1);
    assert_true(strncmp(err, "rule 'post=^GET /(': bad REGEX: ", 32) == 0);
    assert_true(strlen(err) > 32 && !strchr(err, '\n'));
    assert_int_equal(label_rules_count(r), 1);
    /* NAME may hold '=' no more: it ends at the first one, REGEX keeps the rest */
    assert_int_equal(label_rules_add(r, "eq=a=b", err, sizeof err), 0);
    assert_string_equal(apply(r, "GET /?a=b", 0), "eq");
    label_rules_free(r);
}

static void test_too_many(void **state)
{
    (void)state;
    struct label_rules *r = label_rules_new();
    char err[256], spec[32];
    for (int i = 0; i < LABEL_RULES_MAX; i++) {
        snprintf(spec, sizeof spec, "r%d=^GET /%d$", i, i);
        assert_int_equal(label_rules_add(r, spec, err, sizeof err), 0);
    }
    assert_int_equal(label_rules_add(r, "one-more=x", err, sizeof err), -1);
    assert_string_equal(err, "rule 'one-more=x': more than 64 rules");
    assert_string_equal(apply(r, "GET /63", 0), "r63");
    label_rules_free(r);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_rule_file(void **state)
{
    (void)state;
    const char *path = test_tmpdir_path("routes");
    write_file(path, "# WordPress\n"
                     "\n"
                     "  post=^GET /\\?p=  \r\n"
                     "\t# searches\n"
                     "search=^GET /\\?s=\n"
                     "spaced=^GET /a b\n");
    struct label_rules *r = label_rules_new();
    char err[512] = "";
    assert_int_equal(label_rules_add_file(r, path, err, sizeof err), 0);
    assert_int_equal(label_rules_count(r), 3);
    assert_string_equal(apply(r, "GET /?p=1", 1), "post");
    assert_string_equal(apply(r, "GET /?s=x", 1), "search");
    assert_string_equal(apply(r, "GET /a b", 1), "spaced");
    label_rules_free(r);

    write_file(path, "post=^GET /\\?p=\n# fine\nbroken\n");
    r = label_rules_new();
    assert_int_equal(label_rules_add_file(r, path, err, sizeof err), -1);
    char want[512];
    snprintf(want, sizeof want, "%s:3: rule 'broken': no '=' (NAME=REGEX)", path);
    assert_string_equal(err, want);
    const char *missing = test_tmpdir_path("no-such-file");
    assert_int_equal(label_rules_add_file(r, missing, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: No such file or directory", missing);
    assert_string_equal(err, want);
    label_rules_free(r);
}

static void test_is_label(void **state)
{
    (void)state;
    static const char *const yes[] = {"GET /",         "GET /?p=1",        "POST /a/b?c",
                                      "OPTIONS *",     "PROPFIND /dav",    "get /x",
                                      "GET http://h/", "CONNECT https://x"};
    static const char *const no[] = {"",         "GET",
                                     "GET ",     "/var/www/index.php",
                                     "GET x",    "GET /a b",
                                     "GET /a\r", "SELECT * FROM t WHERE a = ?",
                                     "SELECT ?", "DELETE /*+ hint */ FROM t",
                                     "GET  /",   " GET /",
                                     "G(T /",    "OPTIONS **"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        assert_true(label_rules_is_label(yes[i], strlen(yes[i])));
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        assert_false(label_rules_is_label(no[i], strlen(no[i])));
}

static void test_describe(void **state)
{
    (void)state;
    struct label_rules *r = label_rules_new();
    char err[256], out[512];
    assert_int_equal(label_rules_describe(r, out, sizeof out), 0);
    assert_string_equal(out, "");
    assert_int_equal(label_rules_add(r, "post=^GET /\\?p=", err, sizeof err), 0);
    assert_int_equal(label_rules_add(r, "it's=^GET /x'y", err, sizeof err), 0);
    size_t n = label_rules_describe(r, out, sizeof out);
    assert_string_equal(out, "--label 'post=^GET /\\?p=' --label 'it'\\''s=^GET /x'\\''y'");
    assert_int_equal(n, strlen(out));
    /* only whole rules; the rest is counted, giving back rules for the count */
    char small[60];
    n = label_rules_describe(r, small, 50);
    assert_string_equal(small, "--label 'post=^GET /\\?p=' +1 more --label rules");
    assert_int_equal(n, strlen(small));
    n = label_rules_describe(r, small, 40);
    assert_string_equal(small, "+2 more --label rules");
    assert_int_equal(n, strlen(small));
    n = label_rules_describe(r, small, 12);
    assert_string_equal(small, "");
    assert_int_equal(n, 0);
    label_rules_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_first_match_wins), cmocka_unit_test(test_no_rules),
        cmocka_unit_test(test_only_len_bytes),   cmocka_unit_test(test_bad_rules),
        cmocka_unit_test(test_too_many),         cmocka_unit_test(test_rule_file),
        cmocka_unit_test(test_is_label),         cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
