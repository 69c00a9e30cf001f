/* app_proto.c - encoder/decoder of the app tier's framed protocol (app_proto.h).
 * Never trusts a length field: a frame longer than the limits is an error. */
#include "app_proto.h"
#include "app_net.h"

#include <errno.h>
#include <string.h>

static void app_proto_put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void app_proto_put64(unsigned char *p, uint64_t v)
{
    app_proto_put32(p, (uint32_t)(v >> 32));
    app_proto_put32(p + 4, (uint32_t)v);
}

static uint32_t app_proto_get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t app_proto_get64(const unsigned char *p)
{
    return (uint64_t)app_proto_get32(p) << 32 | app_proto_get32(p + 4);
}

const char *app_proto_op_name(uint8_t op)
{
    switch (op) {
    case APP_OP_LOOKUP:
        return "lookup";
    case APP_OP_RENDER:
        return "render";
    default:
        return NULL;
    }
}

int app_proto_write_request(int fd, const struct app_proto_request *req)
{
    unsigned char frame[4 + APP_PROTO_REQUEST_BODY];
    app_proto_put32(frame, APP_PROTO_REQUEST_BODY);
    frame[4] = req->op;
    app_proto_put64(frame + 5, req->request_id);
    app_proto_put64(frame + 13, req->parent_id);
    app_proto_put32(frame + 21, req->key);
    return app_write_all(fd, frame, sizeof frame);
}

int app_proto_read_request(int fd, struct app_proto_request *req, uint64_t *first_byte_ns)
{
    unsigned char frame[4 + APP_PROTO_REQUEST_BODY];
    int rc = app_read_full(fd, frame, 4);
    if (rc <= 0)
        return rc;
    if (first_byte_ns)
        *first_byte_ns = app_now_ns();
    if (app_proto_get32(frame) != APP_PROTO_REQUEST_BODY) {
        errno = EPROTO;
        return -1;
    }
    rc = app_read_full(fd, frame + 4, APP_PROTO_REQUEST_BODY);
    if (rc != 1) {
        if (rc == 0)
            errno = EPIPE;
        return -1;
    }
    req->op = frame[4];
    req->request_id = app_proto_get64(frame + 5);
    req->parent_id = app_proto_get64(frame + 13);
    req->key = app_proto_get32(frame + 21);
    return 1;
}

int app_proto_write_response(int fd, uint8_t status, uint64_t request_id, const void *payload,
                             size_t len)
{
    if (len > APP_PROTO_MAX_PAYLOAD) {
        errno = EMSGSIZE;
        return -1;
    }
    unsigned char frame[4 + 9 + APP_PROTO_MAX_PAYLOAD];
    app_proto_put32(frame, (uint32_t)(9 + len));
    frame[4] = status;
    app_proto_put64(frame + 5, request_id);
    if (len)
        memcpy(frame + 13, payload, len);
    return app_write_all(fd, frame, 13 + len);
}

int app_proto_read_response(int fd, uint8_t *status, uint64_t *request_id, char *buf,
                            size_t buf_cap, size_t *len)
{
    unsigned char head[13];
    int rc = app_read_full(fd, head, 4);
    if (rc <= 0)
        return rc;
    uint32_t body = app_proto_get32(head);
    if (body < 9 || body - 9 > APP_PROTO_MAX_PAYLOAD || body - 9 >= buf_cap) {
        errno = EPROTO;
        return -1;
    }
    rc = app_read_full(fd, head + 4, 9);
    if (rc == 1)
        rc = app_read_full(fd, buf, body - 9); /* 1 for an empty payload too */
    if (rc != 1) {
        if (rc == 0)
            errno = EPIPE;
        return -1;
    }
    *status = head[4];
    *request_id = app_proto_get64(head + 5);
    *len = body - 9;
    buf[*len] = '\0';
    return 1;
}
