/* test_analyze_tables.c - the analyzer's tables stay within their budget
 * (issue 24 item 1): traces naming many distinct tids, connections,
 * descriptors and locks (trace_test_write_many) are refused with one
 * message naming the file, the key, the table and the limit once the
 * tables would pass analyze_options.max_table_bytes, and the same traces
 * pass that point under the default budget (they have no requests: analyze
 * then says there is no front end). A table whose entries are freed (open
 * connections, pending socket options) gives their bytes back: as many
 * connections as the budget holds, opened and closed in turn, analyze.
 * Must stay short (< 5 s under ASan). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preplay_analyze.h"
#include "trace_test_events.h"

static int tables_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Analyzes a fresh trace of n distinct `kind` within max bytes of tables:
 * the return of analyze_run, its error in err. */
static int tables_run(const char *kind, uint32_t n, uint64_t max, char *err, size_t errlen)
{
    char dir[] = "/tmp/preplay-analyze-tables.XXXXXX", trace[96], plan[96];
    assert_non_null(mkdtemp(dir));
    snprintf(trace, sizeof trace, "%s/many-4244.trace", dir);
    snprintf(plan, sizeof plan, "%s/out.plan", dir);
    char gerr[512];
    if (trace_test_write_many(trace, kind, n, gerr, sizeof gerr) != 0)
        fail_msg("trace_test_write_many: %s", gerr);
    const char *inputs[] = {dir};
    struct analyze_options o = {.max_table_bytes = max};
    struct analyze_result r;
    memset(&r, 0, sizeof r);
    int rc = analyze_run(inputs, 1, plan, &o, &r, err, errlen);
    nftw(dir, tables_rm, 8, FTW_DEPTH | FTW_PHYS);
    return rc;
}

static void tables_expect(const char *kind, uint32_t n, const char *key, const char *table)
{
    char err[1024], want[256];
    assert_int_not_equal(tables_run(kind, n, 2u << 20, err, sizeof err), 0);
    snprintf(want, sizeof want, "/many-4244.trace: %s", key);
    if (!strstr(err, want))
        fail_msg("%s: %s: want the file and '%s'", kind, err, key);
    snprintf(want, sizeof want, "the %s table (", table);
    if (!strstr(err, want) ||
        !strstr(err, "would pass the analyzer's limit of 2097152 bytes for its tables"))
        fail_msg("%s: %s: want the %s table and the limit", kind, err, table);
    /* the default budget holds them: the run gets to its end */
    assert_int_not_equal(tables_run(kind, n, 0, err, sizeof err), 0);
    if (!strstr(err, "no front end"))
        fail_msg("%s under the default budget: %s", kind, err);
}

static void test_many_tids(void **state)
{
    (void)state;
    tables_expect("tids", 20000, "tid ", "thread");
}

static void test_many_conns(void **state)
{
    (void)state;
    tables_expect("conns", 20000, "conn_id ", "connection");
}

static void test_many_fds(void **state)
{
    (void)state;
    tables_expect("fds", 40000, "fd ", "socket option");
}

static void test_many_locks(void **state)
{
    (void)state;
    tables_expect("locks", 60000, "lock 0x", "lock");
}

/* Closed connections give their bytes back: 20000 of them, in turn, within
 * a budget that holds 5000 at once. */
static void test_closed_conns(void **state)
{
    (void)state;
    char err[1024];
    assert_int_not_equal(tables_run("closed", 20000, 2u << 20, err, sizeof err), 0);
    if (!strstr(err, "no front end"))
        fail_msg("closed connections: %s", err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_tids),    cmocka_unit_test(test_many_conns),
        cmocka_unit_test(test_many_fds),     cmocka_unit_test(test_many_locks),
        cmocka_unit_test(test_closed_conns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
