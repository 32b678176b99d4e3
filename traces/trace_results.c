/*
 * Run and result records packed alike for every engine (trace_results.h).
 */
#include "traces/trace_results.h"

#include "base/lt_time.h"
#include "traces/lt_mp.h"

#include <string.h>

/* The keys of one MPI part and of a merge of parts; returns how many. */
static uint32_t put_mpi(struct lt_mp *m, const struct lt_run_desc *d)
{
    uint32_t n = 0;
    if (d->parts > 1) {
        lt_mp_cstr(m, "rank");
        lt_mp_uint(m, d->part);
        lt_mp_cstr(m, "ranks");
        lt_mp_uint(m, d->parts);
        lt_mp_cstr(m, "planned");
        lt_mp_uint(m, d->planned);
        n += 3;
    }
    if (d->merged) {
        lt_mp_cstr(m, "ranks");
        lt_mp_uint(m, d->ranks);
        lt_mp_cstr(m, "merged_ranks");
        lt_mp_uint(m, d->merged_ranks);
        lt_mp_cstr(m, "missing_ranks");
        lt_mp_array(m, d->n_missing);
        for (uint32_t k = 0; k < d->n_missing; k++)
            lt_mp_uint(m, d->missing_ranks[k]);
        lt_mp_cstr(m, "missing_requests");
        lt_mp_int(m, d->missing_requests);
        n += 4;
    }
    return n;
}

struct lt_writer *lt_results_file(const char *path, const char *const *mk, const char *const *mv,
                                  size_t n, uint32_t block_tokens,
                                  const struct lt_writer_opts *opts, struct lt_err *err)
{
    struct lt_buf meta;
    lt_buf_init(&meta, 1 << 16);
    lt_meta_pack(&meta, mk, mv, n);
    struct lt_header h = {
        .kind = LT_KIND_RESULTS,
        .source = "replay",
        .block_tokens = block_tokens,
        .meta = (const uint8_t *)meta.p,
        .meta_len = meta.len,
    };
    struct lt_writer *w = lt_writer_open(path, &h, opts, err);
    lt_buf_release(&meta);
    if (!w && err && !err->code)
        err->code = LT_EIO;
    return w;
}

int lt_results_put_run(struct lt_writer *w, const struct lt_run_desc *d, struct lt_err *err)
{
    struct lt_buf b;
    lt_buf_init(&b, 1 << 20);
    struct lt_mp m = {.out = &b};
    uint32_t n = put_mpi(&m, d);
    if (d->calib) {
        lt_mp_cstr(&m, "calib");
        lt_mp_cstr(&m, d->calib);
        n++;
        if (d->calib_err >= 0) {
            lt_mp_cstr(&m, "calib_err");
            lt_mp_double(&m, d->calib_err);
            lt_mp_cstr(&m, "calib_err_rel");
            lt_mp_double(&m, d->calib_err_rel);
            n += 2;
        }
    }
    if (d->n_replicas) {
        lt_mp_cstr(&m, "replicas");
        lt_mp_array(&m, d->n_replicas);
        for (uint32_t i = 0; i < d->n_replicas; i++)
            lt_mp_cstr(&m, d->replicas[i]);
        lt_mp_cstr(&m, "route");
        lt_mp_cstr(&m, d->route ? d->route : "?");
        lt_mp_cstr(&m, "failover"); /* 0 or 1: an integer, as readers take extras */
        lt_mp_uint(&m, d->failover);
        n += 3;
    }
    if (d->run.extra.len)
        lt_mp_raw(&m, d->run.extra.data, d->run.extra.len);
    int rc = m.rc;
    if (rc < 0) {
        rc = lt_errset(err, rc, "run %u: its record does not fit in memory", d->run.id);
    } else {
        struct lt_run run = d->run;
        char start[32];
        if (!run.start && !d->copied) {
            lt_wall_rfc3339(start);
            run.start = start;
        }
        if (!run.version && !d->copied)
            run.version = LT_VERSION;
        run.extra =
            (struct lt_extra){.data = (const uint8_t *)b.p, .len = b.len, .n = n + d->run.extra.n};
        rc = lt_writer_put_run(w, &run, err);
    }
    lt_buf_release(&b);
    return rc;
}

