/*
 * Scraping a server's Prometheus metrics during a replay, on replay's own
 * event loop (docs/server-metrics.md §6).
 *
 * Why here and like this: the answers analyze gives (was the KV cache
 * full when TTFT jumped? did the server count the tokens we did?) need the
 * server's values on the same clock as every request, and a scraper must
 * never make a request late. So each endpoint has its own curl easy handle
 * (its own connection) on the replay's multi handle: a scrape is one more
 * non-blocking transfer, started by an interval timerfd in the same epoll
 * set, and an endpoint still busy is not scraped again until it answers.
 * A page over the size limit, HTML, an HTTP error, a timeout or a refused
 * connection is a scrape sample with `err`, and the run goes on.
 *
 * Each sample is written at once (trace-format §2.7): when it was sent on
 * the run's clock, how long it took, the canonical values (metrics/
 * prom_map.h) and the raw series --server-metrics-keep asks for. The last
 * sample of a run is taken after its last request ended, blocking, so
 * that counter deltas cover the whole run.
 */
#include "replay/replay_internal.h"
#include "traces/lt_mp.h"
#include "traces/trace_reader.h"
#include "traces/trace_hits.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

_Static_assert(sizeof((struct lt_replay_scrape_ep *)0)->err == sizeof((struct lt_err *)0)->msg,
               "a scrape error holds a whole lt_err message");

#define DEFAULT_INTERVAL_NS 250000000LL
#define MIN_INTERVAL_NS 10000000LL
#define PROBE_TIMEOUT_MS 2000L
#define FINAL_TIMEOUT_MS 2000L

static size_t on_page(char *p, size_t size, size_t n, void *ud)
{
    struct lt_replay_scrape_ep *ep = ud;
    size_t len = size * n;
    if (ep->page.len + len > ep->page.max) {
        ep->over = true;
        return 0; /* abort the transfer */
    }
    return lt_buf_append(&ep->page, p, len) < 0 ? 0 : len;
}

/* How long one scrape may take: several intervals, at least a second. */
static long scrape_timeout_ms(const struct lt_replay_scraper *s)
{
    long ms = (long)(4 * s->interval_ns / 1000000);
    return ms < 1000 ? 1000 : ms;
}

/* Scrapes get connections of their own: each one opens a fresh
 * connection and closes it after the page, so a scrape never takes an
 * idle connection of the requests from curl's cache (a request would then
 * pay a connect it would not have paid, inside its TTFT), and no request
 * gets a scrape's. (A CONNECT_TO mapping of the endpoint to itself would
 * have kept them apart with reuse, but curl drops a mapping to the same
 * host and port.) The cost is a connect per scrape: tens of
 * microseconds on a local network. */
static void own_connections(CURL *e)
{
    curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
}

static int ep_add(struct lt_replay *rp, const char *url, bool target, struct lt_err *err)
{
    struct lt_replay_scraper *s = &rp->scr;
    if (s->n >= LT_SCRAPE_EPS_MAX)
        return lt_errset(err, LT_EINVAL, "more than %d metrics endpoints", LT_SCRAPE_EPS_MAX);
    struct lt_replay_scrape_ep *ep = &s->ep[s->n];
    memset(ep, 0, sizeof *ep);
    if (snprintf(ep->url, sizeof ep->url, "%s", url) >= (int)sizeof ep->url)
        return lt_errset(err, LT_EINVAL, "metrics URL too long: %.80s...", url);
    ep->target = target;
    ep->easy = curl_easy_init();
    if (!ep->easy)
        return lt_errset(err, LT_ENOMEM, "cannot create a curl handle");
    lt_buf_init(&ep->page, LT_PROM_PAGE_MAX);
    lt_buf_init(&ep->rawnames, (size_t)4 << 20);
    s->n++;
    CURL *e = ep->easy;
    if (target) {
        lt_replay_http_setup(e, &rp->http); /* the target's headers, its key */
    } else {
        /* Another host: none of the target's headers, above all not its key. */
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, s->plain);
        if (rp->http.insecure) {
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
            curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        if (rp->http.connect_timeout_ms)
            curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, rp->http.connect_timeout_ms);
    }
    curl_easy_setopt(e, CURLOPT_URL, ep->url);
    own_connections(e);
    curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(e, CURLOPT_PRIVATE, ep);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_page);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, ep);
    curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, scrape_timeout_ms(s));
    return 0;
}

