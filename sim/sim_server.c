/*
 * The sim's HTTP server: libmicrohttpd connections on one side (their
 * listener and lifecycle are sim_listen.c), the clock-free model
 * (sim_model.c) on the other, and an event loop between them that advances
 * the model in real time (sim_loop.c). This file holds the answers, the
 * model's emitted tokens, and the server's start and stop. A stream's bytes are rendered
 * lazily, in the content reader, from the count of tokens the model has
 * emitted, so an open stream costs a few hundred bytes plus one timestamp
 * per token, whatever the profile's speed.
 *
 * Threads: libmicrohttpd's own (one, or a pool of --threads, each with its
 * share of the connections) do the network: parse requests, render and
 * write streams. One loop thread of ours keeps time: it advances the model,
 * sleeps on a timerfd until the next model event or fault timer, and
 * resumes the connections whose tokens are due. Every connection that waits
 * (for its next token, a stall, a slow first byte, a whole non-streamed
 * answer) is suspended in libmicrohttpd and resumed when it is due, so
 * nothing polls. A step of a batch of b requests emits b tokens at one
 * instant, and each is a write of its own on its own socket (~7-10 us of
 * kernel time on loopback): with a pool, those writes run on several cores
 * at once instead of one after another. All of our state is under s->mu.
 *
 * One request's life (struct sreq, all fields under s->mu):
 *
 *   BODY --body complete--> (route)
 *     (route) --GET, /tokenize, bad request, status fault--> DONE (answer queued)
 *     (route) --refuse fault--> CLOSING --the loop shut the listener for a while-->
 *                               (connection closed unanswered)
 *     (route) --slow fault--> DELAYED --timer--> (admit)
 *     (route) --> (admit: the model gets the request)
 *     (admit) --stream--> STREAMING: reader renders what is due, suspends when
 *                         nothing is; emit/timer resume it; ends after [DONE],
 *                         or cut by the disconnect fault
 *     (admit) --no stream--> WAITING --last token--> DONE (whole body queued)
 *   WAITING/STREAMING --the client's close, seen by the loop's watch--> out of
 *                              the model at once (depart), resumed to be closed
 *   any --connection closed--> completed: model request cancelled, log line
 *                              written, memory freed
 */
#include "sim/sim_server_internal.h"
#include "base/lt_rng.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ---- the model's tokens ---- */

static void on_emit(void *ud, const struct lt_sim_emit *e)
{
    struct lt_sim *s = ud;
    struct sreq *r = e->user;
    int64_t rel = lt__sim_to_real(s, e->t);
    if (r->fault == LT_SIM_FAULT_STALL && e->index >= s->faults.stall_after &&
        s->faults.stall_after < r->resp.out) {
        int64_t until = (e->index == s->faults.stall_after ? rel : r->rel[s->faults.stall_after]) +
                        s->faults.stall_us * 1000;
        if (rel < until)
            rel = until;
    }
    r->rel[e->index] = rel;
    r->avail = e->index + 1;
    if (e->index == 0)
        lt_sim_metrics_observe(&s->met.ttft, (double)(rel - r->arrival) / 1e9);
    else
        lt_sim_metrics_observe(&s->met.itl, (double)(rel - r->rel[e->index - 1]) / 1e9);
    /* llama.cpp's timing counters, in the server's (real) seconds */
    s->met.gen_tokens++;
    if (e->index == 0)
        s->met.prompt_s +=
            (double)(lt__sim_to_real(s, e->t) - lt__sim_to_real(s, e->admitted)) / 1e9;
    else
        s->met.gen_s += (double)(lt__sim_to_real(s, e->t) - lt__sim_to_real(s, r->emitted_t)) / 1e9;
    r->emitted_t = e->t;
    if (e->last) {
        lt_sim_metrics_observe(&s->met.e2e, (double)(rel - r->arrival) / 1e9);
        s->met.success++;
        s->served++;
    }
    if (e->index == 0) {
        r->resp.cached_tokens = e->cached_tokens;
        r->admitted_rel = lt__sim_to_real(s, e->admitted);
        r->first_rel = lt__sim_to_real(s, e->t);
        r->slot = e->slot;
    }
    if (e->last && s->dia.llamacpp) { /* llama-server's own account of the request */
        r->resp.timings = true;
        r->resp.prompt_ms = (double)(r->first_rel - r->admitted_rel) / 1e6;
        r->resp.predicted_ms = (double)(lt__sim_to_real(s, e->t) - r->first_rel) / 1e6;
    }
    if (e->last) {
        r->model_done = true;
        r->mreq = NULL;
    }
    lt__sim_wake(r);
}

void lt__sim_advance(struct lt_sim *s, int64_t now)
{
    lt_sim_model_advance(s->model, lt__sim_to_model(s, now), on_emit, s);
}

static void late_add(struct lt_sim *s, int64_t late_ns)
{
    int64_t us = late_ns > 0 ? late_ns / 1000 : 0;
    lt_hist_record(s->late, (uint64_t)us);
    s->st.late_samples++;
    if ((double)us > s->st.late_max_us)
        s->st.late_max_us = (double)us;
}

/* ---- answers ---- */

/* The bighead fault: header lines "X-Pad-N: ppp..." of 8000 bytes of value
 * each until their bytes reach the fault's size, as a server (or a proxy in
 * front of it) gone wrong might send; the answer itself is unchanged. */
