/* ws_client.c — a blocking RFC 6455 client on POSIX sockets (see ws_client.h). */
#include "serve/ws_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/rng.h"
#include "base/timer.h"

struct vla_ws_client {
    int fd;
    uint8_t *buf; /* bytes read but not consumed */
    size_t len, cap;
    uint64_t mask_ctr;
};

/* ---- SHA-1 (FIPS 180-4) and base64, for Sec-WebSocket-Accept ------------------------ */

static uint32_t rol(uint32_t x, int n) { return x << n | x >> (32 - n); }

static void sha1(const uint8_t *msg, size_t n, uint8_t out[20]) {
    uint32_t h[5] = {0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    size_t total = ((n + 8) / 64 + 1) * 64;
    uint8_t *m = calloc(total, 1);
    if (!m) return;
    memcpy(m, msg, n);
    m[n] = 0x80;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++) m[total - 1 - i] = (uint8_t)(bits >> (8 * i));
    for (size_t blk = 0; blk < total; blk += 64) {
        uint32_t w[80];
        for (int t = 0; t < 16; t++)
            w[t] = (uint32_t)m[blk + 4 * t] << 24 | (uint32_t)m[blk + 4 * t + 1] << 16 | (uint32_t)m[blk + 4 * t + 2] << 8 |
                   m[blk + 4 * t + 3];
        for (int t = 16; t < 80; t++) w[t] = rol(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
        uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
        for (int t = 0; t < 80; t++) {
            uint32_t f, k;
            if (t < 20) f = (b & c) | (~b & d), k = 0x5A827999;
            else if (t < 40) f = b ^ c ^ d, k = 0x6ED9EBA1;
            else if (t < 60) f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
            else f = b ^ c ^ d, k = 0xCA62C1D6;
            uint32_t tmp = rol(a, 5) + f + e + k + w[t];
            e = d, d = c, c = rol(b, 30), b = a, a = tmp;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
    }
    free(m);
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 4; k++) out[4 * i + k] = (uint8_t)(h[i] >> (24 - 8 * k));
}

static void base64(const uint8_t *in, size_t n, char *out) {
    static const char T[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
        out[o++] = T[v >> 18 & 63];
        out[o++] = T[v >> 12 & 63];
        out[o++] = i + 1 < n ? T[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? T[v & 63] : '=';
    }
    out[o] = 0;
}

/* ---- sockets --------------------------------------------------------------------------- */

static vla_status tcp_connect(const char *host, int port, double timeout_s, int *fd_out) {
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_INET, hints.ai_socktype = SOCK_STREAM;
    int gr = getaddrinfo(host, ps, &hints, &res);
    if (gr != 0) return vla_error(VLA_ERR_IO, "ws: cannot resolve %s: %s", host, gai_strerror(gr));
    int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
    if (fd < 0) {
        freeaddrinfo(res);
        return vla_error(VLA_ERR_IO, "ws: socket: %s", strerror(errno));
    }
    struct timeval tv = {(time_t)timeout_s, (suseconds_t)((timeout_s - (double)(time_t)timeout_s) * 1e6)};
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int r = connect(fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (r != 0) {
        int e = errno;
        close(fd);
        return vla_error(VLA_ERR_IO, "ws: cannot connect to %s:%d: %s", host, port, strerror(e));
    }
    *fd_out = fd;
    return VLA_OK;
}

static vla_status write_all(int fd, const void *p, size_t n) {
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return vla_error(VLA_ERR_IO, "ws: send: %s", w < 0 ? strerror(errno) : "connection closed");
        b += w, n -= (size_t)w;
    }
    return VLA_OK;
}

/* At least `want` buffered bytes (or fail on timeout / close). */
static vla_status fill(vla_ws_client *c, size_t want, double deadline) {
    while (c->len < want) {
        if (c->cap - c->len < 65536) {
            size_t cap = c->cap ? c->cap * 2 : 131072;
            while (cap - c->len < 65536) cap *= 2;
            uint8_t *nb = realloc(c->buf, cap);
            if (!nb) return vla_error(VLA_ERR_NOMEM, "ws: out of memory");
            c->buf = nb, c->cap = cap;
        }
        double left = deadline - vla_now_s();
        if (left <= 0) return vla_error(VLA_ERR_IO, "ws: timed out waiting for the server");
        struct pollfd pfd = {c->fd, POLLIN, 0};
        int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR) continue;
        if (pr == 0) continue;
        ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) return vla_error(VLA_ERR_IO, "ws: the server closed the connection");
        if (r < 0) return vla_error(VLA_ERR_IO, "ws: recv: %s", strerror(errno));
        c->len += (size_t)r;
    }
    return VLA_OK;
}

