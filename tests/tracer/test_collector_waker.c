/* test_collector_waker.c - the collector's waker (tracer/collector/collector_waker.c)
 * as a producer in another process uses it: a word in a MAP_SHARED memfd
 * page, raised and FUTEX_WAKEd from a forked child, makes the eventfd
 * readable; rearm puts the word back and the next raise is seen again; a
 * word raised before it is watched is seen at once; words that stop being
 * watched are never read again (their page is unmapped before the next
 * raise); more words than futex_waitv takes are refused with -1. The waits
 * are bounded (5 s) only so a broken waker fails instead of hanging: the
 * test asserts that the wake arrives, not how fast. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector_waker.h"

/* A raise exactly as tracer_wait_room does it: store, then a shared FUTEX_WAKE. */
static void test_raise(_Atomic uint32_t *word)
{
    atomic_store_explicit(word, 1, memory_order_release);
    syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}

static int test_readable(struct collector_waker *w, int timeout_ms)
{
    struct pollfd p = {.fd = collector_waker_fd(w), .events = POLLIN};
    return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

static _Atomic uint32_t *test_shared_page(void)
{
    int fd = memfd_create("waker-test", 0);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 4096), 0);
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    assert_true(p != MAP_FAILED);
    return p;
}

static void test_raise_from_child(_Atomic uint32_t *word)
{
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        test_raise(word);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static struct collector_waker *test_start_waker(void)
{
    char err[128];
    struct collector_waker *w = collector_waker_start(err, sizeof err);
    if (!w)
        fail_msg("waker unavailable on this kernel: %s", err);
    return w;
}

static void test_wake_rearm_and_unwatch(void **state)
{
    (void)state;
    struct collector_waker *w = test_start_waker();
    _Atomic uint32_t *page = test_shared_page();
    _Atomic uint32_t *words[2] = {&page[0], &page[16]};
    assert_int_equal(collector_waker_watch(w, words, 2), 0);
    assert_false(test_readable(w, 50)); /* nothing raised */

    test_raise_from_child(&page[16]);
    assert_true(test_readable(w, 5000));
    assert_true(collector_waker_consume(w));
    assert_false(collector_waker_consume(w)); /* consumed */
    collector_waker_rearm(w);
    assert_int_equal(atomic_load(&page[16]), 0);
    assert_false(test_readable(w, 50));

    /* seen again after the rearm */
    test_raise_from_child(&page[0]);
    assert_true(test_readable(w, 5000));
    assert_true(collector_waker_consume(w));
    collector_waker_rearm(w);

    /* a word already raised when it starts being watched */
    _Atomic uint32_t *late = test_shared_page();
    atomic_store(late, 1);
    _Atomic uint32_t *three[3] = {&page[0], &page[16], late};
    assert_int_equal(collector_waker_watch(w, three, 3), 0);
    assert_true(test_readable(w, 5000));
    assert_true(collector_waker_consume(w));
    collector_waker_rearm(w);
    assert_int_equal(atomic_load(late), 0);

    /* unwatched, then unmapped: the thread must not touch it again */
    assert_int_equal(collector_waker_watch(w, words, 2), 0);
    munmap((void *)late, 4096);
    test_raise_from_child(&page[0]);
    assert_true(test_readable(w, 5000));
    assert_true(collector_waker_consume(w));
    collector_waker_rearm(w);

    collector_waker_stop(w);
    munmap((void *)page, 4096);
}

static void test_too_many_words(void **state)
{
    (void)state;
    struct collector_waker *w = test_start_waker();
    _Atomic uint32_t *page = test_shared_page();
    _Atomic uint32_t *words[COLLECTOR_WAKER_MAX_WORDS + 1];
    for (size_t i = 0; i <= COLLECTOR_WAKER_MAX_WORDS; i++)
        words[i] = &page[i];
    assert_int_equal(collector_waker_watch(w, words, COLLECTOR_WAKER_MAX_WORDS + 1), -1);
    /* the first ones are still watched */
    test_raise_from_child(&page[COLLECTOR_WAKER_MAX_WORDS - 1]);
    assert_true(test_readable(w, 5000));
    collector_waker_stop(w);
    munmap((void *)page, 4096);
    collector_waker_stop(NULL); /* no waker: nothing */
    assert_int_equal(collector_waker_fd(NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wake_rearm_and_unwatch),
        cmocka_unit_test(test_too_many_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