static void pad_headers(const struct sreq *r, struct MHD_Response *resp)
{
    if (r->fault != LT_SIM_FAULT_BIGHEAD)
        return;
    char value[8001]; /* on the stack: network threads pad at once */
    memset(value, 'p', sizeof value - 1);
    value[sizeof value - 1] = '\0';
    char name[32];
    uint64_t left = r->s->faults.bighead_bytes;
    for (unsigned i = 0; left > 0; i++) {
        int nl = snprintf(name, sizeof name, "X-Pad-%u", i);
        uint64_t line = (uint64_t)nl + 4; /* ": " and CRLF */
        size_t vl = sizeof value - 1;
        if (left < line + vl)
            vl = left > line ? (size_t)(left - line) : 1;
        MHD_add_response_header(resp, name, value + (sizeof value - 1 - vl));
        left = left > line + vl ? left - line - vl : 0;
    }
}

/* The liesize fault's body: what there is, then the connection cut short
 * of the length the headers claimed. */
static ssize_t on_read_lie(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct sreq *r = cls;
    if (pos >= r->out.len)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    size_t n = r->out.len - (size_t)pos < max ? r->out.len - (size_t)pos : max;
    memcpy(buf, r->out.p + pos, n);
    return (ssize_t)n;
}

static enum MHD_Result queue_body(struct sreq *r, int status, const char *ctype, const char *body,
                                  size_t len)
{
    struct MHD_Response *resp;
    if (status == 200 && r->fault == LT_SIM_FAULT_LIESIZE) {
        lt_buf_reset(&r->out);
        if (lt_buf_append_grow(&r->out, body, len) < 0)
            return MHD_NO;
        resp = MHD_create_response_from_callback(len + r->s->faults.liesize_bytes, 8192,
                                                 on_read_lie, r, NULL);
    } else {
        resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    }
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", ctype);
    if (r->s->dia.http10)
        MHD_set_response_options(resp, MHD_RF_HTTP_1_0_SERVER, MHD_RO_END);
    if (r->s->dia.close)
        MHD_add_response_header(resp, "Connection", "close");
    if (status == 200)
        pad_headers(r, resp);
    if (status == 429 || status == 503) {
        char ra[16];
        snprintf(ra, sizeof ra, "%u",
                 status == 429 ? r->s->faults.retry_after_429 : r->s->faults.retry_after_503);
        MHD_add_response_header(resp, "Retry-After", ra);
    }
    enum MHD_Result ret = MHD_queue_response(r->conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    r->status = status;
    r->phase = P_DONE;
    return ret;
}

static enum MHD_Result queue_json(struct sreq *r, int status, const struct lt_buf *b)
{
    return queue_body(r, status, "application/json", b->p ? b->p : "", b->len);
}

static enum MHD_Result queue_error(struct sreq *r, int status, const char *msg)
{
    struct lt_buf b;
    lt_buf_init(&b, 1 << 16);
    if (r->anthropic)
        lt_sim_error_body_messages(&b, status, msg);
    else
        lt_sim_error_body(&b, status, msg);
    enum MHD_Result ret = queue_json(r, status, &b);
    lt_buf_release(&b);
    return ret;
}

/* The content reader of a stream: render whatever is due, or suspend. */
static ssize_t on_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct sreq *r = cls;
    struct lt_sim *s = r->s;
    ssize_t ret;
    pthread_mutex_lock(&s->mu);
    if (s->stopping || r->gone) {
        ret = MHD_CONTENT_READER_END_WITH_ERROR;
        goto out;
    }
    int64_t now = lt__sim_now_ns(s);
    /* libmicrohttpd asks for more only once everything it was given has
     * been written to the socket, so a call that finds nothing of ours left
     * over is the moment the tokens rendered before were sent: that, not
     * the rendering, is when the client could first see them. */
    if (!r->out.len && r->written < r->sent) {
        for (uint32_t i = r->written; i < r->sent; i++) {
            late_add(s, now - r->rel[i]);
            if (r->sent_at)
                r->sent_at[i] = now;
        }
        r->written = r->sent;
    }
    while (r->out.len < max) {
        /* Messages' head (message_start) carries the prompt's split by the
         * cache, which is known once the request is admitted: it leaves
         * with the first token, as llama.cpp sends it. */
        if (!r->head_sent && r->resp.api == LT_SIM_MESSAGES && r->avail == 0 && !r->model_done)
            break;
        if (!r->head_sent) {
            lt_sim_render_head(&r->out, &r->resp);
            r->head_sent = true;
        } else if (r->sent < r->avail) {
            if (r->fault == LT_SIM_FAULT_DISCONNECT && r->sent == s->faults.disconnect_after) {
                /* Give the tokens already rendered a moment to leave before
                 * the connection is cut, so the client sees exactly N. */
                if (!r->cut_due) {
                    r->cut_due = true;
                    lt__sim_timer_set(s, r, now + 20 * 1000000LL);
                } else if (r->heap_idx == NO_TIMER) {
                    r->cut = true;
                }
                break;
            }
            if (r->rel[r->sent] > now) {
                lt__sim_timer_set(s, r, r->rel[r->sent]);
                break;
            }
            bool bad = r->fault == LT_SIM_FAULT_MALFORMED && r->sent == s->faults.malformed_after;
            if (lt_sim_render_token(&r->out, &r->resp, r->sent, bad) < 0)
                break;
            if (r->sent_at)
                r->sent_at[r->sent] = now; /* until the write is confirmed */
            s->st.chunks++;
            r->sent++;
        } else if (r->model_done && r->sent == r->resp.out && !r->tail_sent) {
            lt_sim_render_tail(&r->out, &r->resp);
            r->tail_sent = true;
        } else {
            break;
        }
    }
    if (r->out.len) {
        size_t n = r->out.len < max ? r->out.len : max;
        memcpy(buf, r->out.p, n);
        lt_buf_consume(&r->out, n);
        ret = (ssize_t)n;
    } else if (r->cut) {
        ret = MHD_CONTENT_READER_END_WITH_ERROR;
    } else if (r->tail_sent) {
        ret = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        lt__sim_suspend(r);
        ret = 0;
    }
out:
    pthread_mutex_unlock(&s->mu);
    return ret;
}

