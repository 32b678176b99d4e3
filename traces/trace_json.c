/*
 * JSON text of loadtrace values. Written by hand into an lt_buf rather than
 * through a JSON library's tree: `cat` prints millions of records, and
 * building and freeing a tree for each would cost more than the decoding.
 */
#include "traces/trace_json.h"
#include "traces/trace_keys.h"

#include <inttypes.h>
#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <string.h>

int lt_json_str(struct lt_buf *out, const char *s, size_t n)
{
    if (n == 0) /* s may be NULL then (msgpack-c's empty strings) */
        return lt_buf_append(out, "\"\"", 2);
    int rc = lt_buf_reserve(out, n + 2);
    if (rc < 0)
        return rc;
    rc = lt_buf_append(out, "\"", 1);
    size_t run = 0; /* bytes copied in one go when nothing needs escaping */
    for (size_t i = 0; i < n && rc == 0; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        rc = lt_buf_append(out, s + run, i - run);
        run = i + 1;
        if (rc < 0)
            break;
        switch (c) {
        case '"': rc = lt_buf_append(out, "\\\"", 2); break;
        case '\\': rc = lt_buf_append(out, "\\\\", 2); break;
        case '\n': rc = lt_buf_append(out, "\\n", 2); break;
        case '\r': rc = lt_buf_append(out, "\\r", 2); break;
        case '\t': rc = lt_buf_append(out, "\\t", 2); break;
        default: rc = lt_buf_printf(out, "\\u%04x", c); break;
        }
    }
    if (rc == 0)
        rc = lt_buf_append(out, s + run, n - run);
    if (rc == 0)
        rc = lt_buf_append(out, "\"", 1);
    return rc;
}

/* Keys are written with a leading comma except the first; `first` tracks
 * that. Errors are sticky in *rc so call sites stay flat. */
struct jw {
    struct lt_buf *out;
    int rc;
    int first;
};

static void jkey(struct jw *w, const char *k)
{
    if (w->rc < 0)
        return;
    if (!w->first)
        w->rc = lt_buf_append(w->out, ",", 1);
    w->first = 0;
    if (w->rc == 0)
        w->rc = lt_buf_printf(w->out, "\"%s\":", k);
}

static void jint(struct jw *w, const char *k, int64_t v)
{
    jkey(w, k);
    if (w->rc == 0)
        w->rc = lt_buf_printf(w->out, "%" PRId64, v);
}

static void juint(struct jw *w, const char *k, uint64_t v)
{
    jkey(w, k);
    if (w->rc == 0)
        w->rc = lt_buf_printf(w->out, "%" PRIu64, v);
}

static void jdouble_val(struct jw *w, double v)
{
    if (w->rc < 0)
        return;
    if (!isfinite(v))
        w->rc = lt_buf_puts(w->out, "null");
    else
        w->rc = lt_buf_printf(w->out, "%.17g", v);
}

static void jstr(struct jw *w, const char *k, const char *s)
{
    jkey(w, k);
    if (w->rc == 0)
        w->rc = lt_json_str(w->out, s, strlen(s));
}

static void jbool(struct jw *w, const char *k, int b)
{
    jkey(w, k);
    if (w->rc == 0)
        w->rc = lt_buf_puts(w->out, b ? "true" : "false");
}

static void jraw(struct jw *w, const char *s)
{
    if (w->rc == 0)
        w->rc = lt_buf_puts(w->out, s);
}

/* ---- msgpack to JSON, for meta and unknown keys ---------------------- */

