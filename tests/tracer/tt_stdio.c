/* tt_stdio.c - buffered stdio with known bytes, for test_stdio.py: glibc
 * moves them to and from the descriptor through internal calls the tracer
 * cannot wrap, so the trace must account for them from the streams'
 * buffers. Writes DIR/a.txt with fwrite and fprintf through a 4 KiB
 * buffer, reads it back with fread and fgets, then writes DIR/b.txt with
 * fputs, flushes, seeks to its start and reads it with fread. Then the
 * scanf family, whose calls return fields, not bytes: DIR/c.txt (numbers
 * and a 6000-byte word, longer than the 4 KiB buffer) read back with
 * fscanf, part of it through the plain GNU vfscanf symbol as binaries built
 * before C99 bind it, once after pushing back another character than the
 * one read (glibc then reads from a backup area); and numbers read with fscanf from a pipe (no
 * offset to ask). Prints the byte counts: "a WRITTEN READ", "b WRITTEN READ", "c WRITTEN READ" and
 * "pipe WRITTEN READ", and "pipe_ino INODE". */
#define _GNU_SOURCE /* RTLD_DEFAULT, fdopen */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* fscanf through the exported GNU symbol vfscanf (the one the library
 * must wrap for old binaries; <stdio.h> sends C99 code to
 * __isoc99_vfscanf) */
static int gnu_fscanf(FILE *f, const char *fmt, ...)
{
    static int (*gnu_vfscanf)(FILE *, const char *, va_list);
    if (!gnu_vfscanf)
        *(void **)&gnu_vfscanf = dlsym(RTLD_DEFAULT, "vfscanf");
    if (!gnu_vfscanf)
        die("dlsym vfscanf");
    va_list ap;
    va_start(ap, fmt);
    int r = gnu_vfscanf(f, fmt, ap);
    va_end(ap);
    return r;
}

/* DIR/c.txt: 2000 numbers, a 6000-byte word, 500 numbers; read back with
 * fscanf (half of the numbers through the GNU symbol) to its end. */
static void scan_file(const char *dir)
{
    char c[4096];
    static char word[6001];
    snprintf(c, sizeof c, "%s/c.txt", dir);
    FILE *f = fopen(c, "w");
    if (!f)
        die("fopen c for writing");
    long written = 0;
    for (int i = 0; i < 2000; i++)
        written += fprintf(f, "%d%c", i * 7, i % 10 == 9 ? '\n' : ' ');
    memset(word, 'w', 6000);
    written += fprintf(f, "%s\n", word);
    for (int i = 0; i < 500; i++)
        written += fprintf(f, "%d\n", i);
    if (fclose(f) != 0)
        die("fclose c");

    f = fopen(c, "r");
    if (!f || setvbuf(f, NULL, _IOFBF, 4096) != 0)
        die("fopen c for reading");
    int v;
    for (int i = 0; i < 2000; i++) {
        if ((i % 2 ? fscanf(f, "%d", &v) : gnu_fscanf(f, "%d", &v)) != 1 || v != i * 7)
            die("fscanf a number of c");
        if (i == 999) { /* push back another blank than the one taken: glibc's backup area */
            int blank = getc(f);
            if ((blank != ' ' && blank != '\n') || ungetc(blank == ' ' ? '\t' : ' ', f) == EOF)
                die("getc/ungetc in c");
        }
    }
    if (fscanf(f, "%6000s", word) != 1 || strlen(word) != 6000)
        die("fscanf the word of c");
    int n = 0;
    while (fscanf(f, "%d", &v) == 1)
        n++;
    if (n != 500 || !feof(f))
        die("fscanf the last numbers of c");
    long read_total = ftell(f);
    if (fclose(f) != 0)
        die("fclose c after reading");
    printf("c %ld %ld\n", written, read_total);
}

/* Numbers through a pipe, all written before the reads start: each read
 * glibc makes returns at most its 4 KiB buffer, so no single fscanf call
 * spans two refills (what the tracer can size on a pipe). */
static void scan_pipe(void)
{
    int p[2];
    if (pipe(p) != 0)
        die("pipe");
    char buf[12000];
    int len = 0;
    for (int i = 0; len < 10000; i++)
        len += snprintf(buf + len, sizeof buf - (size_t)len, "%d\n", i * 13);
    if (write(p[1], buf, (size_t)len) != len || close(p[1]) != 0)
        die("write the pipe");
    struct stat st;
    if (fstat(p[0], &st) != 0)
        die("fstat the pipe");
    FILE *f = fdopen(p[0], "r");
    if (!f || setvbuf(f, NULL, _IOFBF, 4096) != 0)
        die("fdopen the pipe");
    int v, n = 0;
    while (fscanf(f, "%d", &v) == 1)
        if (v != 13 * n++)
            die("fscanf a number of the pipe");
    if (!feof(f) || fclose(f) != 0)
        die("read the pipe to its end");
    printf("pipe %d %d\npipe_ino %lu\n", len, len, (unsigned long)st.st_ino);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: tt_stdio DIR\n");
        return 2;
    }
    char a[4096], b[4096], buf[16384];
    snprintf(a, sizeof a, "%s/a.txt", argv[1]);
    snprintf(b, sizeof b, "%s/b.txt", argv[1]);
    memset(buf, 'z', sizeof buf);

    FILE *f = fopen(a, "w");
    if (!f || setvbuf(f, NULL, _IOFBF, 4096) != 0)
        die("fopen a for writing");
    long written = 0;
    for (int i = 0; i < 10; i++)
        written += (long)fwrite(buf, 1, 1000, f);
    for (int i = 0; i < 100; i++)
        written += fprintf(f, "line %d\n", i);
    if (fclose(f) != 0)
        die("fclose a");

    f = fopen(a, "r");
    if (!f || setvbuf(f, NULL, _IOFBF, 4096) != 0)
        die("fopen a for reading");
    long got = 0;
    for (int i = 0; i < 15; i++)
        got += (long)fread(buf, 1, 700, f);
    while (fgets(buf, sizeof buf, f))
        got += (long)strlen(buf);
    if (fclose(f) != 0)
        die("fclose a after reading");
    printf("a %ld %ld\n", written, got);

    f = fopen(b, "w+");
    if (!f)
        die("fopen b");
    long bw = 0;
    for (int i = 0; i < 50; i++)
        if (fputs("hello\n", f) >= 0)
            bw += 6;
    if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0)
        die("fflush/fseek b");
    long br = (long)fread(buf, 1, sizeof buf, f);
    if (fclose(f) != 0)
        die("fclose b");
    printf("b %ld %ld\n", bw, br);
    scan_file(argv[1]);
    scan_pipe();
    return 0;
}