/* Decide the output (length, reasoning, finish) and give the request to
 * the model. Called with s->mu held. */
static int admit_locked(struct sreq *r, struct lt_err *err)
{
    struct lt_sim *s = r->s;
    struct lt_sim_call *c = &r->call;
    struct lt_rng rng;
    lt_rng_seed(&rng, lt_mix64(s->seed ^ lt_mix64(r->seq)));
    double mean = s->prof.eos_tokens > 1 ? s->prof.eos_tokens - 1 : 0.5;
    double nat = 1 + lt_rng_exp(&rng, mean);
    uint32_t natural = nat > 4e9 ? 4000000000u : (uint32_t)nat;
    uint32_t out = c->ignore_eos ? c->max_tokens : natural;
    if (out < c->min_tokens)
        out = c->min_tokens;
    if (out > c->max_tokens)
        out = c->max_tokens;
    if (out < 1)
        out = 1;
    bool hit_limit = out == c->max_tokens && (c->ignore_eos || natural >= c->max_tokens);
    uint32_t reasoning = 0;
    if (c->api != LT_SIM_COMPLETIONS) {
        int on = c->reasoning >= 0 ? c->reasoning : s->prof.reasoning;
        double frac =
            c->reasoning_fraction > 0 ? c->reasoning_fraction : s->prof.reasoning_fraction;
        if (on && frac <= 0)
            frac = 0.5;
        if (on && out > 1) {
            reasoning = (uint32_t)((double)out * frac);
            if (reasoning < 1)
                reasoning = 1;
            if (reasoning >= out)
                reasoning = out - 1;
        }
    }
    r->rel = malloc((size_t)out * sizeof *r->rel);
    if (s->log)
        r->sent_at = malloc((size_t)out * sizeof *r->sent_at);
    if (!r->rel || (s->log && !r->sent_at))
        return lt_errset(err, LT_ENOMEM, "out of memory for %u tokens", out);
    static const char *const id_prefix[] = {"chatcmpl-", "cmpl-", "resp_",
                                            "msg_",      "embd-", "rerank-"};
    snprintf(r->id, sizeof r->id, "%s%llu", id_prefix[c->api], (unsigned long long)r->seq);
    r->resp = (struct lt_sim_resp){
        .d = &s->dia,
        .api = c->api,
        .id = r->id,
        .created = (long long)time(NULL),
        .model_json = c->model_json,
        .seq = r->seq,
        .prompt_tokens = c->toks.n,
        .out = out,
        .reasoning = reasoning,
        .tool_call = c->tool_call,
        .tool_name_json = c->tool_name_json,
        .finish = c->tool_call ? "tool_calls"
                  : hit_limit  ? "length"
                               : "stop",
        .include_usage = c->include_usage,
        .bad_choices = r->fault == LT_SIM_FAULT_BADCHOICES,
        .bad_choices_at = s->faults.badchoices_after,
        .claim = r->fault == LT_SIM_FAULT_BADUSAGE,
        .claimed_out = s->faults.badusage_tokens,
        .claim_in = r->fault == LT_SIM_FAULT_BADPROMPT,
        .claimed_in = s->faults.badprompt_tokens,
        .image_tokens = c->image_tokens,
        .audio_tokens = c->audio_tokens,
        .video_tokens = c->video_tokens,
        .inputs = c->inputs,
        .top_n = c->top_n,
        .embed_dim = s->prof.embed_dim,
    };
    int64_t now = lt__sim_now_ns(s);
    lt__sim_advance(s, now);
    struct lt_sim_req q = {
        .prompt_tokens = c->toks.n,
        .out_tokens = out,
        .blocks = c->toks.blocks,
        .nblocks = c->toks.nblocks,
        .user = r,
        .image_tokens = c->image_tokens + c->audio_tokens + c->video_tokens, /* the encoders' */
        .pinned = c->id_slot >= 0,
        .pin_slot = c->id_slot >= 0 ? (uint32_t)c->id_slot : 0,
    };
    r->mreq = lt_sim_model_add(s->model, lt__sim_to_model(s, now), &q, err);
    if (!r->mreq)
        return LT_ENOMEM;
    r->modeled = now;
    lt__sim_poke(s, lt__sim_to_real(s, lt_sim_model_next(s->model)));
    r->started = true;
    lt__sim_watch(s, r);
    return 0;
}

