/* tt_stacks.c - known call stacks for the --stacks test: main calls
 * stacks_middle, which calls stacks_leaf_write N times (one write each) and
 * stacks_leaf_read once. Functions are exported (-rdynamic) so the tracer's
 * dladdr can name them. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) void stacks_leaf_write(int fd)
{
    if (write(fd, "stack\n", 6) != 6)
        exit(3);
}

__attribute__((noinline)) void stacks_leaf_read(int fd)
{
    char buf[16];
    if (pread(fd, buf, sizeof buf, 0) < 0)
        exit(4);
}

__attribute__((noinline)) void stacks_middle(int fd, int n)
{
    for (int i = 0; i < n; i++)
        stacks_leaf_write(fd);
    stacks_leaf_read(fd);
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int fd = open(argv[1], O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd < 0)
        return 1;
    stacks_middle(fd, atoi(argv[2]));
    close(fd);
    return 0;
}
