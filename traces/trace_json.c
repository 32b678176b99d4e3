/*
 * JSON text of loadtrace values. Written by hand into an lt_buf rather than
 * through a JSON library's tree: `cat` prints millions of records, and
 * building and freeing a tree for each would cost more than the decoding.
 */
#include "traces/trace_json.h"
#include "traces/trace_keys.h"
#include "traces/trace_schema.h"

#include <inttypes.h>
#include <math.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A scrape's value, in the fewest digits that read back the same (a
 * gauge of 0.1 is "0.1", not "0.10000000000000001"). */
static void jshort_val(struct jw *w, double v)
{
    char b[40];
    if (w->rc < 0)
        return;
    if (!isfinite(v)) {
        w->rc = lt_buf_puts(w->out, "null");
        return;
    }
    snprintf(b, sizeof b, "%.15g", v);
    if (strtod(b, NULL) != v)
        snprintf(b, sizeof b, "%.17g", v);
    w->rc = lt_buf_puts(w->out, b);
}

static void jstr(struct jw *w, const char *k, const char *s)
{
    jkey(w, k);
    if (w->rc == 0)
        w->rc = lt_json_str(w->out, s, strlen(s));
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
    case MSGPACK_OBJECT_NIL:
        return lt_buf_puts(out, "null");
    case MSGPACK_OBJECT_BOOLEAN:
        return lt_buf_puts(out, o->via.boolean ? "true" : "false");
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        return lt_buf_printf(out, "%" PRIu64, o->via.u64);
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        return lt_buf_printf(out, "%" PRId64, o->via.i64);
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        if (!isfinite(o->via.f64))
            return lt_buf_puts(out, "null");
        return lt_buf_printf(out, "%.17g", o->via.f64);
    case MSGPACK_OBJECT_STR:
        return lt_json_str(out, o->via.str.ptr, o->via.str.size);
    case MSGPACK_OBJECT_BIN:
        return lt_json_str(out, o->via.bin.ptr, o->via.bin.size);
    case MSGPACK_OBJECT_EXT:
        return lt_buf_puts(out, "null");
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

int lt_trace_json_msgpack(struct lt_buf *out, const uint8_t *data, size_t len)
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

int lt_trace_json_header(struct lt_buf *out, const struct lt_header *h)
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
            w.rc = lt_trace_json_msgpack(out, h->meta, h->meta_len);
    }
    jextra(&w, &h->extra);
    jraw(&w, "}");
    return w.rc;
}

/* A field's value, whose key is written; `base` is the struct (the
 * shapes of their own belong to one struct each). */
static void jvalue(struct jw *w, const struct lt_field *f, const void *base, uint32_t has)
{
    const char *p = (const char *)base + f->off;
    const struct lt_record *rec = base;
    const struct lt_result *res = base;
    struct lt_buf *out = w->out;
    if (w->rc < 0)
        return;
    switch ((enum lt_ftype)f->type) {
    case LT_FT_I64:
        w->rc = lt_buf_printf(out, "%" PRId64, *(const int64_t *)(const void *)p);
        break;
    case LT_FT_I32:
        w->rc = lt_buf_printf(out, "%" PRId32, *(const int32_t *)(const void *)p);
        break;
    case LT_FT_U64:
        w->rc = lt_buf_printf(out, "%" PRIu64, *(const uint64_t *)(const void *)p);
        break;
    case LT_FT_U32:
        w->rc = lt_buf_printf(out, "%" PRIu32, *(const uint32_t *)(const void *)p);
        break;
    case LT_FT_F64:
        jdouble_val(w, *(const double *)(const void *)p);
        break;
    case LT_FT_STR: {
        const char *s = *(const char *const *)(const void *)p;
        s = s ? s : "";
        w->rc = lt_json_str(out, s, strlen(s));
        break;
    }
    case LT_FT_TEXT:
        w->rc = lt_json_str(out, rec->text, rec->text_len);
        break;
    case LT_FT_FLAG:
    case LT_FT_BOOL:
        w->rc = lt_buf_puts(out, "true");
        break;
    case LT_FT_REC:
        w->rc = lt_json_str(out, "run", 3);
        break;
    case LT_FT_SREC:
        w->rc = lt_json_str(out, "scrape", 6);
        break;
    case LT_FT_CREC:
        w->rc = lt_json_str(out, K_CHECK, sizeof K_CHECK - 1);
        break;
    case LT_FT_VREC:
        w->rc = lt_json_str(out, K_VERDICT, sizeof K_VERDICT - 1);
        break;
    case LT_FT_AREC:
        w->rc = lt_json_str(out, K_ANSWER, sizeof K_ANSWER - 1);
        break;
    case LT_FT_VALS: {
        const struct lt_scrape_val *v = *(const struct lt_scrape_val *const *)(const void *)p;
        uint32_t n = lt_schema_count(p);
        jraw(w, "{");
        for (uint32_t i = 0; i < n && w->rc == 0; i++) {
            jraw(w, i ? "," : "");
            if (w->rc == 0)
                w->rc = lt_json_str(out, v[i].name, strlen(v[i].name));
            jraw(w, ":");
            jshort_val(w, v[i].v);
        }
        jraw(w, "}");
        break;
    }
    case LT_FT_HISTS: {
        const struct lt_scrape_hist *h = *(const struct lt_scrape_hist *const *)(const void *)p;
        uint32_t n = lt_schema_count(p);
        jraw(w, "{");
        for (uint32_t i = 0; i < n && w->rc == 0; i++) {
            jraw(w, i ? "," : "");
            if (w->rc == 0)
                w->rc = lt_json_str(out, h[i].name, strlen(h[i].name));
            jraw(w, ":[");
            jshort_val(w, h[i].sum);
            jraw(w, ",");
            jshort_val(w, h[i].count);
            for (uint32_t j = 0; j < h[i].n && w->rc == 0; j++) {
                jraw(w, ",");
                jshort_val(w, h[i].le[j]);
                jraw(w, ",");
                jshort_val(w, h[i].cum[j]);
            }
            jraw(w, "]");
        }
        jraw(w, "}");
        break;
    }
    case LT_FT_MSGS:
        jraw(w, "[");
        for (uint32_t i = 0; i < rec->n_msgs && w->rc == 0; i++) {
            jraw(w, i ? ",[" : "[");
            if (w->rc == 0)
                w->rc = lt_json_str(out, rec->msgs[i].role, strlen(rec->msgs[i].role));
            if (w->rc == 0)
                w->rc = lt_buf_printf(out, ",%" PRIu32 "]", rec->msgs[i].tokens);
        }
        jraw(w, "]");
        break;
    case LT_FT_TOOLS:
        w->rc =
            lt_buf_printf(out, "[%" PRIu32 ",%" PRIu32 "]", rec->tools_count, rec->tools_tokens);
        break;
    case LT_FT_CALLS:
        jraw(w, "[");
        for (uint32_t i = 0; i < rec->n_calls && w->rc == 0; i++)
            w->rc = lt_buf_printf(out, i ? ",%" PRIu32 : "%" PRIu32, rec->calls[i]);
        jraw(w, "]");
        break;
    case LT_FT_BLOCKS:
        jraw(w, "[");
        for (uint32_t i = 0; i < rec->n_blocks && w->rc == 0; i++)
            w->rc = lt_buf_printf(out, i ? ",%" PRIu64 : "%" PRIu64, rec->blocks[i]);
        jraw(w, "]");
        break;
    case LT_FT_ORIG: {
        jraw(w, "{");
        struct jw o = {out, w->rc, 1};
        for (int i = 0; i < LT_ORIG_N; i++)
            if (has & lt_schema_orig[i].bit) {
                jkey(&o, lt_schema_orig[i].key);
                jvalue(&o, &lt_schema_orig[i], base, has);
            }
        w->rc = o.rc;
        jraw(w, "}");
        break;
    }
    case LT_FT_CHUNKS: {
        /* The same delta encoding as the msgpack form. */
        jraw(w, "[");
        int64_t prev = (has & LT_RHAS_SENT) ? res->sent : res->sched;
        for (uint32_t i = 0; i < res->n_chunks && w->rc == 0; i++) {
            w->rc = lt_buf_printf(out, i ? ",%" PRId64 ",%" PRIu32 : "%" PRId64 ",%" PRIu32,
                                  /* modulo 2^64, as the reader adds it back */
                                  (int64_t)((uint64_t)res->chunks[i].t - (uint64_t)prev),
                                  res->chunks[i].tokens);
            prev = res->chunks[i].t;
        }
        jraw(w, "]");
        break;
    }
    }
}

