/* tt_stdio.c - buffered stdio with known bytes, for test_stdio.py: glibc
 * moves them to and from the descriptor through internal calls the tracer
 * cannot wrap, so the trace must account for them from the streams'
 * buffers. Writes DIR/a.txt with fwrite and fprintf through a 4 KiB
 * buffer, reads it back with fread and fgets, then writes DIR/b.txt with
 * fputs, flushes, seeks to its start and reads it with fread. Prints the
 * byte counts: "a WRITTEN READ" and "b WRITTEN READ". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what)
{
    perror(what);
    exit(1);
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
    return 0;
}
