/*
 * The sim's event loop (sim/sim_server_internal.h): one thread of ours
 * that keeps time. It advances the model, sleeps on a timerfd until the
 * next model event or fault timer, and resumes the connections whose
 * tokens are due; other threads that make something due earlier poke its
 * eventfd. While the model holds a request, the loop's epoll set also
 * watches the request's socket, so that a client who leaves is taken out
 * of the model at once. The answers are sim_server.c's, the connections
 * sim_listen.c's.
 */
#include "sim/sim_server_internal.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* ---- timers: a binary min-heap of requests, each with at most one ---- */

static bool timer_less(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    return (*(struct sreq *const *)a)->timer_at < (*(struct sreq *const *)b)->timer_at;
}

static void timer_moved(void *item, size_t idx, void *ctx)
{
    (void)ctx;
    (*(struct sreq **)item)->heap_idx = idx;
}

/* The request whose timer is due first, or NULL. */
static struct sreq *timer_first(const struct lt_sim *s)
{
    struct sreq **top = lt_heap_top(&s->timers);
    return top ? *top : NULL;
}

void lt__sim_timer_cancel(struct lt_sim *s, struct sreq *r)
{
    if (r->heap_idx == NO_TIMER)
        return;
    lt_heap_remove(&s->timers, r->heap_idx, NULL);
    r->heap_idx = NO_TIMER;
}

/* Tell the loop thread that something is due before it planned to wake. */
void lt__sim_poke(struct lt_sim *s, int64_t at)
{
    if (at < s->armed) {
        uint64_t one = 1;
        s->armed = at; /* one poke is enough until the loop re-plans */
        if (write(s->wfd, &one, sizeof one) < 0)
            one = 0; /* the counter is already non-zero: the loop wakes anyway */
    }
}

/* Wake r at real time at. Returns false only when memory ran out. */
bool lt__sim_timer_set(struct lt_sim *s, struct sreq *r, int64_t at)
{
    lt__sim_poke(s, at);
    if (r->heap_idx != NO_TIMER) {
        r->timer_at = at;
        lt_heap_fix(&s->timers, r->heap_idx);
        return true;
    }
    int64_t was = r->timer_at;
    r->timer_at = at;
    if (lt_heap_push(&s->timers, &r) < 0) {
        r->timer_at = was;
        return false;
    }
    return true;
}

/* ---- suspend / resume (always under s->mu) ---- */

void lt__sim_suspend(struct sreq *r)
{
    if (!r->suspended) {
        r->suspended = true;
        MHD_suspend_connection(r->conn);
    }
}

void lt__sim_wake(struct sreq *r)
{
    if (r->suspended) {
        r->suspended = false;
        MHD_resume_connection(r->conn);
    }
}

/* ---- a client's departure (always under s->mu) ----
 *
 * A suspended connection is out of libmicrohttpd's poll set, so on its own
 * the server would learn that the client left only at the next write to it:
 * a request queued behind max_running would keep its place, and one in the
 * batch its slot, until its next token: a cancelled request would go on
 * costing the others. So while the model holds a request, the loop's epoll
 * set watches its socket for the peer's close (EPOLLRDHUP, or
 * EPOLLHUP/EPOLLERR for a reset; never EPOLLIN, so a pipelined next
 * request is no event), and depart() takes the request
 * out of the model at once. A client that only shuts down its sending side
 * counts as gone too, as nginx takes it: no OpenAI client does that and
 * still waits for the answer. The watch is taken off in on_completed,
 * which libmicrohttpd calls before it closes the socket. */

void lt__sim_watch(struct lt_sim *s, struct sreq *r)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci || r->watch_fd >= 0)
        return;
    struct epoll_event ev = {.events = EPOLLRDHUP | EPOLLONESHOT, .data.u64 = EV_WATCH + r->seq};
    /* Unwatched, the request is as before: noticed at its next write. */
    if (epoll_ctl(s->ep, EPOLL_CTL_ADD, ci->connect_fd, &ev) == 0)
        r->watch_fd = ci->connect_fd;
}

void lt__sim_unwatch(struct lt_sim *s, struct sreq *r)
{
    if (r->watch_fd < 0)
        return;
    epoll_ctl(s->ep, EPOLL_CTL_DEL, r->watch_fd, NULL);
    r->watch_fd = -1;
}

/* r's client closed: the model forgets the request now, and the connection
 * is resumed so that libmicrohttpd closes it (its reader or handler sees
 * `gone`); on_completed counts and logs it as aborted. */
static void depart(struct lt_sim *s, struct sreq *r)
{
    lt__sim_unwatch(s, r);
    /* The model is done with it: nothing to free, and the answer may have
     * left whole before the client closed; its writes tell, as before. */
    if (r->model_done)
        return;
    r->gone = true;
    if (r->mreq) {
        lt_sim_model_cancel(s->model, r->mreq);
        r->mreq = NULL;
    }
    lt__sim_timer_cancel(s, r);
    lt__sim_wake(r);
}

/* The loop's watch event for the request with this seq, if it is still
 * open (its event may have been read just before on_completed ran). */
static void departed(struct lt_sim *s, uint64_t seq)
{
    for (struct sreq *r = s->live; r; r = r->next)
        if (r->inference && r->seq == seq && r->watch_fd >= 0) {
            depart(s, r);
            return;
        }
}