int lt__replay_scrape_init(struct lt_replay *rp, struct lt_err *err)
{
    struct lt_replay_scraper *s = &rp->scr;
    const struct lt_replay_opts *o = &rp->o;
    s->tfd = -1;
    s->interval_ns = o->metrics_interval_us ? o->metrics_interval_us * 1000 : DEFAULT_INTERVAL_NS;
    if (s->interval_ns < MIN_INTERVAL_NS)
        return lt_errset(err, LT_EINVAL, "--metrics-interval must be at least 10 ms");
    lt_prom_page_init(&s->pg, NULL);
    lt_buf_init(&s->extra, 1 << 20);
    lt_buf_init(&s->bad, 1 << 16);
    s->plain = curl_slist_append(NULL, "Accept: text/plain;version=0.0.4;q=1, */*;q=0.1");
    if (!s->plain)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    if (o->metrics_keep) {
        int rc = regcomp(&s->keep, o->metrics_keep, REG_EXTENDED | REG_NOSUB);
        if (rc) {
            char m[128];
            regerror(rc, &s->keep, m, sizeof m);
            return lt_errset(err, LT_EINVAL, "--server-metrics-keep %s: %s", o->metrics_keep, m);
        }
        s->has_keep = true;
    }
    if (o->metrics_map) {
        int rc = lt_prom_map_new(&s->map, err);
        if (rc < 0)
            return rc;
        if ((rc = lt_prom_map_load(s->map, o->metrics_map, err)) < 0)
            return rc;
    }
    s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = s->tfd};
    if (s->tfd < 0 || epoll_ctl(rp->epfd, EPOLL_CTL_ADD, s->tfd, &ev) < 0)
        return lt_errset(err, LT_EIO, "cannot create the scrape timer: %s", strerror(errno));
    return 0;
}

void lt__replay_scrape_release(struct lt_replay *rp)
{
    struct lt_replay_scraper *s = &rp->scr;
    for (int i = 0; i < s->n; i++) {
        struct lt_replay_scrape_ep *ep = &s->ep[i];
        if (ep->busy && rp->multi)
            curl_multi_remove_handle(rp->multi, ep->easy);
        curl_easy_cleanup(ep->easy);
        lt_buf_release(&ep->page);
        lt_buf_release(&ep->rawnames);
        free(ep->raw);
    }
    s->n = 0;
    curl_slist_free_all(s->plain);
    s->plain = NULL;
    lt_prom_page_release(&s->pg);
    lt_prom_map_free(s->map);
    s->map = NULL;
    if (s->has_keep)
        regfree(&s->keep);
    s->has_keep = false;
    free(s->fam_keep);
    s->fam_keep = NULL;
    lt_buf_release(&s->extra);
    lt_buf_release(&s->bad);
    if (s->tfd >= 0)
        close(s->tfd);
    s->tfd = -1;
}

/* Whether a page is Prometheus text: parses, and names at least one
 * sample. */
static bool looks_prometheus(struct lt_replay_scraper *s, const struct lt_buf *b)
{
    struct lt_err e = {0};
    return lt_prom_parse(&s->pg, b->p ? b->p : "", b->len, "probe", &e) == 0 && s->pg.nsamples > 0;
}

