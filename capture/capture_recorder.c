/*
 * The arrival-order recorder (capture_recorder.h): a ring of places, one
 * mutex, one condition variable and one writer thread. Compression and
 * file writes happen on the writer thread only, so the threads that relay
 * streams never wait for the disk.
 */
#include "capture/capture_recorder.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 256

struct place {
    struct lt_capture_call *call;
    bool done;
};

struct lt_capture_recorder {
    struct lt_writer *w;
    lt_mono start;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    struct place *ring;
    uint32_t cap;
    uint64_t head; /* next place to write */
    uint64_t tail; /* next place to hand out */
    int64_t last_t;
    bool stop;
    struct lt_capture_recorder_stats st;
    int wrc; /* first write error */
    struct lt_err werr;
};

static void write_calls(struct lt_capture_recorder *r, struct lt_capture_call **calls, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct lt_capture_call *c = calls[i];
        if (!c)
            continue;
        struct lt_record rec;
        struct lt_err err = {0};
        int rc = lt_capture_call_record(c, &rec);
        if (rc == 0)
            rc = lt_writer_put_record(r->w, &rec, &err);
        if (rc < 0) {
            r->st.lost++;
            if (r->wrc == 0) {
                r->wrc = rc;
                r->werr = err;
            }
        } else {
            r->st.written++;
        }
        lt_capture_call_free(c);
    }
}

/* Take the run of finished places at the head; the caller holds mu. */
static size_t take_ready(struct lt_capture_recorder *r, struct lt_capture_call **out, bool all)
{
    size_t n = 0;
    while (r->head < r->tail && n < BATCH) {
        struct place *p = &r->ring[r->head % r->cap];
        if (!p->done && !all)
            break;
        if (!p->done)
            r->st.lost++;
        out[n++] = p->call;
        p->call = NULL;
        p->done = false;
        r->head++;
    }
    return n;
}

static void *writer_main(void *arg)
{
    struct lt_capture_recorder *r = arg;
    struct lt_capture_call *batch[BATCH];
    pthread_mutex_lock(&r->mu);
    for (;;) {
        size_t n = take_ready(r, batch, false);
        if (n == 0) {
            if (r->stop)
                break;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 250 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&r->cv, &r->mu, &ts);
        }
        pthread_mutex_unlock(&r->mu);
        write_calls(r, batch, n);
        struct lt_err err = {0};
        /* The frame of the last second goes to disk even when idle. */
        if (lt_writer_tick(r->w, &err) < 0 && r->wrc == 0) {
            r->wrc = LT_EIO;
            r->werr = err;
        }
        pthread_mutex_lock(&r->mu);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

struct lt_capture_recorder *lt_capture_recorder_new(struct lt_writer *w, lt_mono start,
                                                    uint32_t max_held, struct lt_err *err)
{
    struct lt_capture_recorder *r = calloc(1, sizeof *r);
    if (!r) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    r->w = w;
    r->start = start;
    r->cap = max_held ? max_held : 65536;
    r->ring = calloc(r->cap, sizeof *r->ring);
    if (!r->ring) {
        free(r);
        lt_errset(err, LT_ENOMEM, "out of memory for %u held records", max_held);
        return NULL;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    int e = pthread_create(&r->thread, NULL, writer_main, r);
    if (e) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        free(r->ring);
        free(r);
        lt_errset(err, LT_EIO, "cannot start the trace writer thread: %s", strerror(e));
        return NULL;
    }
    return r;
}

int lt_capture_recorder_arrive(struct lt_capture_recorder *r, uint64_t *seq, int64_t *t)
{
    int rc = 0;
    pthread_mutex_lock(&r->mu);
    if (r->tail - r->head >= r->cap) {
        r->st.dropped++;
        rc = LT_ELIMIT;
    } else {
        /* Stamped under the lock, so places and times agree in order. */
        int64_t now = lt_mono_diff_us(lt_mono_now(), r->start);
        if (now < r->last_t)
            now = r->last_t;
        r->last_t = now;
        *t = now;
        *seq = r->tail++;
    }
    pthread_mutex_unlock(&r->mu);
    return rc;
}

void lt_capture_recorder_done(struct lt_capture_recorder *r, uint64_t seq,
                              struct lt_capture_call *c)
{
    pthread_mutex_lock(&r->mu);
    struct place *p = &r->ring[seq % r->cap];
    p->call = c;
    p->done = true;
    bool wake = seq == r->head;
    pthread_mutex_unlock(&r->mu);
    if (wake)
        pthread_cond_signal(&r->cv);
}

int lt_capture_recorder_close(struct lt_capture_recorder *r, struct lt_capture_recorder_stats *st,
                              struct lt_err *err)
{
    if (!r)
        return 0;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_mutex_unlock(&r->mu);
    pthread_cond_signal(&r->cv);
    pthread_join(r->thread, NULL);
    /* Whatever is left waits behind a place that never finished. */
    struct lt_capture_call *batch[BATCH];
    size_t n;
    while ((n = take_ready(r, batch, true)) > 0)
        write_calls(r, batch, n);
    int rc = r->wrc;
    if (rc < 0 && err)
        *err = r->werr;
    if (st)
        *st = r->st;
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->ring);
    free(r);
    return rc;
}