static int obj_json(struct lt_buf *out, const msgpack_object *o, int depth)
{
    int rc = 0;
    if (depth > 64)
        return LT_ELIMIT;
    switch (o->type) {
    case MSGPACK_OBJECT_NIL: return lt_buf_puts(out, "null");
    case MSGPACK_OBJECT_BOOLEAN: return lt_buf_puts(out, o->via.boolean ? "true" : "false");
    case MSGPACK_OBJECT_POSITIVE_INTEGER: return lt_buf_printf(out, "%" PRIu64, o->via.u64);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return lt_buf_printf(out, "%" PRId64, o->via.i64);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (!isfinite(o->via.f64))
            return lt_buf_puts(out, "null");
        return lt_buf_printf(out, "%.17g", o->via.f64);
    case MSGPACK_OBJECT_STR: return lt_json_str(out, o->via.str.ptr, o->via.str.size);
    case MSGPACK_OBJECT_BIN: return lt_json_str(out, o->via.bin.ptr, o->via.bin.size);
    case MSGPACK_OBJECT_EXT: return lt_buf_puts(out, "null");
    case MSGPACK_OBJECT_ARRAY:
        rc = lt_buf_puts(out, "[");
        for (uint32_t i = 0; i < o->via.array.size && rc == 0; i++) {
            if (i)
                rc = lt_buf_puts(out, ",");
            if (rc == 0)
                rc = obj_json(out, &o->via.array.ptr[i], depth + 1);
        }
        return rc ? rc : lt_buf_puts(out, "]");
    case MSGPACK_OBJECT_MAP:
        rc = lt_buf_puts(out, "{");
        for (uint32_t i = 0; i < o->via.map.size && rc == 0; i++) {
            const msgpack_object *k = &o->via.map.ptr[i].key;
            if (i)
                rc = lt_buf_puts(out, ",");
            if (rc == 0) {
                if (k->type == MSGPACK_OBJECT_STR) {
                    rc = obj_json(out, k, depth + 1);
                } else { /* JSON keys are strings: print the key's JSON as one */
                    struct lt_buf tmp;
                    lt_buf_init(&tmp, out->max);
                    rc = obj_json(&tmp, k, depth + 1);
                    if (rc == 0)
                        rc = lt_json_str(out, tmp.p ? tmp.p : "", tmp.len);
                    lt_buf_release(&tmp);
                }
            }
            if (rc == 0)
                rc = lt_buf_puts(out, ":");
            if (rc == 0)
                rc = obj_json(out, &o->via.map.ptr[i].val, depth + 1);
        }
        return rc ? rc : lt_buf_puts(out, "}");
    }
    return LT_EFORMAT;
}

int lt_json_msgpack(struct lt_buf *out, const uint8_t *data, size_t len)
{
    msgpack_zone z;
    if (!msgpack_zone_init(&z, 2048))
        return LT_ENOMEM;
    msgpack_object o;
    size_t off = 0;
    int rc;
    msgpack_unpack_return ur = msgpack_unpack((const char *)data, len, &off, &z, &o);
    if (ur == MSGPACK_UNPACK_SUCCESS || ur == MSGPACK_UNPACK_EXTRA_BYTES)
        rc = obj_json(out, &o, 0);
    else
        rc = LT_EFORMAT;
    msgpack_zone_destroy(&z);
    return rc;
}

/* Unknown keys: n raw key/value pairs, appended as more members. */
static void jextra(struct jw *w, const struct lt_extra *x)
{
    if (w->rc < 0 || !x->n)
        return;
    msgpack_zone z;
    if (!msgpack_zone_init(&z, 2048)) {
        w->rc = LT_ENOMEM;
        return;
    }
    size_t off = 0;
    for (uint32_t i = 0; i < 2 * x->n && w->rc == 0; i++) {
        msgpack_object o;
        msgpack_unpack_return ur = msgpack_unpack((const char *)x->data, x->len, &off, &z, &o);
        if (ur != MSGPACK_UNPACK_SUCCESS && ur != MSGPACK_UNPACK_EXTRA_BYTES) {
            w->rc = LT_EFORMAT;
            break;
        }
        if (i % 2 == 0) {
            if (!w->first)
                w->rc = lt_buf_append(w->out, ",", 1);
            w->first = 0;
            if (w->rc == 0 && o.type == MSGPACK_OBJECT_STR)
                w->rc = lt_json_str(w->out, o.via.str.ptr, o.via.str.size);
            else if (w->rc == 0)
                w->rc = lt_json_str(w->out, "?", 1);
            if (w->rc == 0)
                w->rc = lt_buf_append(w->out, ":", 1);
        } else {
            w->rc = obj_json(w->out, &o, 0);
        }
    }
    msgpack_zone_destroy(&z);
}

