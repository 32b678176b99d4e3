/*
 * What the sim's server files share: the server (struct lt_sim), one
 * request's state (struct sreq; its life is drawn in sim_server.c), and the
 * calls between the three rooms, as redis keeps ae.c, networking.c and
 * server.c apart:
 *
 *   sim_loop.c    the event loop thread: the timer heap, the timerfd and the
 *                 waker, suspend and resume, the watch on a client's socket
 *                 for its departure, and the tick that does what is due;
 *   sim_listen.c  the listener and the connections: the address, the
 *                 libmicrohttpd daemon (again after a refuse fault), each
 *                 request's arrival, body and completion, and its log line;
 *   sim_server.c  the answers (routes, streams, faults, /metrics, llama.cpp's
 *                 endpoints), the model's emitted tokens, and the server's
 *                 start, stats and stop (sim.h).
 *
 * Everything here is under s->mu unless said otherwise. For sim/ only.
 */
#ifndef LT_SIM_SERVER_INTERNAL_H
#define LT_SIM_SERVER_INTERNAL_H

#include "sim/sim.h"
#include "sim/sim_api.h"
#include "sim/sim_faults.h"
#include "sim/sim_metrics.h"
#include "sim/sim_model.h"
#include "base/lt_buf.h"
#include "base/lt_heap.h"
#include "base/lt_hist.h"
#include "base/lt_time.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#define MAX_DAEMONS 64
/* Chunk lateness is kept to 3 significant digits up to an hour (values
 * above count as an hour): about 220 KiB, whatever the run's length. */
#define LATE_BITS 10
#define LATE_HIGHEST_US UINT64_C(3600000000)
#define NO_TIMER SIZE_MAX
/* What an event of the loop's epoll set is: the timer, the waker, or a
 * watched socket, whose request is told by EV_WATCH + its seq (a seq is
 * never reused; a socket's number is, once closed). */
#define EV_TIMER UINT64_C(0)
#define EV_WAKER UINT64_C(1)
#define EV_WATCH UINT64_C(2)

/* P_CLOSING: a refuse fault's request, held until the loop has shut the
 * listener, then closed unanswered. */
enum phase { P_BODY, P_DELAYED, P_CLOSING, P_WAITING, P_STREAMING, P_DONE };

struct sreq {
    struct lt_sim *s;
    struct sreq *prev, *next; /* live list */
    struct MHD_Connection *conn;
    enum phase phase;
    struct lt_buf body;
    size_t counted; /* bytes of body added to the server's pending total */
    bool too_big, inference, logged_arrival;
    uint16_t client_port; /* the client's TCP port, for the log */
    bool aborted;         /* its client closed before the answer ended (on_completed) */
    bool gone;            /* the loop saw its client close (depart): the answer is dropped */
    int watch_fd;         /* its socket, in the loop's epoll set while the model has it; -1 */
    bool busy;            /* the bodies in memory reached max_pending: 503 */
    bool two_length;      /* Content-Length headers that disagree: 400 */
    bool anthropic;       /* /v1/messages: errors in Anthropic's shape */
    const char *path;
    const char *method;
    uint64_t seq;
    enum lt_sim_fault fault;
    enum lt_sim_mfault mfault; /* GET /metrics */
    int status;
    int64_t arrival; /* real ns since start */
    int64_t modeled; /* when the model was given it (real ns since start) */
    struct lt_sim_call call;
    struct lt_sim_resp resp;
    char id[40];
    struct lt_sim_mreq *mreq;
    int64_t *rel;                  /* when each token may be sent (real ns since start) */
    int64_t emitted_t;             /* the model's time of its last token (llama.cpp's counters) */
    int64_t admitted_rel, first_rel; /* real ns: admitted to the batch, its first token (model) */
    int32_t slot;                    /* the model's slot for it (slot_runs); -1 none */
    int64_t *sent_at;              /* when it was written to the socket (only with --log) */
    uint32_t avail, sent, written; /* tokens emitted, rendered, written to the socket */
    bool model_done, head_sent, tail_sent, suspended, cut_due, cut, started;
    struct lt_buf out;
    size_t heap_idx;
    int64_t timer_at;
    int64_t due; /* P_DELAYED: when the answer may start (real ns since start) */
    /* P_CLOSING: when its fault shut the listener (real ns); -1: it did not */
    int64_t shut;
    int64_t end;
};

struct dmn {
    struct MHD_Daemon *d;
    int fd;
};

