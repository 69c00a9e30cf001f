/* tt_killme.c - writes N records of 8 bytes to FILE (one write() each),
 * reports progress on stdout every 1000 and "done N" at the end, then
 * waits to be killed. test_sigkill.py SIGKILLs it after "done" and checks
 * that all N writes reached the trace: the events live in the collector's
 * shared memory, not in this process. It must never exit by itself before
 * the test kills it (bounded: it gives up after 60 s). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tt_killme FILE N\n");
        return 2;
    }
    long n = atol(argv[2]);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror("open");
        return 1;
    }
    char rec[8];
    for (long i = 0; i < n; i++) {
        snprintf(rec, sizeof rec, "%07ld", i % 10000000);
        if (write(fd, rec, 8) != 8) {
            perror("write");
            return 1;
        }
        if ((i + 1) % 1000 == 0) {
            printf("progress %ld\n", i + 1);
            fflush(stdout);
        }
    }
    printf("done %ld pid %d\n", n, (int)getpid());
    fflush(stdout);
    for (int i = 0; i < 60; i++)
        sleep(1);
    return 3;
}