int lt_json_header(struct lt_buf *out, const struct lt_header *h)
{
    struct jw w = {out, lt_buf_puts(out, "{"), 1};
    jstr(&w, K_FORMAT, LT_FORMAT_NAME);
    juint(&w, K_VERSION, h->version);
    jstr(&w, K_KIND, h->kind == LT_KIND_RESULTS ? "results" : "trace");
    jstr(&w, K_CREATED, h->created ? h->created : "");
    jstr(&w, K_SOURCE, h->source ? h->source : "");
    if (h->block_tokens)
        juint(&w, K_BLOCK_TOKENS, h->block_tokens);
    if (h->meta_len) {
        jkey(&w, K_META);
        if (w.rc == 0)
            w.rc = lt_json_msgpack(out, h->meta, h->meta_len);
    }
    jextra(&w, &h->extra);
    jraw(&w, "}");
    return w.rc;
}

int lt_json_record(struct lt_buf *out, const struct lt_record *r)
{
    struct jw w = {out, lt_buf_puts(out, "{"), 1};
    uint32_t h = r->has;
    jint(&w, K_T, r->t);
    if (h & LT_HAS_SESSION)
        juint(&w, K_SESSION, r->session);
    if (h & LT_HAS_TURN)
        juint(&w, K_TURN, r->turn);
    if (h & LT_HAS_THINK)
        jint(&w, K_THINK, r->think);
    if (r->api)
        jstr(&w, K_API, r->api);
    if (r->model)
        jstr(&w, K_MODEL, r->model);
    if (h & LT_HAS_IN)
        juint(&w, K_IN, r->in);
    if (h & LT_HAS_CACHED)
        juint(&w, K_CACHED, r->cached);
    if (h & LT_HAS_OUT)
        juint(&w, K_OUT, r->out);
    if (h & LT_HAS_REASONING)
        juint(&w, K_REASONING, r->reasoning);
    if (h & LT_HAS_MAX_TOKENS)
        juint(&w, K_MAX_TOKENS, r->max_tokens);
    if (h & LT_HAS_MSGS) {
        jkey(&w, K_MSGS);
        jraw(&w, "[");
        for (uint32_t i = 0; i < r->n_msgs && w.rc == 0; i++) {
            jraw(&w, i ? ",[" : "[");
            if (w.rc == 0)
                w.rc = lt_json_str(out, r->msgs[i].role, strlen(r->msgs[i].role));
            if (w.rc == 0)
                w.rc = lt_buf_printf(out, ",%" PRIu32 "]", r->msgs[i].tokens);
        }
        jraw(&w, "]");
    }
    if (h & LT_HAS_TOOLS) {
        jkey(&w, K_TOOLS);
        if (w.rc == 0)
            w.rc = lt_buf_printf(out, "[%" PRIu32 ",%" PRIu32 "]", r->tools_count,
                                 r->tools_tokens);
    }
    if (h & LT_HAS_CALLS) {
        jkey(&w, K_CALLS);
        jraw(&w, "[");
        for (uint32_t i = 0; i < r->n_calls && w.rc == 0; i++)
            w.rc = lt_buf_printf(out, i ? ",%" PRIu32 : "%" PRIu32, r->calls[i]);
        jraw(&w, "]");
    }
    if (h & LT_HAS_BLOCKS) {
        jkey(&w, K_BLOCKS);
        jraw(&w, "[");
        for (uint32_t i = 0; i < r->n_blocks && w.rc == 0; i++)
            w.rc = lt_buf_printf(out, i ? ",%" PRIu64 : "%" PRIu64, r->blocks[i]);
        jraw(&w, "]");
    }
    if (h & (LT_HAS_ORIG_STATUS | LT_HAS_ORIG_TTFT | LT_HAS_ORIG_E2E)) {
        jkey(&w, K_ORIG);
        jraw(&w, "{");
        struct jw o = {out, w.rc, 1};
        if (h & LT_HAS_ORIG_STATUS)
            jint(&o, K_STATUS, r->orig_status);
        if (h & LT_HAS_ORIG_TTFT)
            jint(&o, K_TTFT, r->orig_ttft);
        if (h & LT_HAS_ORIG_E2E)
            jint(&o, K_E2E, r->orig_e2e);
        w.rc = o.rc;
        jraw(&w, "}");
    }
    if (r->finish)
        jstr(&w, K_FINISH, r->finish);
    if (r->text) {
        jkey(&w, K_TEXT);
        if (w.rc == 0)
            w.rc = lt_json_str(out, r->text, r->text_len);
    }
    if (h & LT_HAS_FAILED)
        jbool(&w, K_FAILED, 1);
    if (h & LT_HAS_ESTIMATED)
        jbool(&w, K_EST, 1);
    jextra(&w, &r->extra);
    jraw(&w, "}");
    return w.rc;
}

