/*
 * The lean HTTP/1.1 client of the live replay (replay_h1.c): plain-http
 * targets without a proxy, on replay's own epoll loop, beside libcurl
 * (which stays for TLS, HTTP/2 and proxies). libcurl checks each socket
 * for pending data after every read (one poll() per recv()); this client
 * reads once per readable event, which is what a stream of one token per
 * SSE event costs (bench/README.md, "CPU per streamed token").
 *
 * replay.c chooses the client (h1.on), hands each request to lt__h1_send,
 * gives it every event of a descriptor h1 owns (lt__h1_event) and its
 * deadline (h1.due); a request ends through lt__replay_done like a curl
 * transfer, and finish() detaches it (lt__h1_detach), which is also how one
 * request's transfer is cut mid-stream (a cancellation, Ctrl-C). Nothing
 * outside replay/ includes this header.
 */
#ifndef LT_H1_INTERNAL_H
#define LT_H1_INTERNAL_H

#include "base/lt_buf.h"
#include "base/lt_err.h"
#include "base/lt_time.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct lt_replay;
struct lt_replay_req;
struct h1_conn;

#define H1_MAX_ADDRS 4

struct h1 {
    bool on; /* this replay's requests use the lean client */
    struct sockaddr_storage addr[H1_MAX_ADDRS];
    socklen_t addrlen[H1_MAX_ADDRS];
    int naddr, good;       /* addresses resolved; the one that last connected */
    char resolve_err[768]; /* why the host has no address ("" = resolved or not yet) */
    char host[512], port[16];
    struct lt_buf head;    /* request line and headers, up to "Content-Length: " */
    struct h1_conn **byfd; /* the connection of each descriptor (NULL: not ours) */
    size_t nfd;
    struct h1_conn *idle; /* idle keep-alive connections, most recently used first */
    lt_mono due;          /* the earliest deadline (connect or total timeout) */
    bool due_set;
    uint64_t round; /* epoll_wait rounds (stale events, see lt__h1_event) */
    bool in_send;   /* inside lt__h1_send: the plan is sending, a failure waits */
    int64_t connect_ns, timeout_ns;
    char *rbuf; /* the one receive buffer: bytes are parsed as they come */
    size_t rcap;
};

/* Which client o asks for: 0 curl, 1 lean; or LT_EINVAL with err when the
 * lean client was forced on a target it cannot serve. Reads the proxy
 * environment (as libcurl would): auto leaves proxied targets to curl. */
int lt__h1_choose(struct lt_replay *rp, struct lt_err *err);
/* The request head from the target and the shared headers; no I/O. */
int lt__h1_init(struct lt_replay *rp, struct lt_err *err);
/* Resolve the target's host (before a run: lt_replay_prepare). A host
 * without an address is not an error here: each request then fails as
 * `connect`, as with curl. */
void lt__h1_prepare(struct lt_replay *rp);
/* Close every connection and free (with every request already detached). */
void lt__h1_release(struct lt_replay *rp);

/* Start q's transfer (q->body is its body): an idle connection or a new
 * one. A failure to start is q's own result (connect), never the run's. */
int lt__h1_send(struct lt_replay *rp, struct lt_replay_req *q, struct lt_err *err);
/* An event of descriptor fd: 1 if it is the lean client's (handled),
 * 0 if not (curl's, the scraper's), or a negative code from finishing a
 * request. */
int lt__h1_event(struct lt_replay *rp, int fd, uint32_t events, struct lt_err *err);
/* The epoll loop starts a round of events. */
static inline void lt__h1_round(struct h1 *h)
{
    h->round++;
}
/* Requests past their connect or total timeout end as `timeout`. */
int lt__h1_timeouts(struct lt_replay *rp, struct lt_err *err);
/* Detach q from its connection: kept for the next request if its answer
 * was read to its end and the server keeps it alive, else closed, which
 * aborts the transfer mid-stream (the server sees the client go). */
void lt__h1_detach(struct lt_replay *rp, struct lt_replay_req *q);

#endif