int lt__replay_scrape_prepare(struct lt_replay *rp, struct lt_err *err)
{
    struct lt_replay_scraper *s = &rp->scr;
    const struct lt_replay_opts *o = &rp->o;
    int rc = 0;
    char target_url[1100];
    snprintf(target_url, sizeof target_url, "%s/metrics", rp->base);
    if (o->server_metrics < 0 || (o->parts > 1 && o->part > 0)) {
        snprintf(rp->st.scrape_how, sizeof rp->st.scrape_how, "off%s",
                 o->server_metrics < 0 ? "" : " (another part scrapes)");
        return 0;
    }
    bool want_target = o->server_metrics > 0 && o->n_metrics_urls == 0;
    char why[160] = "";
    if (!want_target) {
        /* On by default when the target serves Prometheus text. */
        struct lt_buf b;
        long status = 0;
        struct lt_err e = {0};
        lt_buf_init(&b, LT_PROM_PAGE_MAX);
        int hr = lt_replay_http_do(&rp->http, "/metrics", NULL, &b, &status, PROBE_TIMEOUT_MS, &e);
        if (hr == 0 && status == 200 && looks_prometheus(s, &b))
            want_target = true;
        else if (hr < 0) /* no answer: say why (a timeout is not a wrong page) */
            snprintf(why, sizeof why, "%.150s", e.msg); /* "GET /metrics: Timeout was reached" */
        else if (status != 200)
            snprintf(why, sizeof why, "it answers GET /metrics with HTTP %ld", status);
        else
            snprintf(why, sizeof why, "no Prometheus text at GET /metrics");
        lt_buf_release(&b);
    }
    if (want_target)
        LT_TRY(ep_add(rp, target_url, true, err));
    /* A fleet's other replicas serve what the first does (one config):
     * each is scraped as a target, so analyze can give each replica its
     * own figures (its prefix-cache hit rate). */
    for (size_t i = 1; want_target && i < rp->n_replicas && i <= LT_SCRAPE_REPLICAS_MAX; i++) {
        char u[1100];
        snprintf(u, sizeof u, "%s/metrics", rp->replicas[i].label);
        LT_TRY(ep_add(rp, u, true, err));
    }
    for (size_t i = 0; i < o->n_metrics_urls; i++)
        LT_TRY(ep_add(rp, o->metrics_urls[i], false, err));
    if (s->n == 0) {
        snprintf(rp->st.scrape_how, sizeof rp->st.scrape_how,
                 "not scraped (%s; --server-metrics URL to name one)", why);
        return 0;
    }
    int len = snprintf(rp->st.scrape_how, sizeof rp->st.scrape_how, "every %g ms from ",
                       (double)s->interval_ns / 1e6);
    for (int i = 0; i < s->n && len < (int)sizeof rp->st.scrape_how; i++)
        len += snprintf(rp->st.scrape_how + len, sizeof rp->st.scrape_how - (size_t)len, "%s%s",
                        i ? ", " : "", s->ep[i].url);
    if (len < (int)sizeof rp->st.scrape_how && o->server_metrics == 0 && s->ep[0].target)
        snprintf(rp->st.scrape_how + len, sizeof rp->st.scrape_how - (size_t)len,
                 " (the target serves them; --no-server-metrics to stop)");
out:
    return rc;
}

static double trace_hit_rate(const struct lt_replay *rp, unsigned *level);

