/* db_greeting.c - tells a MySQL/MariaDB server by the first packet it
 * sends (db_greeting.h). Packets are [3-byte length][sequence][payload];
 * the server's first has sequence 0 and is either
 *   HandshakeV10: protocol version 10, the server version (NUL-terminated,
 *     a digit first), connection id (4), scramble part 1 (8), a zero filler,
 *     capabilities low (2, CLIENT_PROTOCOL_41 set), charset (1), status (2),
 *     capabilities high (2), scramble length (1), 10 reserved bytes (all
 *     zero for MySQL; MariaDB puts its extended capabilities in the last 4
 *     when it clears CLIENT_MYSQL), then scramble part 2 (at least 13 bytes
 *     with CLIENT_SECURE_CONNECTION) and the plugin name; or
 *   ERR: 0xff, an error code (1000..9999: "Too many connections", "Host
 *     ... is not allowed to connect") and a printable message.
 * Every field up to the reserved bytes is checked against the packet's own
 * length. Never reads p past n, and looks at no more than cap bytes. */
#include "db_greeting.h"

#include <stdint.h>

#define DB_GREETING_MAX_LEN 1024u /* payload bytes: real greetings are ~100 */
#define DB_GREETING_VERSION_MAX 64u
#define DB_GREETING_PROTOCOL_41 0x0200u
#define DB_GREETING_SECURE_CONNECTION 0x8000u
#define DB_GREETING_CLIENT_MYSQL 0x0001u
/* from the version's NUL to the end of the reserved bytes */
#define DB_GREETING_FIXED 31u

static unsigned db_greeting_le16(const unsigned char *p)
{
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

static int db_greeting_printable(unsigned char c)
{
    return (c >= 0x20 && c < 0x7f) || c == '\t' || c == '\r' || c == '\n';
}

/* The ERR packet a server sends instead of a greeting (p[4] == 0xff). */
static int db_greeting_err(const unsigned char *p, size_t n, size_t cap, size_t len)
{
    if (len < 4)
        return TRACER_DB_GREETING_NO; /* 0xff, the code, and a message */
    if (n >= 7) {
        unsigned code = db_greeting_le16(p + 5);
        if (code < 1000 || code > 9999)
            return TRACER_DB_GREETING_NO;
    }
    size_t end = 4 + len;
    for (size_t i = 7; i < n && i < end; i++)
        if (!db_greeting_printable(p[i]))
            return TRACER_DB_GREETING_NO;
    size_t want = end < cap ? end : cap;
    if (n < want)
        return TRACER_DB_GREETING_MORE;
    return TRACER_DB_GREETING_YES;
}

/* The fields after the server version's NUL at p[nul] (HandshakeV10). */
static int db_greeting_fixed(const unsigned char *p, size_t nul, size_t len)
{
    const unsigned char *q = p + nul + 1;
    if (q[12] != 0)
        return TRACER_DB_GREETING_NO; /* the filler */
    unsigned caps = db_greeting_le16(q + 13);
    if (!(caps & DB_GREETING_PROTOCOL_41))
        return TRACER_DB_GREETING_NO;
    const unsigned char *reserved = q + 21;
    unsigned zeros = (caps & DB_GREETING_CLIENT_MYSQL) ? 10 : 6;
    for (unsigned i = 0; i < zeros; i++)
        if (reserved[i])
            return TRACER_DB_GREETING_NO;
    size_t payload_fixed = nul + 1 + DB_GREETING_FIXED - 4;
    if (caps & DB_GREETING_SECURE_CONNECTION) {
        size_t part2 = q[20] > 8 + 13 ? (size_t)q[20] - 8 : 13;
        payload_fixed += part2;
    }
    return payload_fixed <= len ? TRACER_DB_GREETING_YES : TRACER_DB_GREETING_NO;
}

/* HandshakeV10 (p[4] == 10): the version, then the fixed fields. */
static int db_greeting_v10(const unsigned char *p, size_t n, size_t cap, size_t len)
{
    size_t end = 4 + len;
    size_t nul = 0;
    for (size_t i = 5; i < n && i < end && !nul; i++) {
        if (i == 5 ? !(p[i] >= '0' && p[i] <= '9') : (p[i] && !(p[i] > 0x20 && p[i] < 0x7f)))
            return TRACER_DB_GREETING_NO;
        if (!p[i])
            nul = i;
        else if (i - 5 >= DB_GREETING_VERSION_MAX)
            return TRACER_DB_GREETING_NO;
    }
    if (!nul)
        return n >= end || n >= cap ? TRACER_DB_GREETING_NO : TRACER_DB_GREETING_MORE;
    size_t need = nul + 1 + DB_GREETING_FIXED;
    if (need > end || need > cap)
        return TRACER_DB_GREETING_NO;
    if (n < need)
        return TRACER_DB_GREETING_MORE;
    return db_greeting_fixed(p, nul, len);
}

int tracer_db_greeting(const unsigned char *p, size_t n, size_t cap)
{
    if (n > cap)
        n = cap;
    if (n < 4)
        return cap < 4 ? TRACER_DB_GREETING_NO : TRACER_DB_GREETING_MORE;
    size_t len = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16;
    if (p[3] != 0 || len < 4 || len > DB_GREETING_MAX_LEN)
        return TRACER_DB_GREETING_NO;
    if (n < 5)
        return cap < 5 ? TRACER_DB_GREETING_NO : TRACER_DB_GREETING_MORE;
    if (p[4] == 10)
        return db_greeting_v10(p, n, cap, len);
    if (p[4] == 0xff)
        return db_greeting_err(p, n, cap, len);
    return TRACER_DB_GREETING_NO;
}