/* "img", "img_tok" and, with audio or video, "aud", "vid", "av_tok": the
 * parts as the trace record says them. Returns how many keys. */
static uint32_t put_media(struct lt_mp *m, const struct lt_media *parts, uint32_t n)
{
    uint64_t img_tok = 0, aud = 0, vid = 0, av_tok = 0;
    uint32_t img = lt_media_images(parts, n, &img_tok);
    for (uint32_t i = 0; i < n; i++) {
        aud += parts[i].kind == LT_MEDIA_AUDIO;
        vid += parts[i].kind == LT_MEDIA_VIDEO;
        av_tok += parts[i].kind != LT_MEDIA_IMAGE ? parts[i].tokens : 0;
    }
    lt_mp_cstr(m, "img");
    lt_mp_uint(m, img);
    lt_mp_cstr(m, "img_tok"); /* a uint (32 bits) in the format: saturated */
    lt_mp_uint(m, img_tok > UINT32_MAX ? UINT32_MAX : img_tok);
    if (!aud && !vid)
        return 2;
    lt_mp_cstr(m, "aud");
    lt_mp_uint(m, aud);
    lt_mp_cstr(m, "vid");
    lt_mp_uint(m, vid);
    lt_mp_cstr(m, "av_tok");
    lt_mp_uint(m, av_tok > UINT32_MAX ? UINT32_MAX : av_tok);
    return 5;
}

int lt_results_keys(const struct lt_result_keys *k, struct lt_buf *buf, struct lt_extra *x)
{
    lt_buf_reset(buf);
    struct lt_mp m = {.out = buf};
    uint32_t n = 0;
    if (k->ctok != LT_CTOK_NONE) {
        lt_mp_cstr(&m, "ctok");
        lt_mp_cstr(&m, k->ctok == LT_CTOK_USAGE ? "usage" : "one");
        n++;
    }
    if (k->thin > 1) {
        lt_mp_cstr(&m, "thin");
        lt_mp_uint(&m, k->thin);
        n++;
    }
    if (k->retries) {
        lt_mp_cstr(&m, "retries");
        lt_mp_uint(&m, k->retries);
        n++;
    }
    if (k->n_media)
        n += put_media(&m, k->media, k->n_media);
    if (k->inputs) {
        lt_mp_cstr(&m, "inputs");
        lt_mp_uint(&m, k->inputs);
        n++;
    }
    if (k->has_replica) {
        lt_mp_cstr(&m, "replica");
        lt_mp_uint(&m, k->replica);
        n++;
        if (k->failed_over) {
            lt_mp_cstr(&m, "failover_from");
            lt_mp_uint(&m, k->failover_from);
            n++;
        }
    }
    const struct {
        bool has;
        const char *key;
        uint64_t v;
    } srv[] = {{k->has_srv_pf, "srv_pf", k->srv_pf_us},
               {k->has_srv_pf_n, "srv_pf_n", k->srv_pf_n},
               {k->has_srv_dec, "srv_dec", k->srv_dec_us},
               {k->has_srv_dec_n, "srv_dec_n", k->srv_dec_n},
               {k->has_srv_cache, "srv_cache", k->srv_cache}};
    for (size_t i = 0; i < sizeof srv / sizeof srv[0]; i++)
        if (srv[i].has) {
            lt_mp_cstr(&m, srv[i].key);
            lt_mp_uint(&m, srv[i].v);
            n++;
        }
    if (m.rc < 0 || !n) {
        *x = (struct lt_extra){0};
        return m.rc;
    }
    *x = (struct lt_extra){.data = (const uint8_t *)buf->p, .len = buf->len, .n = n};
    return 0;
}