void lt__replay_scrape_before_run(struct lt_replay *rp)
{
    /* Before the origin is set: a big trace's walk must not make the
     * run's first sends late. The trace's hit rate is wanted where the
     * server reports cache hits (a scrape, or llama.cpp's usage). */
    rp->scr.trace_hit = rp->scr.n || rp->word.kind[0] || rp->o.reset_prefix_cache
                            ? trace_hit_rate(rp, &rp->scr.trace_hit_level)
                            : -1;
    rp->scr.waiting = -1; /* nothing scraped in this run yet */
    rp->scr.running = rp->scr.kv = NAN;
    bool done = false;
    if (rp->o.reset_prefix_cache) {
        /* vLLM first, then SGLang: the one that answers 200 says which;
         * llama.cpp's slot erase is lt__replay_server_before_run's. */
        static const char *const paths[] = {"/reset_prefix_cache", "/flush_cache"};
        static const char *const names[] = {"vLLM POST /reset_prefix_cache",
                                            "SGLang POST /flush_cache"};
        struct lt_buf b;
        lt_buf_init(&b, 1 << 16);
        for (size_t i = 0; i < 2 && !done; i++) {
            long status = 0;
            struct lt_err e = {0};
            lt_buf_reset(&b);
            if (lt_replay_http_do(&rp->http, paths[i], "", &b, &status, PROBE_TIMEOUT_MS, &e) ==
                    0 &&
                status >= 200 && status < 300) {
                snprintf(rp->st.reset_how, sizeof rp->st.reset_how, "%s", names[i]);
                rp->st.resets++;
                done = true;
            }
        }
        lt_buf_release(&b);
        if (!done)
            snprintf(rp->st.reset_how, sizeof rp->st.reset_how,
                     "the target has neither POST /reset_prefix_cache, POST /flush_cache nor "
                     "llama.cpp's slot erase");
    }
    lt__replay_server_before_run(rp, done);
}

void lt__replay_scrape_start(struct lt_replay *rp)
{
    struct lt_replay_scraper *s = &rp->scr;
    if (s->n == 0)
        return;
    lt_mono_timer_at(s->tfd, rp->origin, s->interval_ns);
}

void lt__replay_scrape_tick(struct lt_replay *rp)
{
    struct lt_replay_scraper *s = &rp->scr;
    uint64_t x;
    while (read(s->tfd, &x, sizeof x) > 0)
        ;
    for (int i = 0; i < s->n; i++) {
        struct lt_replay_scrape_ep *ep = &s->ep[i];
        if (ep->busy) /* a slow endpoint: its own timeout ends it */
            continue;
        lt_buf_reset(&ep->page);
        ep->over = false;
        ep->sent = lt_mono_now();
        ep->timeout_ms = scrape_timeout_ms(s);
        if (curl_multi_add_handle(rp->multi, ep->easy) == CURLM_OK) {
            ep->busy = true;
            rp->kick = true;
        }
    }
}

/* Whether the raw series of family f are kept (--server-metrics-keep). */
static bool keep_family(struct lt_replay_scraper *s, size_t f)
{
    if (s->fam_keep[f] == 0)
        s->fam_keep[f] = regexec(&s->keep, s->pg.families[f].name, 0, NULL, 0) == 0 ? 1 : 2;
    return s->fam_keep[f] == 1;
}

static void put_escaped(struct lt_buf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            lt_buf_printf(b, "\\%c", *v);
        else if (*v == '\n')
            lt_buf_puts(b, "\\n");
        else
            lt_buf_append(b, v, 1);
    }
}

/* The kept raw series of the parsed page into ep->raw. */
static int collect_raw(struct lt_replay_scraper *s, struct lt_replay_scrape_ep *ep)
{
    ep->nraw = 0;
    lt_buf_reset(&ep->rawnames);
    if (!s->has_keep)
        return 0;
    if (s->fam_cap < s->pg.nfamilies) {
        free(s->fam_keep);
        s->fam_keep = malloc(s->pg.nfamilies);
        if (!s->fam_keep) {
            s->fam_cap = 0;
            return LT_ENOMEM;
        }
        s->fam_cap = s->pg.nfamilies;
    }
    memset(s->fam_keep, 0, s->pg.nfamilies);
    for (size_t i = 0; i < s->pg.nsamples; i++) {
        const struct lt_prom_sample *x = &s->pg.samples[i];
        if (!isfinite(x->value) || !keep_family(s, x->family))
            continue;
        if (ep->nraw == ep->capraw) {
            uint32_t nc = ep->capraw ? ep->capraw * 2 : 64;
            struct lt_scrape_val *r = realloc(ep->raw, nc * sizeof *r);
            if (!r)
                return LT_ENOMEM;
            ep->raw = r;
            ep->capraw = nc;
        }
        /* the offset now, the pointer once the names stop moving */
        ep->raw[ep->nraw].name = (const char *)(uintptr_t)ep->rawnames.len;
        ep->raw[ep->nraw].v = x->value;
        lt_buf_puts(&ep->rawnames, x->name);
        if (x->nlabels) {
            lt_buf_puts(&ep->rawnames, "{");
            for (size_t j = 0; j < x->nlabels; j++) {
                lt_buf_printf(&ep->rawnames, "%s%s=\"", j ? "," : "", x->labels[j].name);
                put_escaped(&ep->rawnames, x->labels[j].value);
                lt_buf_puts(&ep->rawnames, "\"");
            }
            lt_buf_puts(&ep->rawnames, "}");
        }
        if (lt_buf_append(&ep->rawnames, "", 1) < 0)
            return LT_ELIMIT;
        ep->nraw++;
    }
    for (uint32_t i = 0; i < ep->nraw; i++)
        ep->raw[i].name = ep->rawnames.p + (uintptr_t)ep->raw[i].name;
    return 0;
}