struct lt_sim {
    pthread_mutex_t mu;
    pthread_t loop;
    bool loop_started, stopping;
    int ep;        /* the loop's epoll set: the timer, the waker, watched sockets */
    int tfd;       /* timerfd: the next model event or fault timer */
    int wfd;       /* eventfd: another thread changed what is due next */
    int64_t armed; /* real time the loop wakes at next (INT64_MAX: never) */
    unsigned threads;
    struct lt_sim_profile prof;
    struct lt_sim_dialect dia;
    struct lt_sim_faults faults;
    double scale;
    uint64_t seed;
    size_t max_body;
    size_t max_pending; /* all request bodies in memory at once, bytes */
    size_t pending;     /* what they hold now (under mu) */
    unsigned max_conn;
    struct lt_sim_model *model;
    lt_mono t0;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    uint16_t port;
    struct dmn dm[MAX_DAEMONS];
    int ndm;
    bool listening; /* dm[ndm-1] accepts connections */
    bool refuse_req;
    int64_t refuse_until; /* real ns; 0 = not refusing */
    struct sreq *live;
    struct lt_heap timers; /* of struct sreq *, by timer_at */
    uint64_t next_seq;
    uint64_t next_mseq; /* GET /metrics answered, for the metrics faults' draw */
    struct lt_sim_stats st;
    struct lt_sim_metrics met; /* /metrics histograms (under mu) */
    uint64_t served;           /* requests finished since the cache was last emptied (mu) */
    struct lt_hist *late;      /* chunk lateness, us */
    pthread_mutex_t log_mu;
    FILE *log;
    bool log_failed;
};

static inline int64_t lt__sim_now_ns(const struct lt_sim *s)
{
    return lt_mono_diff_ns(lt_mono_now(), s->t0);
}

static inline int64_t lt__sim_to_model(const struct lt_sim *s, int64_t real)
{
    return (int64_t)((double)real * s->scale);
}

static inline int64_t lt__sim_to_real(const struct lt_sim *s, int64_t model)
{
    if (model == INT64_MAX)
        return INT64_MAX;
    return (int64_t)((double)model / s->scale + 0.999);
}

/* ---- the loop (sim_loop.c) ---- */

/* The loop's epoll set, timerfd, waker and timer heap: 0, or -1 with err
 * (what was made is closed by lt__sim_loop_close). */
int lt__sim_loop_open(struct lt_sim *s, struct lt_err *err);
/* Start the loop thread. */
int lt__sim_loop_start(struct lt_sim *s, struct lt_err *err);
/* Wake the loop to see s->stopping, and wait for its thread to end (not
 * under s->mu). */
void lt__sim_loop_join(struct lt_sim *s);
/* Close what lt__sim_loop_open made (the thread joined). */
void lt__sim_loop_close(struct lt_sim *s);
/* Tell the loop thread that something is due at real time at, before it
 * planned to wake. */
void lt__sim_poke(struct lt_sim *s, int64_t at);
/* Wake r at real time at. Returns false only when memory ran out. */
bool lt__sim_timer_set(struct lt_sim *s, struct sreq *r, int64_t at);
void lt__sim_timer_cancel(struct lt_sim *s, struct sreq *r);
/* Suspend r's connection in libmicrohttpd until lt__sim_wake. */
void lt__sim_suspend(struct sreq *r);
void lt__sim_wake(struct sreq *r);
/* Watch r's socket for its client's close while the model holds r (and
 * no more). */
void lt__sim_watch(struct lt_sim *s, struct sreq *r);
void lt__sim_unwatch(struct lt_sim *s, struct sreq *r);

/* ---- the listener and the connections (sim_listen.c) ---- */

/* Where to listen: host and port resolved into s->addr. */
int lt__sim_resolve(struct lt_sim *s, const char *host, uint16_t port, struct lt_err *err);
/* Open a listener and a daemon on it (the port is fixed after the first). */
int lt__sim_start_daemon(struct lt_sim *s, struct lt_err *err);
/* Refuse fault: stop listening now, keep serving the connections open. */
void lt__sim_stop_listening(struct lt_sim *s);

/* ---- the answers (sim_server.c) ---- */

/* Run the model up to real time now, resuming the streams it emitted to. */
void lt__sim_advance(struct lt_sim *s, int64_t now);
/* r's body is complete: answer it (or start to). */
enum MHD_Result lt__sim_route(struct sreq *r, const char *url, const char *method);
/* A delayed inference answer's time has come: give the model the request. */
enum MHD_Result lt__sim_start_answer(struct sreq *r);
/* A non-streamed answer whose last token is out: the whole body. */
enum MHD_Result lt__sim_answer_full(struct sreq *r);
/* GET /metrics, after its delay fault if any. */
enum MHD_Result lt__sim_answer_metrics(struct sreq *r);

#endif
