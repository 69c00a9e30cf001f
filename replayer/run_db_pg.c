/* run_db_pg.c - the DB state of `preplay run` with a postgresql:// --db:
 * one pg_dump -Fc before the first interval, one pg_restore --clean
 * --if-exists --single-transaction before each. Measured on pgbench's
 * scale-1 database (23 MB, fsync off, this 2-core VM): pg_restore 0.20 to
 * 0.46 s, DROP DATABASE ... WITH (FORCE) + CREATE DATABASE ... TEMPLATE a
 * copy 0.30 to 0.59 s; no faster, and the template way must end every
 * session on the database (the replayers' pooled connections with them),
 * which restoring objects inside it does not. The password never goes on
 * a command line or into the environment's PGPASSWORD: a 0600 password
 * file in the run's private temp dir, named by PGPASSFILE in the tool's
 * environment only. Never prints. */
#include "run_db_pg.h"
#include "run_session.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int run_db_pg_passfile(const char *dir, const char *password, char *passfile, size_t n, char *err,
                       size_t errlen)
{
    passfile[0] = 0;
    if (!password || !password[0])
        return 0;
    snprintf(passfile, n, "%s/pgpass", dir);
    int fd = open(passfile, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    /* host:port:db:user:password, any of each; : and \ escaped */
    int bad = !f || fputs("*:*:*:*:", f) < 0;
    for (const char *c = password; !bad && *c; c++)
        bad = ((*c == ':' || *c == '\\') && fputc('\\', f) < 0) || fputc(*c, f) < 0;
    bad = bad || fputc('\n', f) < 0;
    if (f)
        bad = fclose(f) || bad;
    else if (fd >= 0)
        close(fd);
    if (bad) {
        snprintf(err, errlen, "%s: cannot write the DB password file: %s", passfile,
                 strerror(errno));
        return -1;
    }
    return 0;
}

static int run_db_pg_exec(char *const argv[], const char *passfile)
{
    return run_exec(argv, "/dev/null", NULL, "PGPASSFILE", passfile[0] ? passfile : NULL);
}

int run_db_pg_dump(const char *url, const char *passfile, const char *dump_path)
{
    char *argv[] = {"pg_dump",         "--format=custom", "--no-owner", "--file",
                    (char *)dump_path, "--dbname",        (char *)url,  NULL};
    return run_db_pg_exec(argv, passfile);
}

int run_db_pg_restore(const char *url, const char *passfile, const char *dump_path)
{
    char *argv[] = {"pg_restore", "--clean",  "--if-exists", "--single-transaction",
                    "--no-owner", "--dbname", (char *)url,   (char *)dump_path,
                    NULL};
    return run_db_pg_exec(argv, passfile);
}
