/* test_analyze_pair.c - the pairing of connection ends (deps_end.c) on a
 * bare analyzer state: the connect end in one trace and the accept end in
 * another find each other through the reversed 4-tuple in either order;
 * a different port, two ends of one process, and loopback addresses on two
 * hosts do not pair; AF_UNIX ends pair by inode, also when the connecting
 * end does not know its peer's inode; a closed end is no longer found. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>
#include <sys/socket.h>

#include "deps_end.h"
#include "deps_fx.h"

/* files 0 and 1 on host 0, file 2 on host 1 */
static int fx_setup(void **state)
{
    static const uint32_t hosts[] = {0, 0, 1};
    *state = deps_fx_new(3, hosts, 2);
    return *state ? 0 : -1;
}

static int fx_teardown(void **state)
{
    deps_fx_free(*state);
    return 0;
}

static void ip4(uint8_t *a, uint8_t b0, uint8_t b1, uint8_t b2, uint8_t b3)
{
    memset(a, 0, 16);
    a[0] = b0;
    a[1] = b1;
    a[2] = b2;
    a[3] = b3;
}

/* A TCP end of file's process, identified as its CONN event would. */
static struct deps_end *tcp_end(struct deps_state *s, uint32_t file, uint64_t conn_id,
                                const uint8_t *local, uint16_t lport, const uint8_t *remote,
                                uint16_t rport, int accepted)
{
    struct deps_end *e = deps_end_get(s, file, conn_id);
    assert_non_null(e);
    e->accepted = (uint8_t)accepted;
    e->family = AF_INET;
    e->proto = TRACE_PROTO_TCP;
    memcpy(e->local_addr, local, 16);
    memcpy(e->remote_addr, remote, 16);
    e->local_port = lport;
    e->remote_port = rport;
    e->has_ident = 1;
    deps_end_identify(s, e);
    return e;
}

static struct deps_end *unix_end(struct deps_state *s, uint32_t file, uint64_t conn_id,
                                 uint64_t inode, uint64_t peer_inode, int accepted)
{
    struct deps_end *e = deps_end_get(s, file, conn_id);
    assert_non_null(e);
    e->accepted = (uint8_t)accepted;
    e->family = AF_UNIX;
    e->unix_inode = inode;
    e->unix_peer_inode = peer_inode;
    e->has_ident = 1;
    deps_end_identify(s, e);
    return e;
}

static void assert_paired(const struct deps_end *a, const struct deps_end *b)
{
    assert_int_equal(a->peer, DEPS_PEER_TRACED);
    assert_int_equal(b->peer, DEPS_PEER_TRACED);
    assert_int_equal(a->peer_gid, b->gid);
    assert_int_equal(b->peer_gid, a->gid);
}

static void test_tcp_connect_then_accept(void **state)
{
    struct deps_state *s = ((struct deps_fx *)*state)->s;
    uint8_t web[16], app[16];
    ip4(web, 10, 0, 0, 1);
    ip4(app, 10, 0, 0, 2);
    struct deps_end *c = tcp_end(s, 0, 7, web, 40000, app, 8080, 0);
    assert_int_equal(c->peer, DEPS_PEER_UNKNOWN); /* its peer's trace has not said yet */
    struct deps_end *a = tcp_end(s, 2, 9, app, 8080, web, 40000, 1);
    assert_paired(c, a);
    assert_int_not_equal(c->gid, a->gid);
    assert_false(s->failed);
}

static void test_tcp_accept_then_connect(void **state)
{
    struct deps_state *s = ((struct deps_fx *)*state)->s;
    uint8_t web[16], app[16];
    ip4(web, 192, 168, 1, 10);
    ip4(app, 192, 168, 1, 20);
    struct deps_end *a = tcp_end(s, 2, 3, app, 5432, web, 51000, 1);
    struct deps_end *c = tcp_end(s, 1, 4, web, 51000, app, 5432, 0);
    assert_paired(c, a);
}

