/*
 * Import of gateway request logs (capture_log.h): each line becomes a
 * struct lt_capture_call, exactly as the proxy fills one, so both paths
 * make the same records.
 */
#include "capture/capture_log.h"
#include "capture/capture_call.h"
#include "capture/capture_proxy.h"
#include "capture/capture_session.h"
#include "base/lt_lines.h"
#include "base/lt_time.h"
#include "traces/trace_writer.h"
#include "wire/wire_sse.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct item {
    int64_t start; /* us since the epoch (or since the first line, without times) */
    uint64_t line;
    struct lt_capture_call *call;
    char *sess; /* the session header's value, until sessions are assigned */
};

static json_t *first_of(json_t *o, const char *const *keys)
{
    for (; *keys; keys++) {
        json_t *v = json_object_get(o, *keys);
        if (v && !json_is_null(v))
            return v;
    }
    return NULL;
}

/* The latest time or longest duration a log line may give: the year 9999
 * (253402300800 s since the epoch), in µs. Checked before any arithmetic,
 * so no sum or difference of two of them can overflow. */
#define MAX_TIME_US 253402300800000000.0

/* A time value to us since the epoch; false if it is none. A number past
 * MAX_TIME_US is out of range: false, with bad set to it. 0 is none (a
 * field some gateways leave at zero); a negative number or a string that
 * is no date is not a time (bad_time says which). */
static bool time_us(const json_t *v, int64_t *us, double *bad)
{
    if (json_is_number(v)) {
        double d = json_number_value(v);
        if (!(d > 0) || !isfinite(d))
            return false;
        double raw = d;
        if (d < 1e11)
            d *= 1e6; /* seconds */
        else if (d < 1e14)
            d *= 1e3; /* milliseconds */
        if (!(d <= MAX_TIME_US)) {
            *bad = raw;
            return false;
        }
        *us = (int64_t)llround(d);
        return true;
    }
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    /* An explicit UTC offset of zero is the same as Z. */
    if (n > 6 && (!strcmp(s + n - 6, "+00:00") || !strcmp(s + n - 6, "-00:00")))
        n -= 6;
    return lt_parse_datetime_us(s, n, us) == 0;
}

static bool duration_us(json_t *o, const char *ms_key, const char *s_key, int64_t *us)
{
    json_t *v = json_object_get(o, ms_key);
    double scale = 1e3;
    if (!json_is_number(v)) {
        v = json_object_get(o, s_key);
        scale = 1e6;
    }
    if (!json_is_number(v) || !(json_number_value(v) >= 0) ||
        !(json_number_value(v) * scale <= MAX_TIME_US))
        return false;
    *us = (int64_t)llround(json_number_value(v) * scale);
    return true;
}

/* An object given as itself or as a string holding its JSON (ref'd). */
static json_t *as_object(json_t *v)
{
    if (json_is_object(v))
        return json_incref(v);
    if (json_is_string(v))
        return json_loadb(json_string_value(v), json_string_length(v), 0, NULL);
    return NULL;
}

/* A time field that is there but is no time: the line is refused with
 * the key and the value, rather than read as having no such time. */
static bool bad_time(json_t *line, const char *const *keys, char *why, size_t whysz)
{
    for (; *keys; keys++) {
        json_t *v = json_object_get(line, *keys);
        if (!v || json_is_null(v))
            continue;
        int64_t us;
        double bad = 0;
        if (time_us(v, &us, &bad) || bad != 0)
            return false; /* a time, or one out of range (said apart) */
        if (json_is_number(v) && json_number_value(v) == 0)
            return false;
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        snprintf(why, whysz,
                 "%s %.64s is not a time (epoch seconds, milliseconds or microseconds after "
                 "1970, or an RFC 3339 date)",
                 *keys, text ? text : "?");
        free(text);
        return true;
    }
    return false;
}

static int log_event(void *ud, const char *data, size_t len)
{
    lt_capture_call_chunk(ud, data, len);
    return 0;
}