/* One HTTP chunk of b's bytes; bad: a size line that is not hex. */
static int put_chunk(struct lt_buf *raw, const struct lt_buf *b, bool bad)
{
    if (lt_buf_printf(raw, bad ? "zz%zx\r\n" : "%zx\r\n", b->len) < 0 ||
        lt_buf_append_grow(raw, b->p, b->len) < 0 || lt_buf_puts(raw, "\r\n") < 0)
        return -1;
    return 0;
}

static ssize_t on_read_cut(void *cls, uint64_t pos, char *buf, size_t max)
{
    return MHD_CONTENT_READER_END_WITH_ERROR;
}

/* The faults framed by hand. libmicrohttpd frames every stream itself and
 * will not send a Transfer-Encoding, a status or line ends of ours, so
 * these answers are written to the connection's socket by hand, at once:
 * the head (after interim heads, with LF line ends, or with a status no
 * server has, as the fault says), the role chunk and the token chunks;
 * badchunk stops at its bad one, which comes under a size line that is not
 * hex. Then libmicrohttpd's own answer (its head after ours, which no
 * client reads past ours: it says Connection: close) ends in error and
 * closes. */
static enum MHD_Result answer_by_hand(struct sreq *r)
{
    struct lt_sim *s = r->s;
    struct lt_buf raw, piece;
    lt_buf_init(&raw, (size_t)64 << 20);
    lt_buf_init(&piece, (size_t)16 << 20);
    int rc = 0;
    for (uint32_t i = 0; r->fault == LT_SIM_FAULT_INTERIM && rc == 0 && i < s->faults.interim_heads;
         i++)
        rc = lt_buf_puts(&raw, "HTTP/1.1 102 Processing\r\n\r\n");
    const char *eol = r->fault == LT_SIM_FAULT_LFHEAD ? "\n" : "\r\n";
    if (rc == 0)
        rc = lt_buf_printf(
            &raw,
            "HTTP/1.1 %s OK%sContent-Type: text/event-stream%sCache-Control: no-cache%s"
            "Transfer-Encoding: chunked%sConnection: close%s%s",
            r->fault == LT_SIM_FAULT_BIGSTATUS ? "2000000000000000000000000000" : "200", eol, eol,
            eol, eol, eol, eol);
    pthread_mutex_lock(&s->mu);
    if (rc == 0) {
        lt_sim_render_head(&piece, &r->resp);
        rc = put_chunk(&raw, &piece, false);
    }
    uint32_t n = r->fault == LT_SIM_FAULT_BADCHUNK ? s->faults.badchunk_after : UINT32_MAX - 1;
    int64_t now = lt__sim_now_ns(s);
    for (uint32_t i = 0; rc == 0 && i < r->resp.out && i <= n; i++) {
        lt_buf_reset(&piece);
        if (lt_sim_render_token(&piece, &r->resp, i, false) < 0 ||
            put_chunk(&raw, &piece, i == n) < 0)
            rc = -1;
        if (r->sent_at && i < n)
            r->sent_at[i] = now;
        r->sent = r->written = i < n ? i + 1 : n;
    }
    if (rc == 0 && n >= r->resp.out) { /* fewer tokens than that: no bad chunk */
        lt_buf_reset(&piece);
        lt_sim_render_tail(&piece, &r->resp);
        rc = put_chunk(&raw, &piece, false);
        if (rc == 0)
            rc = lt_buf_puts(&raw, "0\r\n\r\n");
    }
    pthread_mutex_unlock(&s->mu);
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    size_t off = 0;
    for (int tries = 0; rc == 0 && ci && off < raw.len && tries < 1000; tries++) {
        ssize_t w = send(ci->connect_fd, raw.p + off, raw.len - off, MSG_NOSIGNAL);
        if (w > 0)
            off += (size_t)w;
        else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            break;
        else if (w < 0)
            poll(&(struct pollfd){.fd = ci->connect_fd, .events = POLLOUT}, 1, 10);
    }
    lt_buf_release(&raw);
    lt_buf_release(&piece);
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, on_read_cut, r, NULL);
    if (!resp)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(r->conn, 200, resp);
    MHD_destroy_response(resp);
    r->status = 200;
    return ret;
}

/* Start the answer of an admitted request: a stream or a wait. */
enum MHD_Result lt__sim_start_answer(struct sreq *r)
{
    struct lt_sim *s = r->s;
    struct lt_err err = {0};
    pthread_mutex_lock(&s->mu);
    int rc = admit_locked(r, &err);
    if (rc < 0) {
        pthread_mutex_unlock(&s->mu);
        return queue_error(r, 500, err.msg);
    }
    if (!r->call.stream) {
        r->phase = P_WAITING;
        lt__sim_suspend(r);
        pthread_mutex_unlock(&s->mu);
        return MHD_YES;
    }
    r->phase = P_STREAMING;
    pthread_mutex_unlock(&s->mu);
    if (r->fault == LT_SIM_FAULT_BADCHUNK || r->fault == LT_SIM_FAULT_LFHEAD ||
        r->fault == LT_SIM_FAULT_BIGSTATUS || r->fault == LT_SIM_FAULT_INTERIM)
        return answer_by_hand(r);
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 8192, on_read, r, NULL);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    if (s->dia.http10)
        MHD_set_response_options(resp, MHD_RF_HTTP_1_0_SERVER, MHD_RO_END);
    if (s->dia.close)
        MHD_add_response_header(resp, "Connection", "close");
    pad_headers(r, resp);
    enum MHD_Result ret = MHD_queue_response(r->conn, 200, resp);
    MHD_destroy_response(resp);
    r->status = 200;
    return ret;
}

