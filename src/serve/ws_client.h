/* ws_client.h — a small blocking websocket client (RFC 6455) on plain
 * sockets, written here independently of libwebsockets: `vla bench serve`
 * drives the server with it, and the tests use it to speak the protocol —
 * and to break it on purpose (raw bytes, half frames, unmasked frames, a
 * socket dropped mid-request), which a full client library would not allow.
 * The handshake checks Sec-WebSocket-Accept (SHA-1 + base64, implemented
 * here); frames from the client are masked, as the RFC requires. */
#ifndef VLA_SERVE_WS_CLIENT_H
#define VLA_SERVE_WS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

enum { VLA_WS_TEXT = 1, VLA_WS_BINARY = 2, VLA_WS_CLOSE = 8, VLA_WS_PING = 9, VLA_WS_PONG = 10 };

typedef struct vla_ws_client vla_ws_client;

/* Connect and upgrade. extra_headers: whole lines ("Authorization: Api-Key k\r\n"), or NULL.
 * A refused handshake fails with the server's status line and body in the message. */
vla_status vla_ws_connect(const char *host, int port, const char *extra_headers, double timeout_s, vla_ws_client **out);
/* One whole message in one frame (masked). */
vla_status vla_ws_send(vla_ws_client *c, int opcode, const void *data, size_t n);
/* Bytes straight onto the socket (tests: broken frames). */
vla_status vla_ws_send_raw(vla_ws_client *c, const void *data, size_t n);
/* The next message (fragments joined; pings answered). opcode VLA_WS_CLOSE:
 * *data holds the close payload (2-byte code, then the reason). The data
 * is malloc'd (free it); it is NUL-terminated past n for convenience. */
vla_status vla_ws_recv(vla_ws_client *c, int *opcode, uint8_t **data, size_t *n, double timeout_s);
/* The close code of a close payload (1005 when it has none). */
int vla_ws_close_code(const uint8_t *payload, size_t n);
/* Send a close frame and close the socket; _abort only closes the socket. */
void vla_ws_close(vla_ws_client *c);
void vla_ws_abort(vla_ws_client *c);

/* A plain HTTP/1.1 request (GET `path`, or raw `request` bytes when not
 * NULL): the status code and the response body (up to cap bytes). */
vla_status vla_http_request(const char *host, int port, const char *path, const char *request, int *status,
                            char *body, size_t cap, double timeout_s);

#endif
