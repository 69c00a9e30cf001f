/* test_hosts_unit.c - the `preplay run --hosts` file reader
 * (replayer/run_remote.c): user@host[:port] with IPv4, names and [IPv6],
 * optional listen addresses, comments and blank lines; each malformed line
 * refused with file and line; how hosts are named in messages. Writes its
 * files in a temp dir it removes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "run_remote.h"
#include "test_tmpdir.h"

static const char *hosts_write(const char *name, const char *text)
{
    const char *path = test_tmpdir_path(name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    return path;
}

static void test_hosts_forms(void **state)
{
    (void)state;
    const char *path = hosts_write("good", "# replay hosts\n"
                                           "\n"
                                           "web   root@10.0.0.2            # front end\n"
                                           "app\treplay@db1.example:2222  10.0.0.3:7000\n"
                                           "db    [2001:db8::7]:2200  [2001:db8::7]:0\n"
                                           "cache ::1\n"
                                           "   # indented comment\n");
    struct run_hosts h;
    char err[512] = "";
    assert_int_equal(run_hosts_read(path, &h, err, sizeof err), 0);
    assert_int_equal(h.n, 4);

    const struct run_host *web = run_hosts_find(&h, "web");
    assert_non_null(web);
    assert_string_equal(web->target, "root@10.0.0.2");
    assert_string_equal(web->port, "");
    assert_string_equal(web->listen, "");
    assert_int_equal(web->line, 3);

    const struct run_host *app = run_hosts_find(&h, "app");
    assert_non_null(app);
    assert_string_equal(app->target, "replay@db1.example");
    assert_string_equal(app->port, "2222");
    assert_string_equal(app->listen, "10.0.0.3:7000");
    assert_int_equal(app->line, 4);

    const struct run_host *db = run_hosts_find(&h, "db");
    assert_non_null(db);
    assert_string_equal(db->target, "2001:db8::7"); /* ssh wants it bare */
    assert_string_equal(db->port, "2200");
    assert_string_equal(db->listen, "[2001:db8::7]:0");

    const struct run_host *cache = run_hosts_find(&h, "cache");
    assert_non_null(cache);
    assert_string_equal(cache->target, "::1"); /* bare IPv6: no port */
    assert_string_equal(cache->port, "");

    assert_null(run_hosts_find(&h, "nosuch"));

    char text[400];
    run_host_describe(web, text, sizeof text);
    assert_string_equal(text, "root@10.0.0.2");
    run_host_describe(app, text, sizeof text);
    assert_string_equal(text, "replay@db1.example:2222");
    run_host_describe(db, text, sizeof text);
    assert_string_equal(text, "[2001:db8::7]:2200");
    run_hosts_free(&h);
    assert_null(h.hosts);
    assert_int_equal(h.n, 0);
}

/* each bad file: its text and the exact one-line error after "DIR/name:" */
static void test_hosts_errors(void **state)
{
    (void)state;
    static const struct {
        const char *name, *text, *error;
    } cases[] = {
        {"nohost", "web root@h\napp\n",
         "2: 'app' has no host (expected COMPONENT [user@]host[:port])"},
        {"toomany", "web h 1.2.3.4:0 extra\n",
         "1: too many fields (expected COMPONENT [user@]host[:port] [listen-address])"},
        {"port0", "web root@h:0\n", "1: 'root@h:0': bad ssh port '0'"},
        {"portbig", "web h:70000\n", "1: 'h:70000': bad ssh port '70000'"},
        {"portword", "web h:ssh\n", "1: 'h:ssh': bad ssh port 'ssh'"},
        {"portempty", "web h:\n", "1: 'h:': bad ssh port ''"},
        {"v6open", "web root@[::1:22\n", "1: 'root@[::1:22': unterminated [IPv6] host"},
        {"nouser", "web @h\n", "1: '@h': expected [user@]host[:port]"},
        {"option", "web -oProxyCommand=x\n", "1: '-oProxyCommand=x': expected [user@]host[:port]"},
        {"listen", "web h 10.0.0.1\n", "1: listen address '10.0.0.1': expected HOST:PORT"},
        {"listenport", "web h 10.0.0.1:x\n", "1: listen address '10.0.0.1:x': expected HOST:PORT"},
        {"dup", "# two lines for one component\nweb a\n\nweb b\n",
         "4: component 'web' is already on line 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *path = hosts_write(cases[i].name, cases[i].text);
        struct run_hosts h = {0};
        char err[512] = "", want[600];
        assert_int_equal(run_hosts_read(path, &h, err, sizeof err), -1);
        snprintf(want, sizeof want, "%s:%s", path, cases[i].error);
        assert_string_equal(err, want);
        assert_null(h.hosts);
        assert_int_equal(h.n, 0);
    }
    /* only comments: nothing to run remotely is an error too */
    const char *path = hosts_write("empty", "# nothing\n\n");
    struct run_hosts h;
    char err[512], want[600];
    assert_int_equal(run_hosts_read(path, &h, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: no COMPONENT host lines", path);
    assert_string_equal(err, want);
    snprintf(want, sizeof want, "%s/missing", test_tmpdir());
    assert_int_equal(run_hosts_read(want, &h, err, sizeof err), -1);
    assert_non_null(strstr(err, "No such file or directory"));
    assert_int_equal(strncmp(err, want, strlen(want)), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hosts_forms),
        cmocka_unit_test(test_hosts_errors),
    };
    return cmocka_run_group_tests(tests, test_tmpdir_setup, test_tmpdir_teardown);
}