enum MHD_Result lt__sim_answer_full(struct sreq *r)
{
    if (r->sent_at) {
        int64_t now = lt__sim_now_ns(r->s);
        for (uint32_t i = 0; i < r->resp.out; i++)
            r->sent_at[i] = now;
    }
    struct lt_buf b;
    lt_buf_init(&b, (size_t)1 << 30);
    int rc = lt_sim_render_full(&b, &r->resp);
    enum MHD_Result ret = rc < 0 ? queue_error(r, 500, "answer too large") : queue_json(r, 200, &b);
    lt_buf_release(&b);
    return ret;
}

static enum MHD_Result route_inference(struct sreq *r, enum lt_sim_api api)
{
    struct lt_sim *s = r->s;
    char msg[512];
    pthread_mutex_lock(&s->mu);
    r->seq = ++s->next_seq;
    pthread_mutex_unlock(&s->mu);
    r->inference = true;
    int status = lt_sim_call_parse(&r->call, api, r->body.p ? r->body.p : "", r->body.len, &s->prof,
                                   msg, sizeof msg);
    if (status)
        return queue_error(r, status, msg);
    if (r->call.videos && s->dia.llamacpp) /* llama-server reads no video part, mmproj or not */
        return queue_error(r, 400, "unsupported content[].type");
    if ((r->call.images || r->call.audio || r->call.videos) && s->dia.text_only) {
        /* what a text-only model answers an image with: vLLM's 400, or
         * llama-server's 500 when it has no projector (measured against
         * llama-server with stories260K: docs/multimodal.md) */
        if (s->dia.llamacpp)
            return queue_error(r, 500,
                               r->call.images
                                   ? "image input is not supported - hint: if this is unexpected, "
                                     "you may need to provide the mmproj"
                                   : "audio input is not supported - hint: if this is unexpected, "
                                     "you may need to provide the mmproj");
        snprintf(msg, sizeof msg, "%s is not a multimodal model", s->prof.model);
        return queue_error(r, 400, msg);
    }
    r->fault = lt_sim_faults_pick(&s->faults, r->seq);
    switch (r->fault) {
    case LT_SIM_FAULT_500:
        return queue_error(r, 500, "simulated internal server error");
    case LT_SIM_FAULT_503:
        return queue_error(r, 503, "simulated overload: the server is not ready");
    case LT_SIM_FAULT_429:
        return queue_error(r, 429, "simulated rate limit: too many requests");
    case LT_SIM_FAULT_REFUSE:
        /* Held until the loop has shut the listener, and only then closed
         * (sim_listen.c, P_CLOSING): closed first, a client that reconnects
         * at once (curl and replay retry a reused connection that closed
         * unanswered) could be let in while the loop's thread was still
         * on its way, and be served through the whole refusal. */
        pthread_mutex_lock(&s->mu);
        s->refuse_req = true;
        r->status = 0;
        r->phase = P_CLOSING;
        r->shut = -1;
        bool held = lt__sim_timer_set(s, r, lt__sim_now_ns(s));
        if (held)
            lt__sim_suspend(r);
        pthread_mutex_unlock(&s->mu);
        return held ? MHD_YES : MHD_NO;
    case LT_SIM_FAULT_SLOW:
        pthread_mutex_lock(&s->mu);
        r->phase = P_DELAYED;
        r->due = r->arrival + s->faults.slow_us * 1000;
        lt__sim_timer_set(s, r, r->due);
        lt__sim_suspend(r);
        pthread_mutex_unlock(&s->mu);
        return MHD_YES;
    default:
        return lt__sim_start_answer(r);
    }
}

static enum MHD_Result answer_models(struct sreq *r)
{
    struct lt_buf b;
    lt_buf_init(&b, 1 << 16);
    lt_buf_printf(&b,
                  "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"model\","
                  "\"created\":%lld,\"owned_by\":\"loadtrace-sim\",\"max_model_len\":%u",
                  r->s->prof.model, (long long)time(NULL), r->s->prof.max_model_len);
    if (r->s->dia.llamacpp) /* llama-server's meta: the vocabulary, the training context */
        lt_buf_printf(&b, ",\"meta\":{\"n_vocab\":%u,\"n_ctx_train\":%u}", r->s->prof.vocab,
                      r->s->prof.max_model_len);
    lt_buf_puts(&b, "}]}");
    enum MHD_Result ret = queue_json(r, 200, &b);
    lt_buf_release(&b);
    return ret;
}

static enum MHD_Result answer_tokenize(struct sreq *r, bool count_tokens)
{
    struct lt_buf b;
    char msg[512];
    lt_buf_init(&b, (size_t)1 << 28);
    const char *body = r->body.p ? r->body.p : "";
    int status = count_tokens
                     ? lt_sim_count_tokens(&b, body, r->body.len, &r->s->prof, msg, sizeof msg)
                     : lt_sim_tokenize(&b, body, r->body.len, &r->s->prof, msg, sizeof msg);
    enum MHD_Result ret = status ? queue_error(r, status, msg) : queue_json(r, 200, &b);
    lt_buf_release(&b);
    return ret;
}