static void arm_timer(struct lt_sim *s, int64_t at)
{
    if (at != INT64_MAX)
        lt_mono_timer_at(s->tfd, lt_mono_add_ns(s->t0, at), 0);
    else
        lt_mono_timer_off(s->tfd);
}

/* Do what is due at time now; return when the next thing is due. Called
 * with s->mu held, from the loop thread only. */
static int64_t tick(struct lt_sim *s, int64_t now)
{
    lt__sim_advance(s, now);
    /* A refuse fault shuts the listener before its timer (below) lets the
     * request's connection close. */
    int64_t shut = -1;
    if (s->refuse_req && s->listening && s->ndm < MAX_DAEMONS) {
        s->listening = false;
        s->refuse_until = now + s->faults.refuse_us * 1000;
        lt__sim_stop_listening(s);
        shut = now;
    }
    s->refuse_req = false;
    struct sreq *r;
    while ((r = timer_first(s)) && r->timer_at <= now) {
        lt__sim_timer_cancel(s, r);
        if (r->phase == P_CLOSING)
            r->shut = shut;
        lt__sim_wake(r);
    }
    if (!s->listening && s->refuse_until && now >= s->refuse_until) {
        struct lt_err err = {0};
        if (lt__sim_start_daemon(s, &err) == 0)
            s->refuse_until = 0;
        else
            s->refuse_until = now + 100 * 1000000LL; /* try again soon */
    }
    int64_t next = lt__sim_to_real(s, lt_sim_model_next(s->model));
    if ((r = timer_first(s)) && r->timer_at < next)
        next = r->timer_at;
    if (!s->listening && s->refuse_until && s->refuse_until < next)
        next = s->refuse_until;
    return next;
}

static void *loop_main(void *arg)
{
    struct lt_sim *s = arg;
    struct epoll_event evs[64];
    int64_t timer_at = -1;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        if (s->stopping) {
            pthread_mutex_unlock(&s->mu);
            break;
        }
        int64_t now = lt__sim_now_ns(s), next = tick(s, now);
        /* Whoever makes something due earlier than this (a new request, a
         * stream's next token, a fault timer) pokes the eventfd. */
        s->armed = next;
        pthread_mutex_unlock(&s->mu);
        if (next <= now)
            continue;
        if (next != timer_at) {
            arm_timer(s, next);
            timer_at = next;
        }
        int n = epoll_wait(s->ep, evs, (int)(sizeof evs / sizeof evs[0]), -1);
        bool gone = false;
        for (int i = 0; i < n; i++) {
            uint64_t v, tag = evs[i].data.u64;
            if (tag == EV_TIMER && read(s->tfd, &v, sizeof v) == sizeof v)
                timer_at = -1;
            else if (tag == EV_WAKER && read(s->wfd, &v, sizeof v) < 0)
                v = 0; /* already drained */
            gone |= tag >= EV_WATCH;
        }
        if (!gone)
            continue;
        pthread_mutex_lock(&s->mu);
        /* The model first, up to now: what it emitted before the client
         * left stays emitted. */
        lt__sim_advance(s, lt__sim_now_ns(s));
        for (int i = 0; i < n; i++)
            if (evs[i].data.u64 >= EV_WATCH)
                departed(s, evs[i].data.u64 - EV_WATCH);
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

int lt__sim_loop_open(struct lt_sim *s, struct lt_err *err)
{
    lt_heap_init(&s->timers, sizeof(struct sreq *), timer_less, timer_moved, NULL);
    s->ep = epoll_create1(EPOLL_CLOEXEC);
    s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    s->wfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (s->ep < 0 || s->tfd < 0 || s->wfd < 0)
        return lt_errset(err, LT_EIO, "cannot create the event loop: %s", strerror(errno));
    struct epoll_event tev = {.events = EPOLLIN, .data.u64 = EV_TIMER};
    struct epoll_event wev = {.events = EPOLLIN, .data.u64 = EV_WAKER};
    if (epoll_ctl(s->ep, EPOLL_CTL_ADD, s->tfd, &tev) < 0 ||
        epoll_ctl(s->ep, EPOLL_CTL_ADD, s->wfd, &wev) < 0)
        return lt_errset(err, LT_EIO, "cannot create the event loop: %s", strerror(errno));
    return 0;
}

int lt__sim_loop_start(struct lt_sim *s, struct lt_err *err)
{
    if (pthread_create(&s->loop, NULL, loop_main, s) != 0)
        return lt_errset(err, LT_EIO, "cannot start the sim's thread");
    s->loop_started = true;
    return 0;
}

void lt__sim_loop_join(struct lt_sim *s)
{
    uint64_t one = 1;
    if (s->wfd >= 0 && write(s->wfd, &one, sizeof one) < 0)
        one = 0;
    if (s->loop_started)
        pthread_join(s->loop, NULL);
    s->loop_started = false;
}

void lt__sim_loop_close(struct lt_sim *s)
{
    if (s->ep >= 0)
        close(s->ep);
    if (s->tfd >= 0)
        close(s->tfd);
    if (s->wfd >= 0)
        close(s->wfd);
    s->ep = s->tfd = s->wfd = -1;
    lt_heap_release(&s->timers);
}
