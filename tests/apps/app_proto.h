/* app_proto.h - the app tier's length-prefixed TCP protocol (spec in README.md).
 * Both directions are frames: a 4-byte big-endian body length, then the body.
 *   request body:  op u8 | request_id u64 | parent_id u64 | key u32   (21 bytes)
 *   response body: status u8 | request_id u64 | payload (0..APP_PROTO_MAX_PAYLOAD)
 * Readers reject frames of the wrong size instead of trusting the peer. */
#ifndef APP_PROTO_H
#define APP_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define APP_PROTO_MAX_PAYLOAD 65536
#define APP_PROTO_REQUEST_BODY 21

enum app_proto_op { APP_OP_LOOKUP = 1, APP_OP_RENDER = 2 };
enum app_proto_status { APP_STATUS_OK = 0, APP_STATUS_ERROR = 1 };

struct app_proto_request {
    uint8_t op;
    uint64_t request_id;
    uint64_t parent_id;
    uint32_t key;
};

/* Name of an op ("lookup", "render") or NULL for an unknown one. */
const char *app_proto_op_name(uint8_t op);

int app_proto_write_request(int fd, const struct app_proto_request *req);

/* 1 with *req filled, 0 on a clean end of stream, -1 on error or a malformed
 * frame (errno = EPROTO then). *first_byte_ns gets the time the frame started to
 * arrive (when it is non-NULL). */
int app_proto_read_request(int fd, struct app_proto_request *req, uint64_t *first_byte_ns);

int app_proto_write_response(int fd, uint8_t status, uint64_t request_id, const void *payload,
                             size_t len);

/* 1 with status/id/payload filled (payload NUL-terminated, buf_cap > len), 0 on
 * end of stream before a frame, -1 on error or malformed frame. */
int app_proto_read_response(int fd, uint8_t *status, uint64_t *request_id, char *buf,
                            size_t buf_cap, size_t *len);

#endif