/* The metrics-big fault's answer: the true page, then padding made as it
 * is read, so a page of 64 MiB costs no 64 MiB of memory. */
struct big_page {
    struct lt_buf page;
    uint64_t total;
};

static ssize_t big_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct big_page *bp = cls;
    if (pos >= bp->total)
        return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = max;
    if (n > bp->total - pos)
        n = (size_t)(bp->total - pos);
    size_t from_page = 0;
    if (pos < bp->page.len) {
        from_page = bp->page.len - (size_t)pos < n ? bp->page.len - (size_t)pos : n;
        memcpy(buf, bp->page.p + pos, from_page);
    }
    lt_sim_metrics_pad(buf + from_page, n - from_page, pos + from_page - bp->page.len);
    return (ssize_t)n;
}

static void big_free(void *cls)
{
    struct big_page *bp = cls;
    lt_buf_release(&bp->page);
    free(bp);
}

static enum MHD_Result queue_big(struct sreq *r, struct lt_buf *page)
{
    struct big_page *bp = malloc(sizeof *bp);
    if (!bp)
        return MHD_NO;
    bp->page = *page; /* taken over */
    lt_buf_init(page, 0);
    bp->total = bp->page.len + lt_sim_metrics_pad_len(bp->page.len, r->s->faults.mbig_bytes);
    struct MHD_Response *resp =
        MHD_create_response_from_callback(bp->total, 65536, big_read, bp, big_free);
    if (!resp) {
        big_free(bp);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    enum MHD_Result ret = MHD_queue_response(r->conn, 200, resp);
    MHD_destroy_response(resp);
    r->status = 200;
    r->phase = P_DONE;
    return ret;
}

/* GET /metrics: the model's state now, in vLLM's names (sim_metrics.h),
 * unless a metrics fault drawn at the request (route) says otherwise. */
enum MHD_Result lt__sim_answer_metrics(struct sreq *r)
{
    struct lt_sim *s = r->s;
    if (r->mfault == LT_SIM_MFAULT_HTML)
        return queue_body(r, 200, "text/html; charset=utf-8", lt_sim_metrics_html,
                          strlen(lt_sim_metrics_html));
    struct lt_buf b;
    struct lt_sim_model_stats st;
    lt_buf_init(&b, 1 << 20);
    pthread_mutex_lock(&s->mu);
    lt__sim_advance(s, lt__sim_now_ns(s));
    lt_sim_model_stats(s->model, &st);
    int rc = lt_sim_metrics_render(&b, &s->met, &st, &s->prof);
    if (rc == 0 && s->dia.llamacpp)
        rc = lt_sim_metrics_render_llamacpp(&b, &s->met, &st);
    pthread_mutex_unlock(&s->mu);
    enum MHD_Result ret =
        rc < 0 ? queue_error(r, 500, "metrics page too large")
        : r->mfault == LT_SIM_MFAULT_BIG
            ? queue_big(r, &b)
            : queue_body(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.p ? b.p : "", b.len);
    lt_buf_release(&b);
    return ret;
}

/* A GET /metrics: draw its fault; metrics-slow holds it (P_DELAYED) until
 * it is due, the others answer now. */
static enum MHD_Result route_metrics(struct sreq *r)
{
    struct lt_sim *s = r->s;
    pthread_mutex_lock(&s->mu);
    r->mfault = lt_sim_faults_pick_metrics(&s->faults, ++s->next_mseq);
    if (r->mfault == LT_SIM_MFAULT_SLOW) {
        r->phase = P_DELAYED;
        r->due = r->arrival + s->faults.mslow_us * 1000;
        lt__sim_timer_set(s, r, r->due);
        lt__sim_suspend(r);
        pthread_mutex_unlock(&s->mu);
        return MHD_YES;
    }
    pthread_mutex_unlock(&s->mu);
    return lt__sim_answer_metrics(r);
}

/* POST /reset_prefix_cache, as vLLM answers it: the cache is emptied. */
static enum MHD_Result answer_reset_prefix(struct sreq *r)
{
    struct lt_sim *s = r->s;
    pthread_mutex_lock(&s->mu);
    lt__sim_advance(s, lt__sim_now_ns(s));
    lt_sim_model_reset_prefix(s->model);
    s->met.resets++;
    pthread_mutex_unlock(&s->mu);
    return queue_body(r, 200, "text/plain", "", 0);
}

/* --dialect llamacpp: llama-server's GET /props (its slots, the context
 * per slot, the model), as replay reads it. */
static enum MHD_Result answer_props(struct sreq *r)
{
    const struct lt_sim_profile *p = &r->s->prof;
    struct lt_buf b;
    lt_buf_init(&b, 1 << 16);
    lt_buf_printf(&b,
                  "{\"default_generation_settings\":{\"n_ctx\":%u},\"total_slots\":%u,"
                  "\"model_alias\":\"%s\",\"model_path\":\"/models/%s.gguf\","
                  "\"endpoint_slots\":true,\"endpoint_metrics\":true}",
                  p->max_model_len, p->max_running, p->model, p->model);
    enum MHD_Result ret = queue_json(r, 200, &b);
    lt_buf_release(&b);
    return ret;
}

/* GET /slots: one object per slot; a slot that has served a request since
 * the cache was emptied has "id_task" (llama.cpp keeps its prompt). The
 * sim's prefix cache is shared by its slots. */
static enum MHD_Result answer_slots(struct sreq *r)
{
    struct lt_sim *s = r->s;
    struct lt_sim_model_stats st;
    pthread_mutex_lock(&s->mu);
    lt_sim_model_stats(s->model, &st);
    uint64_t served = s->served;
    pthread_mutex_unlock(&s->mu);
    struct lt_buf b;
    lt_buf_init(&b, (size_t)1 << 24);
    lt_buf_puts(&b, "[");
    for (uint32_t i = 0; i < s->prof.max_running; i++) {
        lt_buf_printf(&b, "%s{\"id\":%u,\"n_ctx\":%u,\"is_processing\":%s", i ? "," : "", i,
                      s->prof.max_model_len, i < st.running ? "true" : "false");
        if (i < served || i < st.running)
            lt_buf_printf(&b, ",\"id_task\":%u", i);
        lt_buf_puts(&b, "}");
    }
    lt_buf_puts(&b, "]");
    enum MHD_Result ret = queue_json(r, 200, &b);
    lt_buf_release(&b);
    return ret;
}

/* POST /slots/ID?action=erase: 501 as llama-server answers without
 * --slot-save-path, unless the dialect says slot-erase; then the prefix
 * cache is emptied (every slot's: they share it). */
static enum MHD_Result answer_slot_action(struct sreq *r, const char *id)
{
    struct lt_sim *s = r->s;
    if (!s->dia.slot_erase)
        return queue_error(r, 501,
                           "This server does not support slots action. Start it with "
                           "`--slot-save-path`");
    char *end;
    unsigned long n = strtoul(id, &end, 10);
    if (!*id || *end || n >= s->prof.max_running)
        return queue_error(r, 400, "Invalid slot ID");
    const char *action = MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, "action");
    if (!action || strcmp(action, "erase"))
        return queue_error(r, 400, "Invalid action");
    pthread_mutex_lock(&s->mu);
    lt__sim_advance(s, lt__sim_now_ns(s));
    lt_sim_model_reset_prefix(s->model);
    s->met.resets++;
    s->served = 0;
    pthread_mutex_unlock(&s->mu);
    struct lt_buf b;
    lt_buf_init(&b, 1 << 10);
    lt_buf_printf(&b, "{\"id_slot\":%lu,\"n_erased\":0}", n);
    enum MHD_Result ret = queue_json(r, 200, &b);
    lt_buf_release(&b);
    return ret;
}