/* Values outside their range are no figure of the server's: they stay out
 * of the sample's values, and go under its key "bad" (name: value as the
 * page had it; a value that is not finite as null) so the file says what
 * came, and the run's stats count them. */
static void flag_bad(struct lt_replay *rp, const struct lt_prom_values *pv, struct lt_scrape *out)
{
    struct lt_replay_scraper *s = &rp->scr;
    uint32_t n = 0;
    for (int k = 0; k < LT_PM_SCALARS; k++)
        n += (pv->out_of_range >> k) & 1u;
    if (!n)
        return;
    lt_buf_reset(&s->bad);
    struct lt_mp m = {.out = &s->bad};
    int rc = lt_mp_cstr(&m, "bad");
    rc = rc < 0 ? rc : lt_mp_map(&m, n);
    for (int k = 0; k < LT_PM_SCALARS && rc == 0; k++) {
        if (!((pv->out_of_range >> k) & 1u))
            continue;
        const char *name = lt_prom_map_canon_name((enum lt_prom_canon)k);
        rc = lt_mp_cstr(&m, name);
        if (rc == 0)
            rc = isfinite(pv->bad[k]) ? lt_mp_double(&m, pv->bad[k]) : lt_mp_nil(&m);
        if (!rp->st.scrape_bad && !rp->st.scrape_bad_first[0])
            snprintf(rp->st.scrape_bad_first, sizeof rp->st.scrape_bad_first, "%s %.6g from %s",
                     name, pv->bad[k], out->ep);
        rp->st.scrape_bad++;
    }
    if (rc < 0)
        return; /* the count stands; the sample goes without its "bad" */
    out->extra = (struct lt_extra){.data = (const uint8_t *)s->bad.p, .len = s->bad.len, .n = 1};
}