/* The SSE text of a logged stream: every event, as the proxy reads them
 * (the same framer; the text is in memory already, so its length bounds
 * every line and event). */
static void read_sse_text(struct lt_capture_call *c, const char *s, size_t n)
{
    struct lt_wire_sse sse;
    lt_wire_sse_init(&sse, n + 1, n + 1);
    if (lt_wire_sse_feed(&sse, s, n, log_event, c) == 0)
        (void)lt_wire_sse_finish(&sse, log_event, c);
    lt_wire_sse_release(&sse);
}

static const char *header_value(json_t *line, const char *name)
{
    static const char *const hk[] = {"headers", "request_headers", NULL};
    json_t *h = first_of(line, hk);
    const char *k;
    json_t *v;
    json_object_foreach(h, k, v) if (!strcasecmp(k, name) &&
                                     json_is_string(v)) return json_string_value(v);
    return NULL;
}

static int read_line(json_t *line, const struct lt_capture_call_opts *co, struct item *it,
                     char *why, size_t whysz)
{
    static const char *const req_k[] = {"request", "request_body", "body", "req", NULL};
    static const char *const resp_k[] = {"response", "response_body", "resp", "output", NULL};
    static const char *const path_k[] = {"url", "path", "endpoint", NULL};
    static const char *const start_k[] = {
        "start_time", "startTime", "request_time", "timestamp", "time", "created_at", NULL};
    static const char *const end_k[] = {"end_time", "endTime", "response_time", NULL};
    static const char *const ft_k[] = {"completion_start_time", "completionStartTime",
                                       "first_token_time", NULL};
    static const char *const status_k[] = {"status_code", "status", NULL};
    int rc = 0;
    json_t *req = NULL, *resp = NULL;
    if (!json_is_object(line)) {
        snprintf(why, whysz, "not a JSON object");
        return LT_EFORMAT;
    }
    req = as_object(first_of(line, req_k));
    if (!req) {
        snprintf(why, whysz, "no request body (request, request_body, body or req)");
        rc = LT_EFORMAT;
        goto out;
    }
    enum lt_capture_api api = LT_CAPTURE_API_NONE;
    json_t *path = first_of(line, path_k);
    if (json_is_string(path))
        api = lt_capture_api_of("POST", json_string_value(path));
    if (api == LT_CAPTURE_API_NONE && json_object_get(req, "messages"))
        api = LT_CAPTURE_API_CHAT;
    if (api == LT_CAPTURE_API_NONE && json_object_get(req, "prompt"))
        api = LT_CAPTURE_API_COMPLETIONS;
    if (api == LT_CAPTURE_API_NONE && json_object_get(req, "input"))
        api = LT_CAPTURE_API_RESPONSES;
    if (api == LT_CAPTURE_API_NONE) {
        snprintf(why, whysz, "not a chat or completions request");
        rc = LT_EFORMAT;
        goto out;
    }
    struct lt_capture_call *c = it->call = lt_capture_call_new(api, co);
    if (!c) {
        rc = LT_ENOMEM;
        goto out;
    }
    LT_TRY(lt_capture_call_request_json(c, req));
    int status = 0;
    json_t *st = first_of(line, status_k);
    if (json_is_integer(st))
        status = (int)json_integer_value(st);
    json_t *rv = first_of(line, resp_k);
    if (json_is_object(rv) && json_object_get(rv, "status_code") && json_object_get(rv, "body")) {
        /* The OpenAI batch output form. */
        if (!status && json_is_integer(json_object_get(rv, "status_code")))
            status = (int)json_integer_value(json_object_get(rv, "status_code"));
        rv = json_object_get(rv, "body");
    }
    if (json_is_string(rv) && json_string_length(rv) >= 5 &&
        !strncmp(json_string_value(rv), "data:", 5)) {
        c->stream = true;
        read_sse_text(c, json_string_value(rv), json_string_length(rv));
    } else if ((resp = as_object(rv))) {
        lt_capture_call_body_json(c, resp); /* an error body sets c->err */
    }
    if (!c->usage)
        lt_capture_call_usage(c, json_object_get(line, "usage"));
    if (json_object_get(line, "error") && !json_is_null(json_object_get(line, "error")))
        c->err = "upstream_error";
    if (!status)
        status = c->err || !rv ? 0 : 200;
    c->status = status;
    int64_t start = 0, end = 0, ft = 0, d;
    double bad = 0;
    bool has_start = time_us(first_of(line, start_k), &start, &bad);
    bool has_end = time_us(first_of(line, end_k), &end, &bad);
    bool has_ft = time_us(first_of(line, ft_k), &ft, &bad);
    if (bad != 0) {
        snprintf(why, whysz, "time %g is out of range (after the year 9999)", bad);
        rc = LT_EFORMAT;
        goto out;
    }
    if (bad_time(line, start_k, why, whysz) || bad_time(line, end_k, why, whysz) ||
        bad_time(line, ft_k, why, whysz)) {
        rc = LT_EFORMAT;
        goto out;
    }
    if (!has_start && has_end && duration_us(line, "latency_ms", "latency", &d)) {
        start = end - d;
        has_start = true;
    }
    if (!has_start) {
        snprintf(why, whysz, "no start time (start_time, timestamp, ...)");
        rc = LT_EFORMAT;
        goto out;
    }
    if (!has_end && (duration_us(line, "latency_ms", "latency", &d) ||
                     duration_us(line, "duration_ms", "duration", &d))) {
        end = start + d;
        has_end = true;
    }
    if (!has_ft && duration_us(line, "ttft_ms", "ttft", &d)) {
        ft = start + d;
        has_ft = true;
    }
    it->start = start;
    if (has_end && end >= start)
        c->e2e = end - start;
    if (has_ft && ft >= start)
        c->ttft = ft - start;
    /* 499, nginx's "client closed request" (which gateways log): the client
     * left before its answer ended, at the end time, having had what the
     * logged response holds. */
    if (c->status == 499) {
        c->err = "client_gone";
        lt_capture_call_client_left(c, c->e2e);
    }
out:
    json_decref(req);
    json_decref(resp);
    return rc;
}

