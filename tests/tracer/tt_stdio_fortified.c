/* tt_stdio_fortified.c - buffered stdio as Debian's packages call it, for
 * test_stdio_fortified.py: built with -O2 -D_FORTIFY_SOURCE=2, so printf,
 * fread and fgets become __fprintf_chk, __fread_chk and __fgets_chk, and
 * putc_unlocked/getc_unlocked are glibc's inline macros, which reach the
 * library only through __overflow and __uflow when the buffer is full or
 * empty. Also the per-character calls, the _unlocked forms, dprintf,
 * fflush(NULL) and a stream left for exit() to flush.
 *
 * DIR/c.txt is written through all the output forms, then read back in
 * DIR/c.txt through all the input forms; DIR/e.txt by dprintf on a
 * descriptor; DIR/f.txt by fprintf, flushed by fflush(NULL), then written
 * more and never closed. Prints "c WRITTEN READ", "e WRITTEN" and
 * "f WRITTEN". */
#define _GNU_SOURCE /* the _unlocked forms, dprintf */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* vfprintf through a va_list: __vfprintf_chk when fortified */
static int log_to(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(f, fmt, ap);
    va_end(ap);
    return r;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tt_stdio_fortified DIR\n");
        return 2;
    }
    /* sizes the compiler cannot see, so the fortified forms are called */
    volatile size_t chunk = 700, line_cap = 64;
    char c_path[4096], e_path[4096], f_path[4096], buf[4096];
    snprintf(c_path, sizeof c_path, "%s/c.txt", argv[1]);
    snprintf(e_path, sizeof e_path, "%s/e.txt", argv[1]);
    snprintf(f_path, sizeof f_path, "%s/f.txt", argv[1]);
    memset(buf, 'q', sizeof buf);

    FILE *c = fopen(c_path, "w");
    if (!c || setvbuf(c, NULL, _IOFBF, 4096) != 0)
        die("fopen c.txt for writing");
    long written = 0;
    for (int i = 0; i < 300; i++)
        written += fprintf(c, "fprintf line %d\n", i);
    for (int i = 0; i < 300; i++)
        written += log_to(c, "vfprintf line %d\n", i);
    for (int i = 0; i < 5000; i++)
        if (putc('a' + i % 26, c) != EOF)
            written++;
    for (int i = 0; i < 5000; i++)
        if (fputc(i % 80 == 79 ? '\n' : 'b', c) != EOF)
            written++;
    for (int i = 0; i < 9000; i++)
        if (putc_unlocked(i % 64 == 63 ? '\n' : 'u', c) != EOF)
            written++;
    for (int i = 0; i < 20; i++)
        written += (long)fwrite_unlocked(buf, 1, chunk, c);
    for (int i = 0; i < 100; i++)
        if (fputs_unlocked("fputs_unlocked\n", c) >= 0)
            written += 15;
    if (fflush_unlocked(c) != 0 || fclose(c) != 0)
        die("fflush_unlocked/fclose c.txt");

    c = fopen(c_path, "r");
    if (!c || setvbuf(c, NULL, _IOFBF, 4096) != 0)
        die("fopen c.txt for reading");
    long got = 0;
    char small[700];
    got += (long)fread(small, 1, chunk, c);
    for (int i = 0; i < 200; i++) {
        char line[64];
        if (!fgets(line, (int)line_cap, c))
            break;
        got += (long)strlen(line);
    }
    for (int i = 0; i < 3000 && getc(c) != EOF; i++)
        got++;
    for (int i = 0; i < 3000 && fgetc(c) != EOF; i++)
        got++;
    for (int i = 0; i < 9000 && getc_unlocked(c) != EOF; i++)
        got++;
    size_t n;
    while ((n = fread_unlocked(buf, 1, chunk, c)) > 0)
        got += (long)n;
    if (fclose(c) != 0)
        die("fclose c.txt after reading");
    printf("c %ld %ld\n", written, got);

    int fd = open(e_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        die("open e.txt");
    long e_written = 0;
    for (int i = 0; i < 50; i++)
        e_written += dprintf(fd, "dprintf line %d\n", i);
    if (close(fd) != 0)
        die("close e.txt");
    printf("e %ld\n", e_written);

    FILE *f = fopen(f_path, "w");
    if (!f)
        die("fopen f.txt");
    long f_written = 0;
    for (int i = 0; i < 20; i++)
        f_written += fprintf(f, "before fflush(NULL) %d\n", i);
    if (fflush(NULL) != 0)
        die("fflush(NULL)");
    for (int i = 0; i < 30; i++)
        f_written += fprintf(f, "left for exit %d\n", i);
    printf("f %ld\n", f_written);
    fflush(stdout);
    return 0; /* f.txt still buffered: exit() flushes it */
}