/* The sample of ep's page (or its error) into *out. */
static void make_sample(struct lt_replay *rp, struct lt_replay_scrape_ep *ep, CURLcode c,
                        struct lt_scrape *out)
{
    struct lt_replay_scraper *s = &rp->scr;
    long status = 0;
    char *ctype = NULL;
    curl_easy_getinfo(ep->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(ep->easy, CURLINFO_CONTENT_TYPE, &ctype);
    out->ep = ep->url;
    out->err = ep->err;
    ep->err[0] = '\0';
    if (ep->over)
        snprintf(ep->err, sizeof ep->err, "page larger than %zu bytes", ep->page.max);
    else if (c == CURLE_OPERATION_TIMEDOUT)
        snprintf(ep->err, sizeof ep->err, "timed out after %ld ms", ep->timeout_ms);
    else if (c != CURLE_OK)
        snprintf(ep->err, sizeof ep->err, "%s", curl_easy_strerror(c));
    else if (status != 200)
        snprintf(ep->err, sizeof ep->err, "HTTP %ld", status);
    else if (ctype && strncasecmp(ctype, "text/html", 9) == 0)
        snprintf(ep->err, sizeof ep->err, "HTML, not Prometheus text (Content-Type %.64s)", ctype);
    if (ep->err[0])
        return;
    struct lt_err e = {0};
    if (lt_prom_parse(&s->pg, ep->page.p ? ep->page.p : "", ep->page.len, ep->url, &e) < 0) {
        snprintf(ep->err, sizeof ep->err, "%s", e.msg);
        return;
    }
    lt_prom_map_apply(s->map, &s->pg, &ep->vals);
    const struct lt_prom_values *pv = &ep->vals;
    if (ep->target) /* for the progress callback: a queue that grows is over-saturation */
        s->waiting = lt_prom_map_has(pv, LT_PM_WAITING) && isfinite(pv->v[LT_PM_WAITING])
                         ? pv->v[LT_PM_WAITING]
                         : -1;
    if (ep->target) {
        s->running = lt_prom_map_has(pv, LT_PM_RUNNING) && isfinite(pv->v[LT_PM_RUNNING])
                         ? pv->v[LT_PM_RUNNING]
                         : NAN;
        s->kv = lt_prom_map_has(pv, LT_PM_KV_USAGE) && isfinite(pv->v[LT_PM_KV_USAGE])
                    ? pv->v[LT_PM_KV_USAGE]
                    : NAN;
    }
    uint32_t nv = 0, nh = 0;
    for (int k = 0; k < LT_PM_SCALARS; k++)
        if (lt_prom_map_has(pv, (enum lt_prom_canon)k) && isfinite(pv->v[k]))
            ep->v[nv++] =
                (struct lt_scrape_val){lt_prom_map_canon_name((enum lt_prom_canon)k), pv->v[k]};
    for (int k = LT_PM_SCALARS; k < LT_PM_COUNT; k++) {
        const struct lt_prom_hist *h = &pv->hist[k - LT_PM_SCALARS];
        if (!lt_prom_map_has(pv, (enum lt_prom_canon)k) || !isfinite(h->sum) || !isfinite(h->count))
            continue;
        uint32_t n = 0;
        while (n < h->nbuckets && isfinite(h->le[n]) && isfinite(h->cum[n]))
            n++;
        ep->h[nh++] = (struct lt_scrape_hist){
            .name = lt_prom_map_canon_name((enum lt_prom_canon)k),
            .sum = h->sum,
            .count = h->count,
            .n = n,
            .le = h->le,
            .cum = h->cum,
        };
    }
    out->err = NULL;
    out->server = pv->server != LT_PROM_SERVER_UNKNOWN ? lt_prom_map_server_name(pv->server) : NULL;
    out->v = nv ? ep->v : NULL;
    out->nv = nv;
    out->h = nh ? ep->h : NULL;
    out->nh = nh;
    if (collect_raw(s, ep) < 0)
        ep->nraw = 0; /* the canonical values are still worth having */
    out->raw = ep->nraw ? ep->raw : NULL;
    out->nraw = ep->nraw;
    flag_bad(rp, pv, out);
}

static int record(struct lt_replay *rp, struct lt_replay_scrape_ep *ep, CURLcode c,
                  struct lt_err *err)
{
    lt_mono now = lt_mono_now();
    struct lt_scrape sc = {
        .run = lt__replay_rec_run(rp),
        .t = lt__replay_since_origin_us(rp, ep->sent),
        .dur = lt_mono_diff_us(now, ep->sent),
    };
    make_sample(rp, ep, c, &sc);
    rp->st.scrapes++;
    if (sc.err)
        rp->st.scrape_errors++;
    return lt_writer_put_scrape(rp->w, &sc, err);
}

int lt__replay_scrape_done(struct lt_replay *rp, CURL *e, CURLcode c, struct lt_err *err)
{
    struct lt_replay_scraper *s = &rp->scr;
    for (int i = 0; i < s->n; i++) {
        struct lt_replay_scrape_ep *ep = &s->ep[i];
        if (ep->easy != e)
            continue;
        curl_multi_remove_handle(rp->multi, e);
        ep->busy = false;
        int rc = record(rp, ep, c, err);
        return rc < 0 ? rc : 1;
    }
    return 0;
}

int lt__replay_scrape_stop(struct lt_replay *rp, struct lt_err *err)
{
    struct lt_replay_scraper *s = &rp->scr;
    int rc = 0;
    if (s->n == 0)
        return 0;
    lt_mono_timer_off(s->tfd);
    for (int i = 0; i < s->n; i++) {
        struct lt_replay_scrape_ep *ep = &s->ep[i];
        if (ep->busy) {
            curl_multi_remove_handle(rp->multi, ep->easy);
            ep->busy = false;
        }
        if (rp->stop)
            continue;
        /* The last sample: after the run's last request, so blocking. */
        lt_buf_reset(&ep->page);
        ep->over = false;
        ep->sent = lt_mono_now();
        ep->timeout_ms = FINAL_TIMEOUT_MS;
        curl_easy_setopt(ep->easy, CURLOPT_TIMEOUT_MS, FINAL_TIMEOUT_MS);
        CURLcode c = curl_easy_perform(ep->easy);
        curl_easy_setopt(ep->easy, CURLOPT_TIMEOUT_MS, scrape_timeout_ms(s));
        LT_TRY(record(rp, ep, c, err));
    }
out:
    return rc;
}

/* The blocks sent so far, as 32-bit fingerprints in an open-addressed
 * set that grows with the distinct blocks (0 = empty), at most 3/4 full:
 * 10 M distinct blocks take 64 MB (96 MB while it grows). Two blocks
 * share a fingerprint with odds of n / 2^32 (0.2 % at 10 M blocks), which
 * counts one hit too many for a figure that is only compared with the
 * server's at a margin of 10 points (analyze). */
/* The prefix-cache hit rate the run's trace allows: each request's
 * leading blocks already sent by an earlier request of the run (an
 * unbounded cache), in tokens, over all prompt tokens. What a server
 * reports far above it came from an earlier run (a warm cache). Returns
 * -1 when the trace has no blocks; *level > 0 when it is estimated from
 * 1 in 2^level prefix chains (traces/trace_hits.h). A streamed plan
 * (trace time: every record, in order) holds no jobs yet: the trace is
 * read once more. Its memory is the set of distinct blocks, bounded,
 * freed before the run. */
struct hit_walk {
    struct lt_hits h;
    struct lt_plan_jobs_sampler *sp; /* a streamed plan's sample, or NULL */
    bool counting, blocks;
    uint32_t bt;
    size_t limit;                   /* records read past this are not in the run */
    struct lt_plan_jobs_dealer *dl; /* parts: the deal, and this part */
    uint32_t part;
};

static int hit_rec(void *ud, const struct lt_plan_rec_key *k)
{
    struct hit_walk *w = ud;
    if (k->idx >= w->limit)
        return 0;
    if (w->counting)
        return lt_plan_jobs_sampler_count(w->sp, k, NULL);
    bool in = true;
    if (w->dl) { /* every request dealt, in order: another part's is not sent here */
        int64_t part =
            lt_plan_jobs_dealer_next(w->dl, k->has_session, k->session, k->in, k->out, NULL);
        if (part < 0)
            return -1;
        in = part == w->part;
    }
    bool kept = true;
    if (w->sp && lt_plan_jobs_sampler_keep(w->sp, k, &kept, NULL) < 0)
        return -1;
    if (!in || !kept)
        return 0;
    w->blocks |= k->n_blocks > 0;
    return lt_hits_add(&w->h, k->blocks, k->n_blocks, k->in, w->bt);
}

static double trace_hit_rate(const struct lt_replay *rp, unsigned *level)
{
    const struct lt_plan *pl = &rp->plan;
    struct hit_walk w = {.bt = rp->build.block_tokens, .limit = SIZE_MAX};
    lt_hits_init(&w.h, LT_HITS_MAX);
    int rc = 0;
    if (pl->streamed) {
        /* every record in order, but those the sample leaves out: the
         * sample's rule read again (its sessions' sizes first, for
         * --requests); an open loop's whole laps first, then its last */
        struct lt_plan_jobs_sampler sp;
        const struct lt_plan_sched_tt *tt = &pl->o.tt;
        bool loop = pl->o.mode != LT_PLAN_TRACE;
        size_t n = pl->jobs->n, laps = loop ? pl->laps_pos / n : 0;
        for (size_t l = 0; rc >= 0 && l < laps; l++)
            rc = lt_plan_jobs_each(pl->jobs, hit_rec, &w, NULL);
        if (loop && !pl->lap_sampled)
            w.limit = pl->npos - pl->laps_pos;
        bool sampled = loop ? pl->lap_sampled : pl->sampled;
        if (sampled) {
            if (loop)
                lt_plan_jobs_sampler_init(&sp, 0, 0, pl->o.requests % n);
            else
                lt_plan_jobs_sampler_init(&sp, tt->win_start_us, tt->win_end_us, pl->o.requests);
            w.sp = &sp;
            w.counting = pl->o.requests > 0;
            if (w.counting && rc >= 0)
                rc = lt_plan_jobs_each(pl->jobs, hit_rec, &w, NULL);
            w.counting = false;
        }
        struct lt_plan_jobs_dealer dl;
        if (!loop && pl->o.parts > 1 && rc >= 0) {
            rc = lt_plan_jobs_dealer_init(&dl, pl->o.parts, NULL);
            w.dl = rc >= 0 ? &dl : NULL;
            w.part = pl->o.part;
        }
        if (rc >= 0 && w.limit)
            rc = lt_plan_jobs_each(pl->jobs, hit_rec, &w, NULL);
        if (w.dl)
            lt_plan_jobs_dealer_release(&dl);
        if (sampled)
            lt_plan_jobs_sampler_release(&sp);
    } else {
        /* the run's seqs (a loop's laps repeat the trace), but those cut */
        for (size_t k = 0; rc >= 0 && k < pl->total; k++) {
            if (pl->state[k] == LT_PLAN_DONE)
                continue;
            const struct lt_plan_job *j = &rp->trace.v[lt_plan_job_of(pl, k)];
            w.blocks |= j->n_blocks > 0;
            rc = lt_hits_add(&w.h, j->blocks, j->n_blocks, j->in, w.bt);
        }
    }
    double r = rc >= 0 && w.blocks ? lt_hits_rate(&w.h, level) : -1;
    lt_hits_release(&w.h);
    return r;
}

int lt__replay_scrape_run_extra(struct lt_replay *rp, struct lt_extra *extra, struct lt_err *err)
{
    struct lt_replay_scraper *s = &rp->scr;
    double r = s->trace_hit;
    lt_buf_reset(&s->extra);
    struct lt_mp m = {.out = &s->extra};
    uint32_t n = extra->n;
    if (extra->len)
        lt_mp_raw(&m, extra->data, extra->len);
    if (r >= 0) {
        lt_mp_cstr(&m, "trace_prefix_hit_ppm");
        lt_mp_uint(&m, (uint64_t)llround(r * 1e6));
        n++;
        if (s->trace_hit_level) { /* an estimate from 1 in 2^level prefix chains */
            lt_mp_cstr(&m, "trace_prefix_hit_sampled_level");
            lt_mp_uint(&m, s->trace_hit_level);
            n++;
        }
    }
    lt__replay_server_extra(rp, &m, &n);
    if (m.rc < 0)
        return lt_errset(err, LT_ENOMEM, "out of memory");
    if (n == extra->n)
        return 0;
    extra->data = (const uint8_t *)s->extra.p;
    extra->len = s->extra.len;
    extra->n = n;
    return 0;
}