static void consume(vla_ws_client *c, size_t n) {
    memmove(c->buf, c->buf + n, c->len - n);
    c->len -= n;
}

vla_status vla_ws_connect(const char *host, int port, const char *extra_headers, double timeout_s, vla_ws_client **out) {
    *out = NULL;
    vla_ws_client *c = calloc(1, sizeof *c);
    if (!c) return vla_error(VLA_ERR_NOMEM, "ws: out of memory");
    c->fd = -1;
    c->mask_ctr = (uint64_t)vla_now_ns();
    vla_status st = tcp_connect(host, port, timeout_s, &c->fd);
    uint8_t nonce[16];
    vla_rng r = vla_rng_stream(c->mask_ctr, (uint64_t)(uintptr_t)c);
    for (int i = 0; i < 16; i++) nonce[i] = (uint8_t)vla_rng_u32(&r);
    char key[32], req[2048];
    base64(nonce, 16, key);
    int rn = snprintf(req, sizeof req,
                      "GET / HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n",
                      host, port, key, extra_headers ? extra_headers : "");
    if (st == VLA_OK) st = write_all(c->fd, req, (size_t)rn);
    double deadline = vla_now_s() + timeout_s;
    char *end = NULL;
    while (st == VLA_OK) { /* the response's header block */
        st = fill(c, c->len + 1, deadline);
        if (st != VLA_OK) break;
        c->buf[c->len] = 0; /* fill keeps spare room */
        if ((end = strstr((char *)c->buf, "\r\n\r\n"))) break;
        if (c->len > 16384) st = vla_error(VLA_ERR_FORMAT, "ws: handshake response too long");
    }
    if (st == VLA_OK) {
        size_t hlen = (size_t)(end - (char *)c->buf) + 4;
        int code = 0;
        sscanf((char *)c->buf, "HTTP/1.1 %d", &code);
        if (code != 101) {
            char *body = end + 4;
            st = vla_error(VLA_ERR_IO, "ws: handshake refused: %.*s%s%.*s", (int)strcspn((char *)c->buf, "\r"),
                           (char *)c->buf, *body ? " — " : "", (int)strcspn(body, "\r\n"), body);
        } else {
            /* Sec-WebSocket-Accept = base64(SHA-1(key + the RFC's GUID)) */
            char cat[128], want[64];
            uint8_t dig[20];
            snprintf(cat, sizeof cat, "%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11", key);
            sha1((const uint8_t *)cat, strlen(cat), dig);
            base64(dig, 20, want);
            const char *h = strcasestr((char *)c->buf, "\r\nSec-WebSocket-Accept:");
            char got[64] = "";
            if (h && h < end) sscanf(h + 23, " %63[^\r\n ]", got);
            if (strcmp(got, want)) st = vla_error(VLA_ERR_FORMAT, "ws: Sec-WebSocket-Accept '%s', expected '%s'", got, want);
        }
        if (st == VLA_OK) consume(c, hlen);
    }
    if (st != VLA_OK) {
        vla_ws_abort(c);
        return st;
    }
    *out = c;
    return VLA_OK;
}

vla_status vla_ws_send(vla_ws_client *c, int opcode, const void *data, size_t n) {
    uint8_t hdr[14];
    size_t h = 0;
    hdr[h++] = (uint8_t)(0x80 | (opcode & 0x0f));
    if (n < 126) hdr[h++] = (uint8_t)(0x80 | n);
    else if (n < 65536) hdr[h++] = 0x80 | 126, hdr[h++] = (uint8_t)(n >> 8), hdr[h++] = (uint8_t)n;
    else {
        hdr[h++] = 0x80 | 127;
        for (int i = 7; i >= 0; i--) hdr[h++] = (uint8_t)((uint64_t)n >> (8 * i));
    }
    vla_rng r = vla_rng_stream(c->mask_ctr++, 7);
    uint32_t m32 = vla_rng_u32(&r);
    uint8_t mask[4] = {(uint8_t)m32, (uint8_t)(m32 >> 8), (uint8_t)(m32 >> 16), (uint8_t)(m32 >> 24)};
    memcpy(hdr + h, mask, 4);
    h += 4;
    uint8_t *frame = malloc(h + n + 1);
    if (!frame) return vla_error(VLA_ERR_NOMEM, "ws: out of memory");
    memcpy(frame, hdr, h);
    const uint8_t *d = data;
    for (size_t i = 0; i < n; i++) frame[h + i] = d[i] ^ mask[i & 3];
    vla_status st = write_all(c->fd, frame, h + n);
    free(frame);
    return st;
}

vla_status vla_ws_send_raw(vla_ws_client *c, const void *data, size_t n) { return write_all(c->fd, data, n); }