int lt_json_run(struct lt_buf *out, const struct lt_run *r)
{
    struct jw w = {out, lt_buf_puts(out, "{"), 1};
    jstr(&w, K_REC, "run");
    juint(&w, K_RUN, r->id);
    jstr(&w, K_MODE, r->mode ? r->mode : "");
    if (r->concurrency)
        juint(&w, K_CONCURRENCY, r->concurrency);
    if (r->rate > 0) {
        jkey(&w, K_RATE);
        jdouble_val(&w, r->rate);
    }
    if (r->speed > 0) {
        jkey(&w, K_SPEED);
        jdouble_val(&w, r->speed);
    }
    if (r->target)
        jstr(&w, K_TARGET, r->target);
    if (r->model)
        jstr(&w, K_MODEL, r->model);
    if (r->start)
        jstr(&w, K_START, r->start);
    if (r->version)
        jstr(&w, K_VERSION, r->version);
    if (r->warmup)
        juint(&w, K_WARMUP, r->warmup);
    jextra(&w, &r->extra);
    jraw(&w, "}");
    return w.rc;
}

int lt_json_result(struct lt_buf *out, const struct lt_result *r)
{
    struct jw w = {out, lt_buf_puts(out, "{"), 1};
    uint32_t h = r->has;
    juint(&w, K_I, r->index);
    juint(&w, K_RUN, r->run);
    jint(&w, K_SCHED, r->sched);
    if (h & LT_RHAS_SENT)
        jint(&w, K_SENT, r->sent);
    if (h & LT_RHAS_FIRST_BYTE)
        jint(&w, K_FB, r->first_byte);
    if (h & LT_RHAS_FIRST_TOKEN)
        jint(&w, K_FT, r->first_token);
    if (h & LT_RHAS_FIRST_CONTENT)
        jint(&w, K_FC, r->first_content);
    if (h & LT_RHAS_END)
        jint(&w, K_END, r->end);
    if (h & LT_RHAS_CHUNKS) {
        /* The same delta encoding as the msgpack form. */
        jkey(&w, K_CHUNKS);
        jraw(&w, "[");
        int64_t prev = (h & LT_RHAS_SENT) ? r->sent : r->sched;
        for (uint32_t i = 0; i < r->n_chunks && w.rc == 0; i++) {
            w.rc = lt_buf_printf(out, i ? ",%" PRId64 ",%" PRIu32 : "%" PRId64 ",%" PRIu32,
                                 /* modulo 2^64, as the reader adds it back */
                                 (int64_t)((uint64_t)r->chunks[i].t - (uint64_t)prev),
                                 r->chunks[i].tokens);
            prev = r->chunks[i].t;
        }
        jraw(&w, "]");
    }
    if (h & LT_RHAS_IN)
        juint(&w, K_IN, r->in);
    if (h & LT_RHAS_OUT)
        juint(&w, K_OUT, r->out);
    if (h & LT_RHAS_REASONING)
        juint(&w, K_REASONING, r->reasoning);
    if (h & LT_RHAS_CACHED)
        juint(&w, K_CACHED, r->cached);
    if (h & LT_RHAS_WANT_IN)
        juint(&w, K_WANT_IN, r->want_in);
    if (h & LT_RHAS_WANT_OUT)
        juint(&w, K_WANT_OUT, r->want_out);
    if (h & LT_RHAS_STATUS)
        jint(&w, K_STATUS, r->status);
    if (r->err)
        jstr(&w, K_ERR, r->err);
    if (r->finish)
        jstr(&w, K_FINISH, r->finish);
    if (r->count)
        jstr(&w, K_COUNT, r->count);
    if (r->warmup)
        jbool(&w, K_WARMUP, 1);
    jextra(&w, &r->extra);
    jraw(&w, "}");
    return w.rc;
}

int lt_json_item(struct lt_buf *out, const struct lt_item *it)
{
    switch (it->type) {
    case LT_ITEM_RECORD: return lt_json_record(out, &it->rec);
    case LT_ITEM_RUN: return lt_json_run(out, &it->run);
    case LT_ITEM_RESULT: return lt_json_result(out, &it->res);
    }
    return LT_EINVAL;
}