enum MHD_Result lt__sim_route(struct sreq *r, const char *url, const char *method)
{
    bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    r->arrival = lt__sim_now_ns(r->s);
    r->anthropic = !strcmp(url, "/v1/messages");
    /* Two lengths are the opening of request smuggling: which one a proxy
     * in front believed is unknown, so neither is. */
    if (r->two_length)
        return queue_error(r, 400, "Content-Length is given twice with different values");
    if (r->busy) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "the request bodies being received hold more than the server's limit of %zu "
                 "bytes; retry later",
                 r->s->max_pending);
        return queue_error(r, 503, msg);
    }
    if (r->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "request body larger than the limit of %zu bytes",
                 r->s->max_body);
        return queue_error(r, 413, msg);
    }
    if (!strcmp(url, "/health"))
        return get ? queue_body(r, 200, "application/json", "{}", 2)
                   : queue_error(r, 405, "use GET");
    if (!strcmp(url, "/v1/models"))
        return get ? answer_models(r) : queue_error(r, 405, "use GET");
    if (!strcmp(url, "/metrics"))
        return get ? route_metrics(r) : queue_error(r, 405, "use GET");
    if (r->s->dia.llamacpp) {
        if (!strcmp(url, "/props"))
            return get ? answer_props(r) : queue_error(r, 405, "use GET");
        if (!strcmp(url, "/slots"))
            return get ? answer_slots(r) : queue_error(r, 405, "use GET");
        if (!strncmp(url, "/slots/", 7))
            return post ? answer_slot_action(r, url + 7) : queue_error(r, 405, "use POST");
    } else if (!strcmp(url, "/reset_prefix_cache")) {
        return post ? answer_reset_prefix(r) : queue_error(r, 405, "use POST");
    }
    if (!strcmp(url, "/tokenize") && !r->s->dia.no_tokenize)
        return post ? answer_tokenize(r, false) : queue_error(r, 405, "use POST");
    if (!strcmp(url, "/v1/messages/count_tokens") && !r->s->dia.no_tokenize)
        return post ? answer_tokenize(r, true) : queue_error(r, 405, "use POST");
    if (!strcmp(url, "/v1/chat/completions"))
        return post ? route_inference(r, LT_SIM_CHAT) : queue_error(r, 405, "use POST");
    if (!strcmp(url, "/v1/completions"))
        return post ? route_inference(r, LT_SIM_COMPLETIONS) : queue_error(r, 405, "use POST");
    if (!strcmp(url, "/v1/responses"))
        return post ? route_inference(r, LT_SIM_RESPONSES) : queue_error(r, 405, "use POST");
    if (!strcmp(url, "/v1/messages"))
        return post ? route_inference(r, LT_SIM_MESSAGES) : queue_error(r, 405, "use POST");
    if (!strcmp(url, "/v1/embeddings"))
        return post ? route_inference(r, LT_SIM_EMBEDDINGS) : queue_error(r, 405, "use POST");
    if (!strcmp(url, "/v1/rerank") || !strcmp(url, "/rerank"))
        return post ? route_inference(r, LT_SIM_RERANK) : queue_error(r, 405, "use POST");
    char msg[160];
    snprintf(msg, sizeof msg, "no route for %.100s", url);
    return queue_error(r, 404, msg);
}