static int by_start(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

int lt_capture_from_log(const struct lt_capture_log_opts *o, struct lt_capture_log_stats *st,
                        struct lt_err *err)
{
    int rc = 0;
    struct lt_capture_log_stats s = {0};
    struct item *items = NULL;
    size_t n = 0, cap = 0, max = o->max_records ? o->max_records : 4000000;
    struct lt_lines lines;
    bool lines_on = false;
    struct lt_writer *w = NULL;
    struct lt_capture_sessions sess;
    bool sess_on = false;
    struct lt_buf meta;
    lt_buf_init(&meta, 1 << 16);
    struct lt_capture_call_opts co = {.block_tokens = o->block_tokens ? o->block_tokens : 512,
                                      .keep_content = o->keep_content};
    FILE *f = NULL;
    LT_TRY(lt_capture_new_key(&co.k0, &co.k1, err));
    f = strcmp(o->input, "-") ? fopen(o->input, "rb") : stdin;
    if (!f) {
        rc = lt_errset(err, LT_EIO, "%s: cannot open", o->input);
        goto out;
    }
    lt_lines_init_file(&lines, f, o->input, 0);
    lines_on = true;
    int r;
    while ((r = lt_lines_next(&lines, NULL, err)) == 1) {
        s.lines++;
        if (lines.line.len == 0)
            continue;
        char why[200] = "";
        json_error_t je;
        json_t *j = json_loadb(lines.line.p, lines.line.len, 0, &je);
        if (!j)
            snprintf(why, sizeof why, "not JSON (%.150s)", je.text);
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 1024;
            struct item *ni = realloc(items, nc * sizeof *ni);
            if (!ni) {
                json_decref(j);
                rc = lt_errset(err, LT_ENOMEM, "out of memory");
                goto out;
            }
            items = ni;
            cap = nc;
        }
        struct item *it = &items[n];
        memset(it, 0, sizeof *it);
        it->line = lines.lineno;
        int lrc = j ? read_line(j, &co, it, why, sizeof why) : LT_EFORMAT;
        if (j && o->session_header && lrc == 0) {
            const char *hv = header_value(j, o->session_header);
            if (hv && !(it->sess = strdup(hv)))
                lrc = LT_ENOMEM;
        }
        json_decref(j);
        if (lrc == LT_ENOMEM) {
            lt_capture_call_free(it->call);
            free(it->sess);
            rc = lt_errset(err, LT_ENOMEM, "out of memory");
            goto out;
        }
        if (lrc < 0) {
            lt_capture_call_free(it->call);
            if (!o->skip_bad) {
                rc = lt_errset(err, LT_EFORMAT, "%s:%llu: %s", o->input,
                               (unsigned long long)lines.lineno, why);
                goto out;
            }
            s.skipped++;
            if (o->on_skip) {
                char msg[640];
                snprintf(msg, sizeof msg, "%.400s:%llu: %s", o->input,
                         (unsigned long long)lines.lineno, why);
                o->on_skip(o->ud, msg);
            }
            continue;
        }
        if (++n > max) {
            rc = lt_errset(err, LT_ELIMIT, "%s: more than %zu requests; split the log", o->input,
                           max);
            goto out;
        }
    }
    if (r < 0) {
        rc = r;
        goto out;
    }
    qsort(items, n, sizeof *items, by_start);
    char base[256];
    const char *slash = strrchr(o->input, '/');
    snprintf(base, sizeof base, "%s", slash ? slash + 1 : o->input);
    const char *keys[] = {"log", "tokens", "content", "sessions"};
    const char *vals[] = {base, "estimated: words at whitespace, ceil(bytes/4) tokens each",
                          o->keep_content ? "kept" : "not kept",
                          o->session_header ? "header" : "inferred"};
    LT_TRY(lt_meta_pack(&meta, keys, vals, 4));
    struct lt_header h = {.kind = LT_KIND_TRACE,
                          .source = "capture:log",
                          .block_tokens = co.block_tokens,
                          .meta = (const uint8_t *)meta.p,
                          .meta_len = meta.len};
    w = lt_writer_open(o->output, &h, NULL, err);
    if (!w) {
        rc = LT_EIO;
        goto out;
    }
    lt_capture_sessions_init(&sess, co.k0, co.k1);
    sess_on = true;
    for (size_t i = 0; i < n; i++) {
        struct lt_capture_call *c = items[i].call;
        c->t = items[i].start - items[0].start;
        const char *hv = items[i].sess;
        LT_TRY(lt_capture_sessions_assign(&sess, c, hv, hv ? strlen(hv) : 0));
        if (c->has_session)
            lt_capture_sessions_end(&sess, c->session, c->t + (c->e2e > 0 ? c->e2e : 0));
        struct lt_record rec;
        LT_TRY(lt_capture_call_record(c, &rec));
        LT_TRY(lt_writer_put_record(w, &rec, err));
        s.records++;
    }
out:
    for (size_t i = 0; i < n; i++) {
        lt_capture_call_free(items[i].call);
        free(items[i].sess);
    }
    free(items);
    if (w) {
        struct lt_err cerr = {0};
        int crc = lt_writer_close(w, &cerr);
        if (rc == 0 && crc < 0) {
            rc = crc;
            if (err)
                *err = cerr;
        }
    }
    if (sess_on)
        lt_capture_sessions_release(&sess);
    if (lines_on) {
        lt_lines_release(&lines);
        if (f != stdin)
            fclose(f);
    }
    lt_buf_release(&meta);
    if (st)
        *st = s;
    return rc;
}
