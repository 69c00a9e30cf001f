/* bench_db_loop.c - the tracer's cost per small DB statement (issue 21
 * item 5: keeping statements whole must not make small ones dearer): T
 * threads, each on its own connection, run N small statements (`DO 1`, or
 * an INSERT of 11000 bytes with `big`, of 2000000 with `huge`) through the
 * MySQL C API; prints the
 * wall ns per statement, the process's CPU ns (user + sys) per statement
 * and its peak RSS in KiB. Linked with libmariadb.so it exercises the C
 * API wrappers, with libmariadb.a the wire parser (run.sh builds both).
 * usage: bench_db_loop SOCKET N THREADS small|big|huge */
#define _POSIX_C_SOURCE 200809L
#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static const char *bench_socket;
static long bench_n;
static size_t bench_big; /* bytes of the INSERT, 0: small statements */

static double bench_now(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *bench_thread(void *arg)
{
    (void)arg;
    MYSQL *m = mysql_init(NULL);
    if (!mysql_real_connect(m, NULL, "root", NULL, "bw", 0, bench_socket, 0)) {
        fprintf(stderr, "bench_db_loop: connect: %s\n", mysql_error(m));
        exit(1);
    }
    static const char small[] = "DO 1";
    char *big = NULL;
    size_t big_len = 0;
    if (bench_big) {
        big_len = bench_big;
        big = malloc(big_len + 1);
        int n = snprintf(big, big_len + 1, "INSERT INTO t (v) VALUES ('");
        memset(big + n, 'x', big_len - (size_t)n - 2);
        memcpy(big + big_len - 2, "')", 2);
    }
    for (long i = 0; i < bench_n; i++) {
        int rc = bench_big ? mysql_real_query(m, big, big_len)
                           : mysql_real_query(m, small, sizeof small - 1);
        if (rc) {
            fprintf(stderr, "bench_db_loop: query: %s\n", mysql_error(m));
            exit(1);
        }
    }
    free(big);
    mysql_close(m);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: bench_db_loop SOCKET N THREADS small|big|huge\n");
        return 2;
    }
    bench_socket = argv[1];
    bench_n = atol(argv[2]);
    int nthreads = atoi(argv[3]);
    bench_big = !strcmp(argv[4], "big") ? 11000 : !strcmp(argv[4], "huge") ? 2000000 : 0;
    if (bench_n <= 0 || nthreads <= 0 || nthreads > 64)
        return 2;
    mysql_library_init(0, NULL, NULL);
    pthread_t th[64];
    double w0 = bench_now(CLOCK_MONOTONIC), c0 = bench_now(CLOCK_PROCESS_CPUTIME_ID);
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, bench_thread, NULL);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    double w1 = bench_now(CLOCK_MONOTONIC), c1 = bench_now(CLOCK_PROCESS_CPUTIME_ID);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double total = (double)bench_n * nthreads;
    printf("wall_ns %.0f cpu_ns %.0f maxrss_kib %ld\n", (w1 - w0) / total, (c1 - c0) / total,
           ru.ru_maxrss);
    mysql_library_end();
    return 0;
}
