/* pg_greeting.c - tells a PostgreSQL conversation by its opening: the
 * client's StartupMessage (or SSL/GSS request) and the server's first
 * answer to it (pg_greeting.h). Pure functions over the bytes given: never
 * read past them, never allocate, never say YES to another protocol. */
#include "pg_greeting.h"

/* A StartupMessage this long or longer is no client's (parameters are a
 * few names and values; the server itself refuses past 10000). */
#define PG_STARTUP_MAX 10000u
/* An Authentication request's or an error's length, at most (SASL lists
 * a few mechanism names; an error a few fields of text). */
#define PG_ANSWER_MAX 8192u
/* Messages tracer_pg_frontend_run walks, at most (a batch of a pipeline:
 * libpq sends up to its output buffer's worth at once). */
#define PG_FRONTEND_RUN_MAX 4096u

int tracer_pg_opening(const unsigned char *p, size_t n)
{
    if (n < 8)
        return TRACER_PG_OPEN_NO;
    uint32_t len = tracer_pg_be32(p), code = tracer_pg_be32(p + 4);
    if (len == 8 && code == TRACER_PG_CODE_SSL)
        return TRACER_PG_OPEN_SSL;
    if (len == 8 && code == TRACER_PG_CODE_GSS)
        return TRACER_PG_OPEN_GSS;
    /* 3.0 (and 3.2, what PostgreSQL 18 clients may ask): the parameters'
     * name/value strings end in an extra NUL */
    if ((code >> 16) == 3 && (code & 0xffff) <= 2 && len >= 9 && len <= PG_STARTUP_MAX)
        return TRACER_PG_OPEN_STARTUP;
    return TRACER_PG_OPEN_NO;
}

/* Is b the first byte of an ErrorResponse field (its type)? */
static int pg_greeting_error_field(unsigned char b)
{
    switch (b) {
    case 'S':
    case 'V':
    case 'C':
    case 'M':
    case 'D':
    case 'H':
    case 'P':
    case 'p':
    case 'q':
    case 'W':
    case 's':
    case 't':
    case 'c':
    case 'd':
    case 'n':
    case 'F':
    case 'L':
    case 'R':
        return 1;
    default:
        return 0;
    }
}

/* An Authentication request: its code, and a length that fits it. */
static int pg_greeting_auth(uint32_t len, uint32_t code)
{
    switch (code) {
    case 0: /* AuthenticationOk */
    case 2: /* KerberosV5 */
    case 3: /* CleartextPassword */
    case 7: /* GSS */
    case 9: /* SSPI */
        return len == 8;
    case 5: /* MD5Password: a 4-byte salt */
        return len == 12;
    case 10: /* SASL: mechanism names, each NUL-ended, then a NUL */
        return len >= 10;
    default: /* 8 GSSContinue, 11 SASLContinue, 12 SASLFinal come later */
        return 0;
    }
}

int tracer_pg_answer(const unsigned char *p, size_t n, size_t cap)
{
    if (n > cap)
        n = cap;
    if (n < 1)
        return cap < 1 ? TRACER_PG_ANSWER_NO : TRACER_PG_ANSWER_MORE;
    if (p[0] != 'R' && p[0] != 'E' && p[0] != 'v')
        return TRACER_PG_ANSWER_NO;
    size_t need = p[0] == 'E' ? 6 : 9;
    if (need > cap)
        return TRACER_PG_ANSWER_NO;
    if (n < 5)
        return TRACER_PG_ANSWER_MORE;
    uint32_t len = tracer_pg_be32(p + 1);
    if (len < 5 || len > PG_ANSWER_MAX)
        return TRACER_PG_ANSWER_NO;
    if (n < need)
        return TRACER_PG_ANSWER_MORE;
    if (p[0] == 'R')
        return pg_greeting_auth(len, tracer_pg_be32(p + 5)) ? TRACER_PG_ANSWER_YES
                                                            : TRACER_PG_ANSWER_NO;
    if (p[0] == 'v') /* the newest 3.x minor the server speaks, then options */
        return len >= 12 && tracer_pg_be32(p + 5) <= 2 ? TRACER_PG_ANSWER_YES : TRACER_PG_ANSWER_NO;
    return pg_greeting_error_field(p[5]) ? TRACER_PG_ANSWER_YES : TRACER_PG_ANSWER_NO;
}

/* Is b a message type a PostgreSQL frontend sends once started? */
static int pg_greeting_frontend_type(unsigned char b)
{
    switch (b) {
    case 'B': /* Bind */
    case 'C': /* Close */
    case 'c': /* CopyDone */
    case 'd': /* CopyData */
    case 'D': /* Describe */
    case 'E': /* Execute */
    case 'f': /* CopyFail */
    case 'F': /* FunctionCall */
    case 'H': /* Flush */
    case 'p': /* a password or SASL response */
    case 'P': /* Parse */
    case 'Q': /* Query */
    case 'S': /* Sync */
    case 'X': /* Terminate */
        return 1;
    default:
        return 0;
    }
}

/* The byte at offset off of the n bytes in iov (off < n). */
static unsigned char pg_greeting_iov_byte(const struct iovec *iov, int iovcnt, size_t off)
{
    for (int i = 0; i < iovcnt; i++) {
        if (off < iov[i].iov_len)
            return ((const unsigned char *)iov[i].iov_base)[off];
        off -= iov[i].iov_len;
    }
    return 0;
}

int tracer_pg_frontend_run(const struct iovec *iov, int iovcnt, size_t n)
{
    size_t total = 0;
    for (int i = 0; i < iovcnt; i++)
        total += iov[i].iov_len;
    if (n > total || n < 5)
        return 0;
    size_t off = 0;
    for (unsigned msgs = 0; off < n; msgs++) {
        if (msgs == PG_FRONTEND_RUN_MAX || n - off < 5)
            return 0;
        if (!pg_greeting_frontend_type(pg_greeting_iov_byte(iov, iovcnt, off)))
            return 0;
        unsigned char h[4];
        for (size_t k = 0; k < 4; k++)
            h[k] = pg_greeting_iov_byte(iov, iovcnt, off + 1 + k);
        uint32_t len = tracer_pg_be32(h);
        if (len < 4 || len > n - off - 1)
            return 0;
        off += 1 + (size_t)len;
    }
    return 1;
}