vla_status vla_ws_recv(vla_ws_client *c, int *opcode, uint8_t **data, size_t *n, double timeout_s) {
    *data = NULL, *n = 0, *opcode = 0;
    double deadline = vla_now_s() + timeout_s;
    uint8_t *msg = NULL;
    size_t mlen = 0;
    int mop = 0;
    for (;;) {
        VLA_TRY(fill(c, 2, deadline));
        int fin = c->buf[0] >> 7, op = c->buf[0] & 0x0f;
        uint64_t len = c->buf[1] & 0x7f;
        size_t h = 2;
        if (c->buf[1] & 0x80) return vla_error(VLA_ERR_FORMAT, "ws: the server masked a frame (RFC 6455 5.1)");
        if (len == 126) {
            VLA_TRY(fill(c, 4, deadline));
            len = (uint64_t)c->buf[2] << 8 | c->buf[3], h = 4;
        } else if (len == 127) {
            VLA_TRY(fill(c, 10, deadline));
            len = 0;
            for (int i = 0; i < 8; i++) len = len << 8 | c->buf[2 + i];
            h = 10;
        }
        if (len > (1u << 30)) return vla_error(VLA_ERR_FORMAT, "ws: a frame of %llu bytes", (unsigned long long)len);
        VLA_TRY(fill(c, h + (size_t)len, deadline));
        const uint8_t *payload = c->buf + h;
        if (op == VLA_WS_PING) { /* answer and read on */
            uint8_t tmp[128];
            size_t pl = len < sizeof tmp ? (size_t)len : sizeof tmp;
            memcpy(tmp, payload, pl);
            consume(c, h + (size_t)len);
            VLA_TRY(vla_ws_send(c, VLA_WS_PONG, tmp, pl));
            continue;
        }
        if (op == VLA_WS_PONG) {
            consume(c, h + (size_t)len);
            continue;
        }
        if (op != 0) mop = op;
        uint8_t *nm = realloc(msg, mlen + (size_t)len + 1);
        if (!nm) {
            free(msg);
            return vla_error(VLA_ERR_NOMEM, "ws: out of memory");
        }
        msg = nm;
        memcpy(msg + mlen, payload, (size_t)len);
        mlen += (size_t)len;
        msg[mlen] = 0;
        consume(c, h + (size_t)len);
        if (fin || op == VLA_WS_CLOSE) break;
    }
    *opcode = mop, *data = msg, *n = mlen;
    return VLA_OK;
}

int vla_ws_close_code(const uint8_t *p, size_t n) { return n >= 2 ? p[0] << 8 | p[1] : 1005; }

void vla_ws_close(vla_ws_client *c) {
    if (!c) return;
    if (c->fd >= 0) {
        uint8_t code[2] = {0x03, 0xe8}; /* 1000 */
        vla_ws_send(c, VLA_WS_CLOSE, code, 2);
    }
    vla_ws_abort(c);
}

void vla_ws_abort(vla_ws_client *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    free(c->buf);
    free(c);
}

vla_status vla_http_request(const char *host, int port, const char *path, const char *request, int *status,
                            char *body, size_t cap, double timeout_s) {
    *status = 0;
    if (cap) body[0] = 0;
    vla_ws_client c = {-1, NULL, 0, 0, 0};
    VLA_TRY(tcp_connect(host, port, timeout_s, &c.fd));
    char req[1024];
    if (!request) snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s:%d\r\nConnection: close\r\n\r\n", path, host, port);
    vla_status st = write_all(c.fd, request ? request : req, strlen(request ? request : req));
    double deadline = vla_now_s() + timeout_s;
    while (st == VLA_OK) { /* read to the close, or to Content-Length */
        st = fill(&c, c.len + 1, deadline);
        if (st != VLA_OK) break;
        c.buf[c.len] = 0;
        char *end = strstr((char *)c.buf, "\r\n\r\n");
        if (!end) continue;
        const char *cl = strcasestr((char *)c.buf, "\r\ncontent-length:");
        size_t want = cl && cl < end ? (size_t)strtoul(cl + 17, NULL, 10) : 0;
        if (cl && c.len >= (size_t)(end + 4 - (char *)c.buf) + want) break;
    }
    if (c.len > 0) { /* a closed connection after a full response is the normal end */
        c.buf[c.len] = 0;
        sscanf((char *)c.buf, "HTTP/1.%*d %d", status);
        char *end = strstr((char *)c.buf, "\r\n\r\n");
        if (end && cap) snprintf(body, cap, "%s", end + 4);
        if (*status > 0) st = VLA_OK;
    }
    close(c.fd);
    free(c.buf);
    return st;
}