struct lt_sim *lt_sim_start(const struct lt_sim_opts *o, struct lt_err *err)
{
    struct lt_sim *s = calloc(1, sizeof *s);
    int rc = 0;
    if (!s) {
        lt_errset(err, LT_ENOMEM, "out of memory");
        return NULL;
    }
    s->ep = s->tfd = s->wfd = -1;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->log_mu, NULL);
    lt_sim_metrics_init(&s->met);
    LT_TRY(lt__sim_loop_open(s, err));
    s->scale = o->time_scale > 0 ? o->time_scale : 1;
    s->threads = o->threads ? o->threads : 1;
    s->armed = INT64_MIN; /* no pokes until the loop's first plan, which sees everything */
    s->seed = o->seed;
    s->max_body = o->max_body ? o->max_body : (size_t)4 << 20;
    /* 256 MiB, or room for 4 bodies of the largest size when that is more */
    s->max_pending = s->max_body > SIZE_MAX / 4 ? SIZE_MAX : s->max_body * 4;
    if (s->max_pending < (size_t)256 << 20)
        s->max_pending = (size_t)256 << 20;
    if (o->max_pending)
        s->max_pending = o->max_pending;
    s->max_conn = o->max_connections ? o->max_connections : 16384;
    if (o->profile_data) {
        s->prof = *o->profile_data;
        LT_TRY(lt_sim_profile_check(&s->prof, err));
    } else {
        LT_TRY(lt_sim_profile_load(&s->prof, o->profile ? o->profile : "default", err));
    }
    LT_TRY(lt_sim_dialect_parse(&s->dia, o->dialect, err));
    LT_TRY(lt_sim_faults_parse(&s->faults, o->faults, err));
    if (!s->faults.seed_set)
        s->faults.seed = o->seed;
    s->late = lt_hist_new(LATE_HIGHEST_US, LATE_BITS, err);
    s->model = s->late ? lt_sim_model_new(&s->prof, err) : NULL;
    if (!s->late || !s->model) {
        rc = lt_errf(err, LT_ENOMEM, "cannot start the sim");
        goto out;
    }
    if (o->log_path) {
        s->log = fopen(o->log_path, "w");
        if (!s->log) {
            rc = lt_errset(err, LT_EIO, "%s: %s", o->log_path, strerror(errno));
            goto out;
        }
    }
    s->t0 = lt_mono_now();
    LT_TRY(lt__sim_resolve(s, o->host ? o->host : "127.0.0.1", o->port, err));
    LT_TRY(lt__sim_start_daemon(s, err));
    if (s->log) {
        /* The first line says where the log's clock starts, on the
         * machine's CLOCK_MONOTONIC, so a client on the same machine can
         * compare its own receive times with the model's. */
        char wall[32];
        lt_wall_rfc3339(wall);
        fprintf(s->log,
                "{\"sim\":\"loadtrace\",\"start_mono_ns\":%lld,\"start_wall\":\"%s\","
                "\"port\":%u,\"profile\":\"%s\",\"time_scale\":%g,\"seed\":%llu}\n",
                (long long)s->t0.ns, wall, s->port, s->prof.name, s->scale,
                (unsigned long long)s->seed);
        fflush(s->log);
    }
    LT_TRY(lt__sim_loop_start(s, err));
out:
    if (rc < 0) {
        lt_sim_stop(s);
        return NULL;
    }
    return s;
}

uint16_t lt_sim_port(const struct lt_sim *s)
{
    return s->port;
}

const struct lt_sim_profile *lt_sim_profile(const struct lt_sim *s)
{
    return &s->prof;
}

void lt_sim_stats(struct lt_sim *s, struct lt_sim_stats *st)
{
    pthread_mutex_lock(&s->mu);
    *st = s->st;
    st->late_p50_us = (double)lt_hist_value_at(s->late, 50);
    st->late_p99_us = (double)lt_hist_value_at(s->late, 99);
    pthread_mutex_unlock(&s->mu);
}

int lt_sim_stop_err(struct lt_sim *s, struct lt_err *err)
{
    if (!s)
        return 0;
    int rc = 0;
    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    pthread_mutex_unlock(&s->mu);
    lt__sim_loop_join(s);
    /* Let every suspended request see that the sim stops (its reader or
     * handler gives up), then close everything. */
    pthread_mutex_lock(&s->mu);
    for (struct sreq *r = s->live; r; r = r->next)
        lt__sim_wake(r);
    pthread_mutex_unlock(&s->mu);
    for (int i = s->ndm - 1; i >= 0; i--) {
        MHD_stop_daemon(s->dm[i].d);
        close(s->dm[i].fd);
    }
    lt__sim_loop_close(s);
    if (s->log) {
        if (fclose(s->log) != 0 || s->log_failed)
            rc = lt_errset(err, LT_EIO, "the sim's log could not be written completely");
    }
    lt_sim_model_free(s->model);
    lt_hist_free(s->late);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->log_mu);
    free(s);
    return rc;
}

void lt_sim_stop(struct lt_sim *s)
{
    lt_sim_stop_err(s, NULL);
}