static void test_tcp_not_paired(void **state)
{
    struct deps_state *s = ((struct deps_fx *)*state)->s;
    uint8_t web[16], app[16];
    ip4(web, 10, 0, 0, 1);
    ip4(app, 10, 0, 0, 2);
    /* another client port: another connection */
    struct deps_end *c = tcp_end(s, 0, 1, web, 40000, app, 8080, 0);
    struct deps_end *a = tcp_end(s, 2, 1, app, 8080, web, 40001, 1);
    assert_int_equal(c->peer, DEPS_PEER_UNKNOWN);
    assert_int_equal(a->peer, DEPS_PEER_UNKNOWN);
    /* both ends in one process (a connection to itself): not a peer */
    struct deps_end *x = tcp_end(s, 0, 2, web, 41000, app, 9090, 0);
    struct deps_end *y = tcp_end(s, 0, 3, app, 9090, web, 41000, 1);
    assert_int_equal(x->peer, DEPS_PEER_UNKNOWN);
    assert_int_equal(y->peer, DEPS_PEER_UNKNOWN);
}

/* 127.0.0.1 names a different machine on every host: only ends on one host
 * (files 0 and 1) pair, not ends on two (files 0 and 2). */
static void test_loopback_is_per_host(void **state)
{
    struct deps_state *s = ((struct deps_fx *)*state)->s;
    uint8_t lo[16];
    ip4(lo, 127, 0, 0, 1);
    struct deps_end *c = tcp_end(s, 0, 1, lo, 33000, lo, 80, 0);
    struct deps_end *other_host = tcp_end(s, 2, 1, lo, 80, lo, 33000, 1);
    assert_int_equal(c->peer, DEPS_PEER_UNKNOWN);
    assert_int_equal(other_host->peer, DEPS_PEER_UNKNOWN);
    struct deps_end *same_host = tcp_end(s, 1, 1, lo, 80, lo, 33000, 1);
    assert_paired(c, same_host);
    assert_int_equal(other_host->peer, DEPS_PEER_UNKNOWN);
}

/* AF_UNIX: the accepted socket names the connecting socket's inode as its
 * peer; the connecting end may know nothing but its own inode. */
static void test_unix_pairing(void **state)
{
    struct deps_state *s = ((struct deps_fx *)*state)->s;
    /* the nameless end first: the naming end finds it by its inode */
    struct deps_end *c = unix_end(s, 0, 1, 1000, 0, 0);
    assert_int_equal(c->peer, DEPS_PEER_UNKNOWN);
    struct deps_end *a = unix_end(s, 1, 1, 2000, 1000, 1);
    assert_paired(c, a);
    /* the naming end first: the nameless end finds the name */
    struct deps_end *a2 = unix_end(s, 1, 2, 2001, 1001, 1);
    assert_int_equal(a2->peer, DEPS_PEER_UNKNOWN);
    struct deps_end *c2 = unix_end(s, 0, 2, 1001, 0, 0);
    assert_paired(c2, a2);
    /* both name each other */
    struct deps_end *c3 = unix_end(s, 0, 3, 1002, 2002, 0);
    struct deps_end *a3 = unix_end(s, 1, 3, 2002, 1002, 1);
    assert_paired(c3, a3);
    /* an inode on another host is another socket */
    struct deps_end *c4 = unix_end(s, 0, 4, 1003, 0, 0);
    struct deps_end *a4 = unix_end(s, 2, 4, 2003, 1003, 1);
    assert_int_equal(c4->peer, DEPS_PEER_UNKNOWN);
    assert_int_equal(a4->peer, DEPS_PEER_UNKNOWN);
}

/* A closed end leaves the index: a later connection with the same tuple
 * (port reuse) does not pair with it. */
static void test_closed_end_not_found(void **state)
{
    struct deps_state *s = ((struct deps_fx *)*state)->s;
    uint8_t web[16], app[16];
    ip4(web, 10, 0, 0, 1);
    ip4(app, 10, 0, 0, 2);
    struct deps_end *c = tcp_end(s, 0, 5, web, 40000, app, 8080, 0);
    assert_int_equal(c->peer, DEPS_PEER_UNKNOWN);
    deps_end_close(s, 0, c); /* its last reference: freed */
    assert_null(deps_map_get(&s->procs[0].ends, 5));
    struct deps_end *a = tcp_end(s, 2, 5, app, 8080, web, 40000, 1);
    assert_int_equal(a->peer, DEPS_PEER_UNKNOWN);
    struct deps_end *c2 = tcp_end(s, 0, 6, web, 40000, app, 8080, 0);
    assert_paired(c2, a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tcp_connect_then_accept, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_tcp_accept_then_connect, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_tcp_not_paired, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_loopback_is_per_host, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_unix_pairing, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_closed_end_not_found, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