/* A value as one JSON object: the fields of its table that are present,
 * in the table's order (as the writer packs them), then its unknown keys. */
static int jfields(struct lt_buf *out, const struct lt_field *f, int nf, const void *base,
                   uint32_t has, const struct lt_extra *x)
{
    struct jw w = {out, lt_buf_puts(out, "{"), 1};
    for (int i = 0; i < nf; i++) {
        if (!lt_schema_present(&f[i], base, has))
            continue;
        jkey(&w, f[i].key);
        jvalue(&w, &f[i], base, has);
    }
    jextra(&w, x);
    jraw(&w, "}");
    return w.rc;
}

int lt_trace_json_record(struct lt_buf *out, const struct lt_record *r)
{
    return jfields(out, lt_schema_record, LT_REC_N, r, r->has, &r->extra);
}

int lt_trace_json_run(struct lt_buf *out, const struct lt_run *r)
{
    return jfields(out, lt_schema_run, LT_RUN_N, r, 0, &r->extra);
}

int lt_trace_json_result(struct lt_buf *out, const struct lt_result *r)
{
    return jfields(out, lt_schema_result, LT_RES_N, r, r->has, &r->extra);
}

int lt_trace_json_scrape(struct lt_buf *out, const struct lt_scrape *s)
{
    return jfields(out, lt_schema_scrape, LT_SCR_N, s, 0, &s->extra);
}

int lt_trace_json_check(struct lt_buf *out, const struct lt_check *k)
{
    return jfields(out, lt_schema_check, LT_CHK_N, k, 0, &k->extra);
}

int lt_trace_json_verdict(struct lt_buf *out, const struct lt_verdict *v)
{
    return jfields(out, lt_schema_verdict, LT_VRD_N, v, 0, &v->extra);
}

int lt_trace_json_answer(struct lt_buf *out, const struct lt_answer *a)
{
    return jfields(out, lt_schema_answer, LT_ANS_N, a, 0, &a->extra);
}

int lt_trace_json_item(struct lt_buf *out, const struct lt_item *it)
{
    switch (it->type) {
    case LT_ITEM_RECORD:
        return lt_trace_json_record(out, &it->rec);
    case LT_ITEM_RUN:
        return lt_trace_json_run(out, &it->run);
    case LT_ITEM_RESULT:
        return lt_trace_json_result(out, &it->res);
    case LT_ITEM_SCRAPE:
        return lt_trace_json_scrape(out, &it->scr);
    case LT_ITEM_CHECK:
        return lt_trace_json_check(out, &it->chk);
    case LT_ITEM_VERDICT:
        return lt_trace_json_verdict(out, &it->vrd);
    case LT_ITEM_ANSWER:
        return lt_trace_json_answer(out, &it->ans);
    }
    return LT_EINVAL;
}
