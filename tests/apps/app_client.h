/* app_client.h - the front end's small pool of persistent connections to the
 * app tier. A call takes a free connection (waiting for one when all are busy),
 * sends one request, reads its response and gives the connection back. Never
 * sends two requests on one connection at the same time. */
#ifndef APP_CLIENT_H
#define APP_CLIENT_H

#include "app_proto.h"

#include <stddef.h>

struct app_client_pool;

struct app_client_pool *app_client_pool_new(const char *host, unsigned port, unsigned size);
void app_client_pool_free(struct app_client_pool *pool);

/* One request/response exchange. Reconnects once when a pooled connection turns
 * out to be closed before any response byte arrived. 0 with the payload in buf
 * (NUL-terminated), or -1 with a one-line reason in err. */
int app_client_call(struct app_client_pool *pool, const struct app_proto_request *req, char *buf,
                    size_t buf_cap, size_t *len, char *err, size_t err_cap);

#endif
