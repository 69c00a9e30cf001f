/* tt_threads.c - N threads alive at once, each writing 8 bytes to FILE
 * before and after a barrier all of them (and main) wait on, for
 * test_threads.py: how many threads of one process the tracer takes at once,
 * and what happens to those beyond. Prints one JSON line: the tids. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static pthread_barrier_t all_alive;
static int out_fd;
static pid_t *tids;

static void write_word(void)
{
    static const char word[8] = "threads\n";
    if (write(out_fd, word, sizeof word) != (ssize_t)sizeof word) {
        perror("tt_threads: write");
        exit(1);
    }
}

static void *thread_main(void *arg)
{
    size_t i = (size_t)arg;
    tids[i] = (pid_t)syscall(SYS_gettid);
    write_word();
    pthread_barrier_wait(&all_alive);
    write_word();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tt_threads NTHREADS FILE\n");
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 10);
    out_fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    tids = calloc(n, sizeof *tids);
    pthread_t *threads = calloc(n, sizeof *threads);
    if (out_fd < 0 || !tids || !threads || n == 0) {
        perror("tt_threads: setup");
        return 1;
    }
    pthread_barrier_init(&all_alive, NULL, (unsigned)n + 1);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    for (size_t i = 0; i < n; i++) {
        int rc = pthread_create(&threads[i], &attr, thread_main, (void *)i);
        if (rc) {
            fprintf(stderr, "tt_threads: pthread_create %zu: error %d\n", i, rc);
            return 1;
        }
    }
    pthread_barrier_wait(&all_alive);
    for (size_t i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    close(out_fd);
    printf("{\"tids\": [");
    for (size_t i = 0; i < n; i++)
        printf("%s%d", i ? ", " : "", (int)tids[i]);
    printf("]}\n");
    return 0;
}
