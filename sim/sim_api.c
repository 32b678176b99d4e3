/*
 * Request parsing (jansson) and response rendering for the sim's OpenAI
 * surface and its Responses and Messages APIs; see sim_api.h. The API
 * changes only the envelope: the same tokens, timing and counts. Rendering writes straight into a
 * bounded buffer with printf-style appends: a streamed chunk is rendered once per token per stream,
 * so it must be cheap, and the generated words never need escaping (the model name and tool name
 * are escaped once per request).
 */
#include "sim/sim_api.h"

#include "base/lt_image.h"
#include "base/lt_video.h"
#include "base/lt_rng.h"

#include <curl/curl.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lt_sim_dialect_parse(struct lt_sim_dialect *d, const char *spec, struct lt_err *err)
{
    *d = (struct lt_sim_dialect){.role_chunk = true};
    if (!spec || !*spec)
        return 0;
    const char *p = spec;
    while (*p) {
        size_t n = strcspn(p, ",");
        char w[32];
        if (n == 0 || n >= sizeof w)
            return lt_errset(err, LT_EFORMAT, "dialect '%s': bad item", spec);
        memcpy(w, p, n);
        w[n] = '\0';
        if (!strcmp(w, "vllm"))
            *d = (struct lt_sim_dialect){.role_chunk = true};
        else if (!strcmp(w, "role-chunk"))
            d->role_chunk = true;
        else if (!strcmp(w, "no-role-chunk"))
            d->role_chunk = false;
        else if (!strcmp(w, "usage-in-last"))
            d->usage_in_last = true;
        else if (!strcmp(w, "usage-separate"))
            d->usage_in_last = false;
        else if (!strcmp(w, "reasoning"))
            d->reasoning_key = true;
        else if (!strcmp(w, "reasoning_content"))
            d->reasoning_key = false;
        else if (!strcmp(w, "close"))
            d->close = true;
        else if (!strcmp(w, "keep-alive"))
            d->close = false;
        else if (!strcmp(w, "http10"))
            d->http10 = true;
        else if (!strcmp(w, "http11"))
            d->http10 = false;
        else if (!strcmp(w, "no-tokenize"))
            d->no_tokenize = true;
        else if (!strcmp(w, "tokenize"))
            d->no_tokenize = false;
        else if (!strcmp(w, "messages-usage-total"))
            d->messages_usage_total = true;
        else if (!strcmp(w, "messages-usage-split"))
            d->messages_usage_total = false;
        else if (!strcmp(w, "llamacpp"))
            d->llamacpp = true;
        else if (!strcmp(w, "slot-erase"))
            d->llamacpp = d->slot_erase = true;
        else if (!strcmp(w, "text-only"))
            d->text_only = true;
        else if (!strcmp(w, "images"))
            d->text_only = false;
        else
            return lt_errset(err, LT_EFORMAT,
                             "unknown dialect item '%s' (vllm, role-chunk, no-role-chunk, "
                             "usage-separate, usage-in-last, reasoning, reasoning_content, "
                             "close, keep-alive, http10, http11, no-tokenize, tokenize, "
                             "messages-usage-total, messages-usage-split, llamacpp, "
                             "slot-erase, text-only, images)",
                             w);
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

__attribute__((format(printf, 3, 4))) static int bad(char *msg, size_t msgsz, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, msgsz, fmt, ap);
    va_end(ap);
    return 400;
}

static char *json_literal(const char *s, size_t len)
{
    json_t *j = json_stringn(s, len);
    if (!j)
        return NULL;
    char *out = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(j);
    return out;
}

static void toks_json(struct lt_sim_toks *t, const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s) {
        lt_sim_toks_text(t, s, strlen(s));
        free(s);
    } else {
        t->oom = 1;
    }
}

/* The images of one prompt as they are counted (docs/sim.md "Images"):
 * the profile's rule, what was found, and the first image that could not
 * be read (status 400 and its message). */
struct sim_imgs {
    const struct lt_sim_profile *p;
    uint32_t n, tokens;
    uint32_t audio, audio_tokens;
    uint32_t links; /* of n: loopback links fetched */
    uint32_t videos, video_tokens;
    uint64_t bytes;
    int status;
    char *msg;
    size_t msgsz;
};

/* Tokens of a w x h image by the profile's rule: image_tokens each, or
 * image_base_tokens plus image_tokens per image_tile x image_tile tile. */
uint32_t lt_sim_image_tokens(const struct lt_sim_profile *p, uint32_t w, uint32_t h)
{
    if (!p->image_tile)
        return p->image_tokens;
    uint64_t tiles = (uint64_t)((w + p->image_tile - 1) / p->image_tile) *
                     ((h + p->image_tile - 1) / p->image_tile);
    uint64_t t = p->image_base_tokens + tiles * p->image_tokens;
    return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* A loopback link's bytes are at most this (a server's own limit on a
 * fetched image; replay's images are at most 20 MiB). */
#define LINK_MAX_BYTES ((size_t)64 << 20)
#define LINK_TIMEOUT_MS 10000L

/* Whether url (n bytes) is an http link to this machine: host 127.0.0.1,
 * localhost or [::1], no user part. Only those are fetched: the sim never
 * reaches past loopback. */
static bool link_is_loopback(const char *url, size_t n)
{
    if (n < 7 || strncmp(url, "http://", 7))
        return false;
    const char *h = url + 7, *end = url + n;
    size_t a = 0;
    while (h + a < end && h[a] != '/' && h[a] != '?' && h[a] != '#')
        a++;
    if (memchr(h, '@', a))
        return false;
    static const char *const hosts[] = {"127.0.0.1", "localhost", "[::1]"};
    for (size_t i = 0; i < sizeof hosts / sizeof *hosts; i++) {
        size_t k = strlen(hosts[i]);
        if (a >= k && !strncmp(h, hosts[i], k) && (a == k || h[k] == ':'))
            return true;
    }
    return false;
}

static size_t link_write(char *p, size_t sz, size_t nm, void *ud)
{
    struct lt_buf *b = ud;
    size_t n = sz * nm;
    if (b->len + n > LINK_MAX_BYTES || lt_buf_append(b, p, n) < 0)
        return 0; /* curl stops: CURLE_WRITE_ERROR */
    return n;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* GET a loopback link into out. Returns 0, or -1 with why filled. */
static int link_fetch(const char *url, size_t n, struct lt_buf *out, char *why, size_t whysz)
{
    pthread_once(&curl_once, curl_init_once);
    char *u = strndup(url, n);
    CURL *c = u ? curl_easy_init() : NULL;
    if (!c) {
        free(u);
        snprintf(why, whysz, "out of memory");
        return -1;
    }
    curl_easy_setopt(c, CURLOPT_URL, u);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, LINK_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, link_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    CURLcode cc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(c);
    free(u);
    if (cc == CURLE_WRITE_ERROR)
        snprintf(why, whysz, "the link gave more than %zu MiB", LINK_MAX_BYTES >> 20);
    else if (cc != CURLE_OK)
        snprintf(why, whysz, "cannot fetch the link: %s", curl_easy_strerror(cc));
    else if (code != 200)
        snprintf(why, whysz, "fetching the link gave HTTP %ld", code);
    else
        return 0;
    return -1;
}

/* One image part, given as a URL: a data URL; an http link to loopback,
 * which the sim fetches (GET, no redirects, 10 s) and reads as it reads a
 * data URL's bytes; or any other http(s) link, which it does not fetch:
 * a square of image_link_side pixels. Its tokens join the prompt
 * where the image is, their ids drawn from a hash of the URL, so an equal
 * image gives equal prefix-cache blocks. */
static void image_part(struct lt_sim_toks *t, struct sim_imgs *im, const char *url, size_t n)
{
    if (im->status)
        return;
    uint32_t w, h;
    im->n++;
    if (n >= 5 && !strncmp(url, "data:", 5)) {
        struct lt_img_head hd;
        uint64_t bytes;
        struct lt_err err;
        if (lt_img_data_url(url, n, &hd, &bytes, &err) < 0) {
            im->status =
                bad(im->msg, im->msgsz, "image %u: cannot read the image: %s", im->n, err.msg);
            return;
        }
        const char *mime, *data;
        size_t mn, dn;
        (void)lt_data_url(url, n, &mime, &mn, &data, &dn, &err);
        uint8_t *raw = malloc(bytes ? bytes : 1);
        size_t got = 0;
        if (!raw) {
            im->status = bad(im->msg, im->msgsz, "image %u: out of memory", im->n);
            return;
        }
        int rc = lt_b64_decode(data, dn, raw, bytes, &got, &err);
        if (rc == 0)
            rc = lt_img_decode_check(raw, got, im->p->image_max_pixels, &hd, &err);
        free(raw);
        if (rc < 0) {
            im->status =
                bad(im->msg, im->msgsz, "image %u: cannot read the image: %s", im->n, err.msg);
            return;
        }
        w = hd.w;
        h = hd.h;
        im->bytes += bytes;
    } else if (im->p->link_fetch && link_is_loopback(url, n)) {
        struct lt_buf body;
        lt_buf_init(&body, LINK_MAX_BYTES + 1);
        char why[200];
        struct lt_img_head hd;
        struct lt_err err;
        int rc = link_fetch(url, n, &body, why, sizeof why);
        if (rc == 0 && lt_img_decode_check((const uint8_t *)body.p, body.len,
                                           im->p->image_max_pixels, &hd, &err) < 0) {
            snprintf(why, sizeof why, "cannot read the image: %.160s", err.msg);
            rc = -1;
        }
        size_t got = body.len;
        lt_buf_release(&body);
        if (rc < 0) {
            im->status = bad(im->msg, im->msgsz, "image %u: %s", im->n, why);
            return;
        }
        w = hd.w;
        h = hd.h;
        im->bytes += got;
        im->links++;
    } else if (n >= 7 && (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8))) {
        w = h = im->p->image_link_side;
    } else {
        im->status = bad(im->msg, im->msgsz,
                         "image %u: the URL must be a data URL or an http(s) link", im->n);
        return;
    }
    uint32_t k = lt_sim_image_tokens(im->p, w, h);
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        hash = (hash ^ (unsigned char)url[i]) * 1099511628211ull;
    for (uint32_t i = 0; i < k; i++)
        lt_sim_toks_id(t, (uint32_t)(lt_mix64(hash + i) % t->vocab));
    im->tokens += k;
}

uint32_t lt_sim_video_tokens(const struct lt_sim_profile *p, uint32_t w, uint32_t h,
                             uint32_t frames)
{
    uint32_t tp = p->video_temporal_patch ? p->video_temporal_patch : 1;
    uint64_t groups = ((uint64_t)frames + tp - 1) / tp;
    uint64_t per = p->image_tile ? (uint64_t)((w + p->image_tile - 1) / p->image_tile) *
                                       ((h + p->image_tile - 1) / p->image_tile) * p->image_tokens
                                 : p->image_tokens;
    uint64_t t = (p->image_tile ? p->image_base_tokens : 0) + groups * per;
    return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* Chat's {"type":"video_url","video_url":{"url":..} or ".."}: an AVI (as
 * replay sends it) as a data URL or a loopback link, its shape from its
 * header (lt_video_head), its tokens by lt_sim_video_tokens. Anything else
 * (an mp4 the sim has no reader for, another link) is a 400: a video is
 * never counted by a guess. */
static void video_part(struct lt_sim_toks *t, struct sim_imgs *im, const json_t *part)
{
    im->videos++;
    if (im->status)
        return;
    const json_t *u = json_object_get(part, "video_url");
    if (json_is_object(u))
        u = json_object_get(u, "url");
    const char *url = json_string_value(u);
    size_t n = json_string_length(u);
    struct lt_err err;
    struct lt_video_head vh;
    struct lt_buf body;
    lt_buf_init(&body, LINK_MAX_BYTES + 1);
    int rc = -1;
    char why[200] = "video_url has no URL";
    if (url && n >= 5 && !strncmp(url, "data:", 5)) {
        const char *mime, *data;
        size_t mn, dn;
        uint8_t head[768];
        size_t got = 0;
        if (lt_data_url(url, n, &mime, &mn, &data, &dn, &err) < 0 ||
            lt_b64_decode(data, dn < 1024 ? dn / 4 * 4 : 1024, head, sizeof head, &got, &err) < 0)
            snprintf(why, sizeof why, "cannot read the video: %.160s", err.msg);
        else if (lt_video_head(head, got, &vh, &err) < 0)
            snprintf(why, sizeof why, "cannot read the video: %.160s", err.msg);
        else
            rc = 0;
        im->bytes += rc == 0 ? lt_b64_decoded_len(data, dn) : 0;
    } else if (url && im->p->link_fetch && link_is_loopback(url, n)) {
        if (link_fetch(url, n, &body, why, sizeof why) == 0) {
            if (lt_video_head((const uint8_t *)body.p, body.len, &vh, &err) < 0)
                snprintf(why, sizeof why, "cannot read the video: %.160s", err.msg);
            else
                rc = 0;
        }
        im->bytes += rc == 0 ? body.len : 0;
        im->links += rc == 0;
    } else if (url) {
        snprintf(why, sizeof why, "%s",
                 im->p->link_fetch ? "the URL must be a data URL or a link to loopback"
                                   : "the URL must be a data URL (link_fetch = 0)");
    }
    lt_buf_release(&body);
    if (rc < 0) {
        im->status = bad(im->msg, im->msgsz, "video %u: %s", im->videos, why);
        return;
    }
    uint32_t k = lt_sim_video_tokens(im->p, vh.w, vh.h, vh.frames);
    uint64_t hash =
        1469598103934665603ull ^ (uint64_t)vh.w << 32 ^ vh.h ^ (uint64_t)vh.frames << 16;
    for (uint32_t i = 0; i < k; i++)
        lt_sim_toks_id(t, (uint32_t)(lt_mix64(hash + i) % t->vocab));
    im->video_tokens += k;
}

/* A content part that is an image, in any of the three APIs: chat's
 * {"type":"image_url","image_url":{"url":..} or ".."}, Responses'
 * {"type":"input_image","image_url":".."}, Messages' {"type":"image",
 * "source":{"type":"base64","media_type":..,"data":..} or {"type":"url",
 * "url":..}}. True when it was one (counted, or an error set). */
static bool image_of(struct lt_sim_toks *t, struct sim_imgs *im, const json_t *part)
{
    const char *type = json_string_value(json_object_get(part, "type"));
    if (!type)
        return false;
    if (!strcmp(type, "image_url") || !strcmp(type, "input_image")) {
        const json_t *u = json_object_get(part, "image_url");
        if (json_is_object(u))
            u = json_object_get(u, "url");
        if (!json_is_string(u)) {
            im->n++;
            if (!im->status)
                im->status = bad(im->msg, im->msgsz, "image %u: image_url has no URL", im->n);
            return true;
        }
        image_part(t, im, json_string_value(u), json_string_length(u));
        return true;
    }
    if (!strcmp(type, "video_url")) {
        video_part(t, im, part);
        return true;
    }
    if (!strcmp(type, "input_audio")) {
        /* chat's audio: a WAV's duration from its header, its tokens at
         * audio_tokens_per_s (rounded up) */
        const json_t *ia = json_object_get(part, "input_audio");
        const json_t *d = json_object_get(ia, "data");
        im->audio++;
        if (im->status)
            return true;
        uint8_t head[4096];
        size_t got = 0, dn = json_string_length(d);
        struct lt_err err;
        size_t take = dn < sizeof head / 3 * 4 ? dn / 4 * 4 : sizeof head / 3 * 4;
        int64_t us = 0;
        if (json_is_string(d) &&
            lt_b64_decode(json_string_value(d), take, head, sizeof head, &got, &err) == 0)
            us = lt_wav_duration_us(head, got, lt_b64_decoded_len(json_string_value(d), dn));
        if (us <= 0) {
            im->status = bad(im->msg, im->msgsz,
                             "audio %u: cannot read the audio: input_audio.data must be a "
                             "base64 WAV",
                             im->audio);
            return true;
        }
        double k = ceil((double)us / 1e6 * im->p->audio_tokens_per_s);
        uint32_t n = k < 1 ? 1 : k > 1e8 ? 100000000u : (uint32_t)k;
        uint64_t hash = 1469598103934665603ull ^ (uint64_t)us;
        for (uint32_t i = 0; i < n; i++)
            lt_sim_toks_id(t, (uint32_t)(lt_mix64(hash + i) % t->vocab));
        im->audio_tokens += n;
        return true;
    }
    if (!strcmp(type, "image")) {
        const json_t *src = json_object_get(part, "source");
        const char *st = json_string_value(json_object_get(src, "type"));
        const json_t *d = json_object_get(src, st && !strcmp(st, "url") ? "url" : "data");
        const char *mt = json_string_value(json_object_get(src, "media_type"));
        if (!json_is_string(d) || (st && strcmp(st, "url") && strcmp(st, "base64"))) {
            im->n++;
            if (!im->status)
                im->status = bad(im->msg, im->msgsz,
                                 "image %u: source must be {type: base64, media_type, data} "
                                 "or {type: url, url}",
                                 im->n);
            return true;
        }
        if (st && !strcmp(st, "url")) {
            image_part(t, im, json_string_value(d), json_string_length(d));
            return true;
        }
        /* the same check as a data URL's, on a URL made of its parts */
        struct lt_buf u;
        lt_buf_init(&u, (size_t)-1);
        if (lt_buf_printf(&u, "data:%s;base64,", mt ? mt : "image/png") < 0 ||
            lt_buf_append(&u, json_string_value(d), json_string_length(d)) < 0) {
            im->n++;
            if (!im->status)
                im->status = bad(im->msg, im->msgsz, "image %u: out of memory", im->n);
        } else {
            image_part(t, im, u.p, u.len);
        }
        lt_buf_release(&u);
        return true;
    }
    return false;
}

/* Count a chat prompt by the documented rule; 0 or 400 with msg. */
static int count_chat(struct lt_sim_toks *t, struct sim_imgs *im, const json_t *messages,
                      const json_t *tools, char *msg, size_t msgsz)
{
    if (!json_is_array(messages) || json_array_size(messages) == 0)
        return bad(msg, msgsz, "'messages' must be a non-empty array");
    if (tools)
        toks_json(t, tools);
    uint32_t im_start = lt_sim_special_id("<|im_start|>") % t->vocab;
    uint32_t im_end = lt_sim_special_id("<|im_end|>") % t->vocab;
    uint32_t nl = lt_sim_special_id("\n") % t->vocab;
    size_t i;
    const json_t *m;
    json_array_foreach(messages, i, m)
    {
        if (!json_is_object(m))
            return bad(msg, msgsz, "messages[%zu] must be an object", i);
        const json_t *role = json_object_get(m, "role");
        if (!json_is_string(role))
            return bad(msg, msgsz, "messages[%zu].role must be a string", i);
        const char *rs = json_string_value(role);
        if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant") &&
            strcmp(rs, "tool") && strcmp(rs, "developer") && strcmp(rs, "function"))
            return bad(msg, msgsz, "messages[%zu].role '%.40s' is not a known role", i, rs);
        lt_sim_toks_id(t, im_start);
        lt_sim_toks_id(t, lt_sim_special_id(rs) % t->vocab);
        lt_sim_toks_id(t, nl);
        const json_t *content = json_object_get(m, "content");
        if (json_is_string(content)) {
            lt_sim_toks_text(t, json_string_value(content), json_string_length(content));
        } else if (json_is_array(content)) {
            size_t k;
            const json_t *part;
            json_array_foreach(content, k, part)
            {
                if (!json_is_object(part) || !json_is_string(json_object_get(part, "type")))
                    return bad(msg, msgsz,
                               "messages[%zu].content[%zu] must be an object with "
                               "a type",
                               i, k);
                if (image_of(t, im, part)) {
                    if (im->status)
                        return im->status;
                    continue;
                }
                const json_t *text = json_object_get(part, "text");
                if (json_is_string(text))
                    lt_sim_toks_text(t, json_string_value(text), json_string_length(text));
            }
        } else if (content && !json_is_null(content)) {
            return bad(msg, msgsz, "messages[%zu].content must be a string, a list or null", i);
        } else if (!json_object_get(m, "tool_calls")) {
            return bad(msg, msgsz, "messages[%zu] has no content", i);
        }
        const json_t *calls = json_object_get(m, "tool_calls");
        if (calls && !json_is_null(calls)) {
            if (!json_is_array(calls))
                return bad(msg, msgsz, "messages[%zu].tool_calls must be a list", i);
            toks_json(t, calls);
        }
        lt_sim_toks_id(t, im_end);
    }
    lt_sim_toks_id(t, im_start);
    lt_sim_toks_id(t, lt_sim_special_id("assistant") % t->vocab);
    lt_sim_toks_id(t, nl);
    return 0;
}

/* The text of a Responses item or a Messages block, wherever it is: a
 * string, a list of parts, or a part's text, thinking, arguments, output,
 * nested content, or a tool's input (counted as its JSON). */
static void count_content(struct lt_sim_toks *t, struct sim_imgs *im, const json_t *v, int depth)
{
    if (depth > 8 || im->status)
        return;
    if (json_is_string(v)) {
        lt_sim_toks_text(t, json_string_value(v), json_string_length(v));
    } else if (json_is_array(v)) {
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e) count_content(t, im, e, depth + 1);
    } else if (json_is_object(v)) {
        if (image_of(t, im, v))
            return;
        static const char *const keys[] = {"text", "thinking", "arguments", "output", "content"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            const json_t *x = json_object_get(v, keys[k]);
            if (x)
                count_content(t, im, x, depth + 1);
        }
        const json_t *input = json_object_get(v, "input");
        if (json_is_object(input))
            toks_json(t, input);
    }
}

/* One message of a Responses or Messages prompt, framed as chat's are. */
static void count_one(struct lt_sim_toks *t, struct sim_imgs *im, const char *role,
                      const json_t *content)
{
    lt_sim_toks_id(t, lt_sim_special_id("<|im_start|>") % t->vocab);
    lt_sim_toks_id(t, lt_sim_special_id(role) % t->vocab);
    lt_sim_toks_id(t, lt_sim_special_id("\n") % t->vocab);
    count_content(t, im, content, 0);
    lt_sim_toks_id(t, lt_sim_special_id("<|im_end|>") % t->vocab);
}

static bool role_in(const char *r, const char *const *roles)
{
    for (; *roles; roles++)
        if (!strcmp(r, *roles))
            return true;
    return false;
}

/* Count a Responses prompt (instructions, then input: a string or a list
 * of items) or a Messages prompt (system, then messages) by chat's rule. */
static int count_items(struct lt_sim_toks *t, struct sim_imgs *im, enum lt_sim_api api,
                       const json_t *root, const json_t *tools, char *msg, size_t msgsz)
{
    static const char *const resp_roles[] = {"system", "developer", "user", "assistant", NULL};
    static const char *const msg_roles[] = {"user", "assistant", NULL};
    bool responses = api == LT_SIM_RESPONSES;
    const json_t *sys = json_object_get(root, responses ? "instructions" : "system");
    const json_t *list = json_object_get(root, responses ? "input" : "messages");
    if (tools)
        toks_json(t, tools);
    if (sys && !json_is_null(sys)) {
        if (!json_is_string(sys) && !(json_is_array(sys) && !responses))
            return bad(msg, msgsz, "'%s' must be a string%s", responses ? "instructions" : "system",
                       responses ? "" : " or a list of text blocks");
        count_one(t, im, "system", sys);
    }
    if (responses && json_is_string(list)) {
        count_one(t, im, "user", list);
    } else {
        const char *name = responses ? "input" : "messages";
        if (!json_is_array(list) || json_array_size(list) == 0)
            return bad(msg, msgsz, "'%s' must be %sa non-empty list", name,
                       responses ? "a string or " : "");
        size_t i;
        const json_t *m;
        json_array_foreach(list, i, m)
        {
            if (!json_is_object(m))
                return bad(msg, msgsz, "%s[%zu] must be an object", name, i);
            const char *role = json_string_value(json_object_get(m, "role"));
            const char *type = json_string_value(json_object_get(m, "type"));
            if (responses && !role && type && !strcmp(type, "function_call"))
                role = "assistant";
            else if (responses && !role && type && !strcmp(type, "function_call_output"))
                role = "tool";
            else if (!role || !role_in(role, responses ? resp_roles : msg_roles))
                return bad(msg, msgsz, "%s[%zu].role must be one of %s", name, i,
                           responses ? "system, developer, user, assistant" : "user, assistant");
            const json_t *content = json_object_get(m, "content");
            if (!responses && !json_is_string(content) && !json_is_array(content))
                return bad(msg, msgsz, "messages[%zu].content must be a string or a list", i);
            count_one(t, im, role, content ? content : m);
            if (im->status)
                return im->status;
        }
    }
    lt_sim_toks_id(t, lt_sim_special_id("<|im_start|>") % t->vocab);
    lt_sim_toks_id(t, lt_sim_special_id("assistant") % t->vocab);
    lt_sim_toks_id(t, lt_sim_special_id("\n") % t->vocab);
    return 0;
}

/* Count a completions prompt: text, token ids, or a list of one of either. */
static int count_prompt(struct lt_sim_toks *t, const json_t *prompt, char *msg, size_t msgsz)
{
    if (json_is_array(prompt) && json_array_size(prompt) == 1 &&
        (json_is_string(json_array_get(prompt, 0)) || json_is_array(json_array_get(prompt, 0))))
        prompt = json_array_get(prompt, 0);
    if (json_is_string(prompt)) {
        lt_sim_toks_text(t, json_string_value(prompt), json_string_length(prompt));
    } else if (json_is_array(prompt) && json_array_size(prompt) > 1 &&
               !json_is_integer(json_array_get(prompt, 0))) {
        return bad(msg, msgsz, "batched prompts (a list of several prompts) are not supported");
    } else if (json_is_array(prompt)) {
        size_t i;
        const json_t *v;
        json_array_foreach(prompt, i, v)
        {
            /* The words of llama.cpp's server, which refuses ids outside its
             * vocabulary, then which id and the range. */
            if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                json_integer_value(v) >= (json_int_t)t->vocab)
                return bad(msg, msgsz,
                           "Prompt contains invalid tokens: prompt[%zu] is not a token id (0..%u)",
                           i, t->vocab - 1);
            lt_sim_toks_id(t, (uint32_t)json_integer_value(v));
        }
    } else if (!prompt) {
        return bad(msg, msgsz, "'prompt' is required");
    } else {
        return bad(msg, msgsz,
                   "'prompt' must be a string, a list of token ids, or a list "
                   "holding one of these (batched prompts are not supported)");
    }
    if (t->n == 0)
        return bad(msg, msgsz, "the prompt is empty");
    return 0;
}

static int get_uint(const json_t *root, const char *key, uint32_t min, int64_t *out, char *msg,
                    size_t msgsz)
{
    const json_t *v = json_object_get(root, key);
    *out = -1;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)min ||
        json_integer_value(v) > UINT32_MAX)
        return bad(msg, msgsz, "'%s' must be an integer >= %u", key, min);
    *out = json_integer_value(v);
    return 0;
}

static int get_bool(const json_t *root, const char *key, bool *out, char *msg, size_t msgsz)
{
    const json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return bad(msg, msgsz, "'%s' must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

/* A tool's name: chat's {"type":"function","function":{"name":N}}, or
 * Responses' and Messages' flat {"name":N, ...}. */
static const char *tool_name(enum lt_sim_api api, const json_t *tl)
{
    if (api == LT_SIM_CHAT)
        return json_string_value(json_object_get(json_object_get(tl, "function"), "name"));
    return json_string_value(json_object_get(tl, "name"));
}

/* tool_choice: "none" and "auto" never force a call here; "required" calls
 * the first tool, {"type":"function","function":{"name":N}} calls N.
 * Responses: the same strings, {"type":"function","name":N}. Messages:
 * {"type":"auto"|"none"}, {"type":"any"} (the first tool),
 * {"type":"tool","name":N}. */
static int parse_tools(struct lt_sim_call *c, enum lt_sim_api api, const json_t *root, char *msg,
                       size_t msgsz)
{
    const json_t *tools = json_object_get(root, "tools");
    const json_t *choice = json_object_get(root, "tool_choice");
    if (tools && !json_is_null(tools)) {
        if (!json_is_array(tools))
            return bad(msg, msgsz, "'tools' must be a list");
        size_t i;
        const json_t *tl;
        json_array_foreach(tools, i, tl)
        {
            if (!json_is_object(tl) || !tool_name(api, tl))
                return bad(msg, msgsz, "tools[%zu] must be %s", i,
                           api == LT_SIM_CHAT
                               ? "{\"type\":\"function\",\"function\":{\"name\":...}}"
                               : "an object with a \"name\"");
        }
    }
    if (!choice || json_is_null(choice))
        return 0;
    size_t ntools = json_is_array(tools) ? json_array_size(tools) : 0;
    const char *name = NULL;
    bool first = false;
    const char *kind = json_string_value(json_object_get(choice, "type"));
    if (json_is_string(choice) && api != LT_SIM_MESSAGES) {
        const char *s = json_string_value(choice);
        if (!strcmp(s, "none") || !strcmp(s, "auto"))
            return 0;
        if (strcmp(s, "required"))
            return bad(msg, msgsz, "'tool_choice' must be none, auto, required or a function");
        first = true;
    } else if (api == LT_SIM_MESSAGES && kind) {
        if (!strcmp(kind, "none") || !strcmp(kind, "auto"))
            return 0;
        first = !strcmp(kind, "any");
        name = !strcmp(kind, "tool") ? json_string_value(json_object_get(choice, "name")) : NULL;
        if (!first && !name)
            return bad(msg, msgsz, "'tool_choice' must be auto, any, none or a named tool");
    } else if (json_is_object(choice) && api != LT_SIM_MESSAGES) {
        name = tool_name(api, choice); /* chat's choice is shaped as its tools */
        if (!name)
            return bad(msg, msgsz, "'tool_choice' must name a function");
    } else {
        return bad(msg, msgsz, "'tool_choice' must be %s",
                   api == LT_SIM_MESSAGES ? "an object" : "a string or an object");
    }
    if (first) {
        if (ntools == 0)
            return bad(msg, msgsz, "tool_choice '%s' needs 'tools'",
                       api == LT_SIM_MESSAGES ? "any" : "required");
        name = tool_name(api, json_array_get(tools, 0));
    } else {
        size_t i;
        const json_t *tl;
        bool found = false;
        json_array_foreach(tools, i, tl)
        {
            const char *tn = tool_name(api, tl);
            if (tn && !strcmp(tn, name))
                found = true;
        }
        if (!found)
            return bad(msg, msgsz, "tool_choice names '%.60s', which is not in 'tools'", name);
    }
    c->tool_call = true;
    c->tool_name_json = json_literal(name, strlen(name));
    return c->tool_name_json ? 0 : bad(msg, msgsz, "out of memory");
}

static int parse_reasoning(struct lt_sim_call *c, const json_t *root, char *msg, size_t msgsz)
{
    const json_t *eff = json_object_get(root, "reasoning_effort");
    const json_t *reasoning = json_object_get(root, "reasoning"); /* Responses */
    if (c->api == LT_SIM_RESPONSES && reasoning && !json_is_null(reasoning)) {
        if (!json_is_object(reasoning))
            return bad(msg, msgsz, "'reasoning' must be an object");
        eff = json_object_get(reasoning, "effort");
    }
    const json_t *thinking = json_object_get(root, "thinking"); /* Messages */
    if (c->api == LT_SIM_MESSAGES && thinking && !json_is_null(thinking)) {
        const char *type = json_string_value(json_object_get(thinking, "type"));
        if (!type || (strcmp(type, "enabled") && strcmp(type, "disabled")))
            return bad(msg, msgsz, "'thinking.type' must be enabled or disabled");
        c->reasoning = !strcmp(type, "enabled");
    }
    if (eff && !json_is_null(eff)) {
        const char *s = json_string_value(eff);
        if (!s)
            return bad(msg, msgsz, "'reasoning_effort' must be a string");
        if (!strcmp(s, "none")) {
            c->reasoning = 0;
        } else if (!strcmp(s, "low") || !strcmp(s, "minimal")) {
            c->reasoning = 1;
            c->reasoning_fraction = 0.25;
        } else if (!strcmp(s, "medium")) {
            c->reasoning = 1;
            c->reasoning_fraction = 0.5;
        } else if (!strcmp(s, "high")) {
            c->reasoning = 1;
            c->reasoning_fraction = 0.75;
        } else {
            return bad(msg, msgsz, "'reasoning_effort' must be none, low, medium or high");
        }
    }
    const json_t *kw = json_object_get(root, "chat_template_kwargs");
    const json_t *think = json_object_get(kw, "enable_thinking");
    if (think) {
        if (!json_is_boolean(think))
            return bad(msg, msgsz, "'chat_template_kwargs.enable_thinking' must be a boolean");
        c->reasoning = json_is_true(think);
    }
    return 0;
}

/* One text to embed or rank: a string, or (embeddings) a list of token
 * ids; its tokens appended to t. */
static int embed_one(struct lt_sim_toks *t, const json_t *v, const char *what, size_t i, char *msg,
                     size_t msgsz)
{
    if (json_is_string(v)) {
        lt_sim_toks_text(t, json_string_value(v), json_string_length(v));
        return 0;
    }
    if (json_is_object(v) && json_is_string(json_object_get(v, "text"))) {
        const json_t *x = json_object_get(v, "text");
        lt_sim_toks_text(t, json_string_value(x), json_string_length(x));
        return 0;
    }
    if (json_is_array(v) && json_array_size(v)) {
        size_t k;
        const json_t *id;
        json_array_foreach(v, k, id)
        {
            if (!json_is_integer(id) || json_integer_value(id) < 0 ||
                json_integer_value(id) >= (json_int_t)t->vocab)
                return bad(msg, msgsz, "%s[%zu][%zu] is not a token id (0..%u)", what, i, k,
                           t->vocab - 1);
            lt_sim_toks_id(t, (uint32_t)json_integer_value(id));
        }
        return 0;
    }
    return bad(msg, msgsz, "%s[%zu] must be a non-empty string or list of token ids", what, i);
}

/* An embeddings body ({"input": a string, a list of strings, a list of
 * ids or a list of lists of ids}) or a rerank body ({"query": ..,
 * "documents": [..], "top_n": N}): its tokens (rerank: the query with each
 * document, as a cross-encoder reads them), its inputs, and one output
 * token that stands for the answer, due when the prefill ends. */
static int parse_embed(struct lt_sim_call *c, enum lt_sim_api api, const json_t *root,
                       const struct lt_sim_profile *p, char *msg, size_t msgsz)
{
    int rc;
    c->stream = false;
    c->max_tokens = c->min_tokens = 1;
    c->ignore_eos = true;
    c->reasoning = 0;
    if (api == LT_SIM_EMBEDDINGS) {
        const json_t *in = json_object_get(root, "input");
        if (json_is_string(in) ||
            (json_is_array(in) && json_array_size(in) && json_is_integer(json_array_get(in, 0)))) {
            if ((rc = embed_one(&c->toks, in, "input", 0, msg, msgsz)))
                return rc;
            c->inputs = 1;
        } else if (json_is_array(in) && json_array_size(in)) {
            size_t i;
            const json_t *v;
            json_array_foreach(
                in, i, v) if ((rc = embed_one(&c->toks, v, "input", i, msg, msgsz))) return rc;
            c->inputs = (uint32_t)json_array_size(in);
        } else {
            return bad(msg, msgsz, "'input' must be a string, a list of strings or token ids");
        }
    } else {
        const json_t *q = json_object_get(root, "query");
        const json_t *docs = json_object_get(root, "documents");
        if (!json_is_string(q))
            return bad(msg, msgsz, "'query' must be a string");
        if (!json_is_array(docs) || !json_array_size(docs))
            return bad(msg, msgsz, "'documents' must be a non-empty list");
        size_t i;
        const json_t *v;
        json_array_foreach(docs, i, v)
        {
            if ((rc = embed_one(&c->toks, q, "query", 0, msg, msgsz)) ||
                (rc = embed_one(&c->toks, v, "documents", i, msg, msgsz)))
                return rc;
        }
        c->inputs = (uint32_t)json_array_size(docs);
        int64_t top;
        if ((rc = get_uint(root, "top_n", 1, &top, msg, msgsz)))
            return rc;
        c->top_n = top > 0 && top < c->inputs ? (uint32_t)top : 0;
    }
    if (c->toks.oom)
        return bad(msg, msgsz, "out of memory counting the input");
    if (c->toks.n == 0)
        return bad(msg, msgsz, "the input is empty");
    if (c->toks.n > p->max_model_len)
        return bad(msg, msgsz,
                   "This model's maximum context length is %u tokens. However, you requested "
                   "%u tokens in the input for embedding generation. Please reduce the length "
                   "of the input.",
                   p->max_model_len, c->toks.n);
    /* model_json was set by lt_sim_call_parse before it came here */
    return c->model_json ? 0 : bad(msg, msgsz, "out of memory");
}

int lt_sim_call_parse(struct lt_sim_call *c, enum lt_sim_api api, const char *body, size_t len,
                      const struct lt_sim_profile *p, char *msg, size_t msgsz)
{
    memset(c, 0, sizeof *c);
    c->api = api;
    c->reasoning = -1;
    c->id_slot = -1;
    lt_sim_toks_init(&c->toks, p->block_tokens);
    lt_sim_toks_tokenizer(&c->toks, p->vocab, p->piece_bytes);
    struct sim_imgs im = {.p = p, .msg = msg, .msgsz = msgsz};
    int rc = 0;
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_ALLOW_NUL, &jerr);
    if (!root) {
        rc = bad(msg, msgsz, "invalid JSON in request body: %s (line %d, column %d)", jerr.text,
                 jerr.line, jerr.column);
        goto out;
    }
    if (!json_is_object(root)) {
        rc = bad(msg, msgsz, "the request body must be a JSON object");
        goto out;
    }
    const json_t *model = json_object_get(root, "model");
    if (model && !json_is_null(model) && !json_is_string(model)) {
        rc = bad(msg, msgsz, "'model' must be a string");
        goto out;
    }
    c->model_json = json_is_string(model)
                        ? json_literal(json_string_value(model), json_string_length(model))
                        : json_literal(p->model, strlen(p->model));
    if (api == LT_SIM_EMBEDDINGS || api == LT_SIM_RERANK) {
        rc = parse_embed(c, api, root, p, msg, msgsz);
        goto out;
    }
    if ((rc = get_bool(root, "stream", &c->stream, msg, msgsz)))
        goto out;
    bool typed = api == LT_SIM_RESPONSES || api == LT_SIM_MESSAGES;
    c->include_usage = typed; /* their streams always end with usage */
    const json_t *so = typed ? NULL : json_object_get(root, "stream_options");
    if (so && !json_is_null(so)) {
        if (!c->stream) {
            rc = bad(msg, msgsz, "'stream_options' may only be given when 'stream' is true");
            goto out;
        }
        if (!json_is_object(so)) {
            rc = bad(msg, msgsz, "'stream_options' must be an object");
            goto out;
        }
        if ((rc = get_bool(so, "include_usage", &c->include_usage, msg, msgsz)))
            goto out;
    }
    int64_t n, mx, mxc, mn;
    if ((rc = get_uint(root, "n", 1, &n, msg, msgsz)))
        goto out;
    /* llama.cpp's id_slot: -1 (any) or a slot, which the server takes
     * modulo its slots (sim_model.c honours it with slot_runs) */
    const json_t *ids = json_object_get(root, "id_slot");
    if (!(json_is_integer(ids) && json_integer_value(ids) == -1) &&
        (rc = get_uint(root, "id_slot", 0, &c->id_slot, msg, msgsz)))
        goto out;
    if (n > 1) {
        rc = bad(msg, msgsz, "n > 1 is not supported");
        goto out;
    }
    if ((rc = get_uint(root, api == LT_SIM_RESPONSES ? "max_output_tokens" : "max_tokens", 1, &mx,
                       msg, msgsz)) ||
        (rc = get_uint(root, "max_completion_tokens", 1, &mxc, msg, msgsz)) ||
        (rc = get_uint(root, "min_tokens", 0, &mn, msg, msgsz)) ||
        (rc = get_bool(root, "ignore_eos", &c->ignore_eos, msg, msgsz)))
        goto out;
    if (mx < 0 && !typed)
        mx = mxc;
    if (mx < 0 && api == LT_SIM_MESSAGES) {
        rc = bad(msg, msgsz, "max_tokens: Field required");
        goto out;
    }
    if (typed) {
        if ((rc = parse_tools(c, api, root, msg, msgsz)) ||
            (rc = parse_reasoning(c, root, msg, msgsz)))
            goto out;
        const json_t *tools = json_object_get(root, "tools");
        rc = count_items(&c->toks, &im, api, root,
                         json_is_array(tools) && json_array_size(tools) ? tools : NULL, msg, msgsz);
    } else if (api == LT_SIM_CHAT) {
        if ((rc = parse_tools(c, api, root, msg, msgsz)) ||
            (rc = parse_reasoning(c, root, msg, msgsz)))
            goto out;
        const json_t *tools = json_object_get(root, "tools");
        rc = count_chat(&c->toks, &im, json_object_get(root, "messages"),
                        json_is_array(tools) && json_array_size(tools) ? tools : NULL, msg, msgsz);
    } else {
        rc = count_prompt(&c->toks, json_object_get(root, "prompt"), msg, msgsz);
    }
    c->images = im.n;
    c->image_tokens = im.tokens;
    c->audio = im.audio;
    c->audio_tokens = im.audio_tokens;
    c->videos = im.videos;
    c->video_tokens = im.video_tokens;
    c->image_bytes = im.bytes;
    c->image_links = im.links;
    if (rc)
        goto out;
    if (c->toks.oom) {
        rc = bad(msg, msgsz, "out of memory counting the prompt");
        goto out;
    }
    uint32_t prompt = c->toks.n;
    if (prompt >= p->max_model_len || (mx > 0 && prompt + (uint64_t)mx > p->max_model_len)) {
        rc = bad(msg, msgsz,
                 "This model's maximum context length is %u tokens. However, you requested "
                 "%llu tokens (%u in the messages, %lld in the completion). Please reduce the "
                 "length of the messages or completion.",
                 p->max_model_len, (unsigned long long)prompt + (mx > 0 ? (uint64_t)mx : 0), prompt,
                 (long long)(mx > 0 ? mx : 0));
        goto out;
    }
    c->max_tokens = mx > 0 ? (uint32_t)mx : p->max_model_len - prompt;
    c->min_tokens = mn > 0 ? (uint32_t)mn : 0;
    if (c->min_tokens > c->max_tokens) {
        rc = bad(msg, msgsz, "min_tokens (%u) must be at most max_tokens (%u)", c->min_tokens,
                 c->max_tokens);
        goto out;
    }
    if (!c->model_json)
        rc = bad(msg, msgsz, "out of memory");
out:
    json_decref(root);
    return rc;
}

void lt_sim_call_release(struct lt_sim_call *c)
{
    free(c->model_json);
    free(c->tool_name_json);
    lt_sim_toks_release(&c->toks);
    c->model_json = c->tool_name_json = NULL;
}

int lt_sim_tokenize(struct lt_buf *out, const char *body, size_t len,
                    const struct lt_sim_profile *p, char *msg, size_t msgsz)
{
    struct lt_sim_toks t;
    lt_sim_toks_init(&t, p->block_tokens);
    lt_sim_toks_tokenizer(&t, p->vocab, p->piece_bytes);
    int rc = 0;
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_ALLOW_NUL, &jerr);
    if (!json_is_object(root)) {
        rc = bad(msg, msgsz, "the request body must be a JSON object");
        goto out;
    }
    /* The ids are listed only as far as the body limit lets a prompt go:
     * a token takes at least one byte of body. */
    t.ids_cap = (uint32_t)(len + 16);
    t.ids = malloc(t.ids_cap * sizeof *t.ids);
    if (!t.ids) {
        rc = bad(msg, msgsz, "out of memory");
        goto out;
    }
    const json_t *messages = json_object_get(root, "messages");
    if (messages) {
        const json_t *tools = json_object_get(root, "tools");
        struct sim_imgs im = {.p = p, .msg = msg, .msgsz = msgsz};
        rc = count_chat(&t, &im, messages,
                        json_is_array(tools) && json_array_size(tools) ? tools : NULL, msg, msgsz);
    } else {
        rc = count_prompt(&t, json_object_get(root, "prompt"), msg, msgsz);
    }
    if (rc)
        goto out;
    rc = lt_buf_printf(out, "{\"count\":%u,\"max_model_len\":%u,\"tokens\":[", t.n,
                       p->max_model_len);
    for (uint32_t i = 0; rc == 0 && i < t.n && i < t.ids_cap; i++)
        rc = lt_buf_printf(out, i ? ",%u" : "%u", t.ids[i]);
    if (rc == 0)
        rc = lt_buf_puts(out, "]}");
    if (rc < 0)
        rc = bad(msg, msgsz, "answer too large");
out:
    free(t.ids);
    lt_sim_toks_release(&t);
    json_decref(root);
    return rc;
}

int lt_sim_count_tokens(struct lt_buf *out, const char *body, size_t len,
                        const struct lt_sim_profile *p, char *msg, size_t msgsz)
{
    struct lt_sim_toks t;
    lt_sim_toks_init(&t, p->block_tokens);
    lt_sim_toks_tokenizer(&t, p->vocab, p->piece_bytes);
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_ALLOW_NUL, &jerr);
    int rc = 0;
    if (!json_is_object(root)) {
        rc = bad(msg, msgsz, "the request body must be a JSON object");
        goto out;
    }
    const json_t *tools = json_object_get(root, "tools");
    struct sim_imgs im = {.p = p, .msg = msg, .msgsz = msgsz};
    rc = count_items(&t, &im, LT_SIM_MESSAGES, root,
                     json_is_array(tools) && json_array_size(tools) ? tools : NULL, msg, msgsz);
    if (rc == 0 && lt_buf_printf(out, "{\"input_tokens\":%u}", t.n) < 0)
        rc = bad(msg, msgsz, "answer too large");
out:
    lt_sim_toks_release(&t);
    json_decref(root);
    return rc;
}

static const char *error_type(int status)
{
    switch (status) {
    case 400:
    case 413:
        return "BadRequestError";
    case 404:
        return "NotFoundError";
    case 405:
        return "MethodNotAllowedError";
    case 429:
        return "RateLimitError";
    case 503:
        return "ServiceUnavailableError";
    default:
        return "InternalServerError";
    }
}

int lt_sim_error_body(struct lt_buf *out, int status, const char *msg)
{
    char *lit = json_literal(msg, strlen(msg));
    int rc = lt_buf_printf(out,
                           "{\"error\":{\"message\":%s,\"type\":\"%s\",\"param\":null,"
                           "\"code\":%d}}",
                           lit ? lit : "\"error\"", error_type(status), status);
    free(lit);
    return rc;
}

static const char *messages_error_type(int status)
{
    switch (status) {
    case 400:
    case 405:
        return "invalid_request_error";
    case 404:
        return "not_found_error";
    case 413:
        return "request_too_large";
    case 429:
        return "rate_limit_error";
    case 503:
        return "overloaded_error";
    default:
        return "api_error";
    }
}

int lt_sim_error_body_messages(struct lt_buf *out, int status, const char *msg)
{
    char *lit = json_literal(msg, strlen(msg));
    int rc = lt_buf_printf(out, "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":%s}}",
                           messages_error_type(status), lit ? lit : "\"error\"");
    free(lit);
    return rc;
}

const char *lt_sim_api_name(enum lt_sim_api api)
{
    switch (api) {
    case LT_SIM_COMPLETIONS:
        return "completions";
    case LT_SIM_RESPONSES:
        return "responses";
    case LT_SIM_MESSAGES:
        return "messages";
    case LT_SIM_EMBEDDINGS:
        return "embeddings";
    case LT_SIM_RERANK:
        return "rerank";
    case LT_SIM_CHAT:
        break;
    }
    return "chat";
}

/* The output tokens usage reports: the true count, or the badusage
 * fault's claim; and the total with the prompt (a claim near 2^64 stops
 * at 2^64-1 rather than wrapping). */
static unsigned long long usage_out(const struct lt_sim_resp *r)
{
    return r->claim ? (unsigned long long)r->claimed_out : r->out;
}

/* The prompt tokens usage reports: the true count, or the badprompt
 * fault's claim. */
static unsigned long long usage_in(const struct lt_sim_resp *r)
{
    return r->claim_in ? (unsigned long long)r->claimed_in : r->prompt_tokens;
}

static unsigned long long usage_total(const struct lt_sim_resp *r)
{
    unsigned long long o = usage_out(r), i = usage_in(r);
    return o > ULLONG_MAX - i ? ULLONG_MAX : o + i;
}

/* A Messages usage's prompt counts. Anthropic's input_tokens is what was
 * neither read from nor written to the cache, beside
 * cache_read_input_tokens (as llama.cpp answers too); vLLM's is the whole
 * prompt, with no cache counts (dialect messages-usage-total). */
static int messages_input_usage(struct lt_buf *b, const struct lt_sim_resp *r)
{
    if (r->d->messages_usage_total || r->claim_in)
        return lt_buf_printf(b, "\"input_tokens\":%llu", usage_in(r));
    uint32_t cached = r->cached_tokens < r->prompt_tokens ? r->cached_tokens : r->prompt_tokens;
    return lt_buf_printf(b, "\"input_tokens\":%u,\"cache_read_input_tokens\":%u",
                         r->prompt_tokens - cached, cached);
}

static int put_usage(struct lt_buf *b, const struct lt_sim_resp *r)
{
    char img[120] = "";
    if (r->image_tokens || r->audio_tokens) /* OpenAI's detail keys, where a prompt had them */
        snprintf(img, sizeof img,
                 r->audio_tokens ? ",\"image_tokens\":%u,\"audio_tokens\":%u"
                                 : ",\"image_tokens\":%u",
                 r->image_tokens, r->audio_tokens);
    if (r->video_tokens) /* vLLM's and SGLang's detail key */
        snprintf(img + strlen(img), sizeof img - strlen(img), ",\"video_tokens\":%u",
                 r->video_tokens);
    return lt_buf_printf(b,
                         "\"usage\":{\"prompt_tokens\":%llu,\"total_tokens\":%llu,"
                         "\"completion_tokens\":%llu,\"prompt_tokens_details\":{\"cached_tokens\":"
                         "%u%s},\"completion_tokens_details\":{\"reasoning_tokens\":%u}}",
                         usage_in(r), usage_total(r), usage_out(r), r->cached_tokens, img,
                         r->reasoning);
}

static const char *rkey(const struct lt_sim_resp *r)
{
    return r->d->reasoning_key ? "reasoning" : "reasoning_content";
}

static int chunk_open(struct lt_buf *b, const struct lt_sim_resp *r)
{
    if (r->api == LT_SIM_CHAT)
        return lt_buf_printf(b,
                             "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\","
                             "\"created\":%lld,\"model\":%s,\"choices\":[",
                             r->id, r->created, r->model_json);
    return lt_buf_printf(b,
                         "data: {\"id\":\"%s\",\"object\":\"text_completion\",\"created\":%lld,"
                         "\"model\":%s,\"choices\":[",
                         r->id, r->created, r->model_json);
}

/* ---- Responses and Messages ---- */

static bool typed(const struct lt_sim_resp *r)
{
    return r->api == LT_SIM_RESPONSES || r->api == LT_SIM_MESSAGES;
}

/* llama-server's timings object, as its result_timings::to_json names
 * them, after a comma: prompt_n is the prompt tokens prefilled (the cached
 * ones not), predicted_n the tokens made. */
static int put_timings(struct lt_buf *b, const struct lt_sim_resp *r)
{
    if (!r->timings || typed(r))
        return 0;
    uint32_t cached = r->cached_tokens < r->prompt_tokens ? r->cached_tokens : r->prompt_tokens;
    uint32_t pn = r->prompt_tokens - cached;
    return lt_buf_printf(b,
                         ",\"timings\":{\"cache_n\":%u,\"prompt_n\":%u,\"prompt_ms\":%.3f,"
                         "\"prompt_per_token_ms\":%.6f,\"prompt_per_second\":%.3f,"
                         "\"predicted_n\":%u,\"predicted_ms\":%.3f,"
                         "\"predicted_per_token_ms\":%.6f,\"predicted_per_second\":%.3f}",
                         cached, pn, r->prompt_ms, pn ? r->prompt_ms / pn : 0.0,
                         r->prompt_ms > 0 ? 1e3 * pn / r->prompt_ms : 0.0, r->out, r->predicted_ms,
                         r->out ? r->predicted_ms / r->out : 0.0,
                         r->predicted_ms > 0 ? 1e3 * r->out / r->predicted_ms : 0.0);
}

/* Output items (Responses) or content blocks (Messages): the reasoning
 * one (when there is reasoning), then the answer or the tool call. */
static uint32_t block_of(const struct lt_sim_resp *r, uint32_t i)
{
    return r->reasoning && i >= r->reasoning ? 1 : 0;
}

/* Responses' sequence_number of token i's delta: the head is 0, and an
 * output_item.added event goes before the first delta of each item. */
static uint32_t seq_of(const struct lt_sim_resp *r, uint32_t i)
{
    return 2 + i + block_of(r, i);
}

static const char *stop_reason(const struct lt_sim_resp *r)
{
    if (!strcmp(r->finish, "length"))
        return "max_tokens";
    if (!strcmp(r->finish, "tool_calls"))
        return "tool_use";
    return "end_turn";
}

static int put_words(struct lt_buf *b, uint32_t from, uint32_t to)
{
    int rc = 0;
    for (uint32_t i = from; rc == 0 && i < to; i++)
        rc = lt_buf_puts(b, lt_sim_word(i));
    return rc;
}

/* The piece of the tool call's arguments carried by token i. */
static const char *tool_piece(const struct lt_sim_resp *r, uint32_t i);

/* The tool call's arguments as a JSON object (Messages' input), the
 * unescaped concatenation of the pieces. */
static int put_tool_object(struct lt_buf *b, const struct lt_sim_resp *r)
{
    if (r->out - r->reasoning == 1)
        return lt_buf_puts(b, "{}");
    int rc = lt_buf_puts(b, "{\"q\": \"");
    if (rc == 0)
        rc = put_words(b, r->reasoning + 1, r->out - 1);
    return rc ? rc : lt_buf_puts(b, "\"}");
}

/* The whole Responses object: response.completed's, and the body. */
static int put_response(struct lt_buf *b, const struct lt_sim_resp *r)
{
    bool cut = !strcmp(r->finish, "length");
    unsigned long long q = (unsigned long long)r->seq;
    int rc = lt_buf_printf(b,
                           "{\"id\":\"%s\",\"object\":\"response\",\"created_at\":%lld,"
                           "\"status\":\"%s\",\"incomplete_details\":%s,\"error\":null,"
                           "\"model\":%s,\"output\":[",
                           r->id, r->created, cut ? "incomplete" : "completed",
                           cut ? "{\"reason\":\"max_output_tokens\"}" : "null", r->model_json);
    if (rc == 0 && r->reasoning) {
        rc = lt_buf_printf(b,
                           "{\"id\":\"rs_%llu\",\"type\":\"reasoning\",\"summary\":[],"
                           "\"content\":[{\"type\":\"reasoning_text\",\"text\":\"",
                           q);
        if (rc == 0)
            rc = put_words(b, 0, r->reasoning);
        if (rc == 0)
            rc = lt_buf_puts(b, "\"}]},");
    }
    if (rc == 0 && r->tool_call) {
        rc = lt_buf_printf(b,
                           "{\"id\":\"fc_%llu\",\"type\":\"function_call\",\"status\":"
                           "\"completed\",\"call_id\":\"call_%llu\",\"name\":%s,"
                           "\"arguments\":\"",
                           q, q, r->tool_name_json);
        for (uint32_t i = r->reasoning; rc == 0 && i < r->out; i++)
            rc = lt_buf_puts(b, tool_piece(r, i));
        if (rc == 0)
            rc = lt_buf_puts(b, "\"}");
    } else if (rc == 0) {
        rc = lt_buf_printf(b,
                           "{\"id\":\"msg_%llu\",\"type\":\"message\",\"status\":"
                           "\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":"
                           "\"output_text\",\"annotations\":[],\"text\":\"",
                           q);
        if (rc == 0)
            rc = put_words(b, r->reasoning, r->out);
        if (rc == 0)
            rc = lt_buf_puts(b, "\"}]}");
    }
    if (rc == 0)
        rc = lt_buf_printf(b,
                           "],\"usage\":{\"input_tokens\":%llu,\"input_tokens_details\":{"
                           "\"cached_tokens\":%u},\"output_tokens\":%llu,"
                           "\"output_tokens_details\":{\"reasoning_tokens\":%u},"
                           "\"total_tokens\":%llu}}",
                           usage_in(r), r->cached_tokens, usage_out(r), r->reasoning,
                           usage_total(r));
    return rc;
}

/* The whole Messages body. */
static int put_message(struct lt_buf *b, const struct lt_sim_resp *r)
{
    unsigned long long q = (unsigned long long)r->seq;
    int rc = lt_buf_printf(b,
                           "{\"id\":\"%s\",\"type\":\"message\",\"role\":\"assistant\","
                           "\"model\":%s,\"content\":[",
                           r->id, r->model_json);
    if (rc == 0 && r->reasoning) {
        rc = lt_buf_puts(b, "{\"type\":\"thinking\",\"signature\":\"\",\"thinking\":\"");
        if (rc == 0)
            rc = put_words(b, 0, r->reasoning);
        if (rc == 0)
            rc = lt_buf_puts(b, "\"},");
    }
    if (rc == 0 && r->tool_call) {
        rc = lt_buf_printf(b,
                           "{\"type\":\"tool_use\",\"id\":\"toolu_%llu\",\"name\":%s,\"input\":", q,
                           r->tool_name_json);
        if (rc == 0)
            rc = put_tool_object(b, r);
        if (rc == 0)
            rc = lt_buf_puts(b, "}");
    } else if (rc == 0) {
        rc = lt_buf_puts(b, "{\"type\":\"text\",\"text\":\"");
        if (rc == 0)
            rc = put_words(b, r->reasoning, r->out);
        if (rc == 0)
            rc = lt_buf_puts(b, "\"}");
    }
    if (rc == 0)
        rc = lt_buf_printf(b, "],\"stop_reason\":\"%s\",\"stop_sequence\":null,\"usage\":{",
                           stop_reason(r));
    if (rc == 0)
        rc = messages_input_usage(b, r);
    if (rc == 0)
        rc = lt_buf_printf(b, ",\"output_tokens\":%llu}}", usage_out(r));
    return rc;
}

static int typed_head(struct lt_buf *b, const struct lt_sim_resp *r)
{
    if (r->api == LT_SIM_RESPONSES)
        return lt_buf_printf(b,
                             "event: response.created\ndata: {\"type\":\"response.created\","
                             "\"sequence_number\":0,\"response\":{\"id\":\"%s\",\"object\":"
                             "\"response\",\"created_at\":%lld,\"status\":\"in_progress\","
                             "\"model\":%s,\"output\":[],\"usage\":null}}\n\n",
                             r->id, r->created, r->model_json);
    int rc = lt_buf_printf(b,
                           "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{"
                           "\"id\":\"%s\",\"type\":\"message\",\"role\":\"assistant\","
                           "\"model\":%s,\"content\":[],\"stop_reason\":null,"
                           "\"stop_sequence\":null,\"usage\":{",
                           r->id, r->model_json);
    if (rc == 0)
        rc = messages_input_usage(b, r);
    return rc ? rc : lt_buf_puts(b, ",\"output_tokens\":0}}}\n\n");
}

/* Token i of a Responses stream: the item's announcement when it is the
 * item's first, then its delta. */
static int responses_token(struct lt_buf *b, const struct lt_sim_resp *r, uint32_t i)
{
    unsigned long long q = (unsigned long long)r->seq;
    uint32_t k = block_of(r, i), sn = seq_of(r, i);
    bool reasoning = i < r->reasoning, tool = !reasoning && r->tool_call;
    int rc = 0;
    if (i == 0 || i == r->reasoning) {
        rc = lt_buf_printf(b,
                           "event: response.output_item.added\ndata: {\"type\":"
                           "\"response.output_item.added\",\"sequence_number\":%u,"
                           "\"output_index\":%u,\"item\":",
                           sn - 1, k);
        if (rc == 0 && reasoning)
            rc = lt_buf_printf(b, "{\"id\":\"rs_%llu\",\"type\":\"reasoning\",\"summary\":[]}}\n\n",
                               q);
        else if (rc == 0 && tool)
            rc = lt_buf_printf(b,
                               "{\"id\":\"fc_%llu\",\"type\":\"function_call\",\"status\":"
                               "\"in_progress\",\"call_id\":\"call_%llu\",\"name\":%s,"
                               "\"arguments\":\"\"}}\n\n",
                               q, q, r->tool_name_json);
        else if (rc == 0)
            rc = lt_buf_printf(b,
                               "{\"id\":\"msg_%llu\",\"type\":\"message\",\"status\":"
                               "\"in_progress\",\"role\":\"assistant\",\"content\":[]}}\n\n",
                               q);
    }
    const char *ev = reasoning ? "response.reasoning_text.delta"
                     : tool    ? "response.function_call_arguments.delta"
                               : "response.output_text.delta";
    if (rc == 0)
        rc = lt_buf_printf(b,
                           "event: %s\ndata: {\"type\":\"%s\",\"sequence_number\":%u,"
                           "\"item_id\":\"%s_%llu\",\"output_index\":%u,%s\"delta\":\"%s\"}\n\n",
                           ev, ev, sn,
                           reasoning ? "rs"
                           : tool    ? "fc"
                                     : "msg",
                           q, k, tool ? "" : "\"content_index\":0,",
                           tool ? tool_piece(r, i) : lt_sim_word(i));
    return rc;
}

/* Token i of a Messages stream: the block's start when it is the block's
 * first (after the stop of the block before), then its delta. */
static int messages_token(struct lt_buf *b, const struct lt_sim_resp *r, uint32_t i)
{
    uint32_t k = block_of(r, i);
    bool reasoning = i < r->reasoning, tool = !reasoning && r->tool_call;
    int rc = 0;
    if (i && i == r->reasoning)
        rc = lt_buf_puts(b, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\","
                            "\"index\":0}\n\n");
    if (rc == 0 && (i == 0 || i == r->reasoning)) {
        rc = lt_buf_printf(b,
                           "event: content_block_start\ndata: {\"type\":\"content_block_start\","
                           "\"index\":%u,\"content_block\":",
                           k);
        if (rc == 0 && reasoning)
            rc =
                lt_buf_puts(b, "{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n");
        else if (rc == 0 && tool)
            rc = lt_buf_printf(b,
                               "{\"type\":\"tool_use\",\"id\":\"toolu_%llu\",\"name\":%s,"
                               "\"input\":{}}}\n\n",
                               (unsigned long long)r->seq, r->tool_name_json);
        else if (rc == 0)
            rc = lt_buf_puts(b, "{\"type\":\"text\",\"text\":\"\"}}\n\n");
    }
    if (rc == 0)
        rc = lt_buf_printf(b,
                           "event: content_block_delta\ndata: {\"type\":\"content_block_delta\","
                           "\"index\":%u,\"delta\":{\"type\":\"%s\",\"%s\":\"%s\"}}\n\n",
                           k,
                           reasoning ? "thinking_delta"
                           : tool    ? "input_json_delta"
                                     : "text_delta",
                           reasoning ? "thinking"
                           : tool    ? "partial_json"
                                     : "text",
                           tool ? tool_piece(r, i) : lt_sim_word(i));
    return rc;
}

static int typed_tail(struct lt_buf *b, const struct lt_sim_resp *r)
{
    int rc;
    if (r->api == LT_SIM_RESPONSES) {
        const char *ev =
            !strcmp(r->finish, "length") ? "response.incomplete" : "response.completed";
        rc = lt_buf_printf(b,
                           "event: %s\ndata: {\"type\":\"%s\",\"sequence_number\":%u,"
                           "\"response\":",
                           ev, ev, seq_of(r, r->out));
        if (rc == 0)
            rc = put_response(b, r);
        return rc ? rc : lt_buf_puts(b, "}\n\n");
    }
    return lt_buf_printf(b,
                         "event: content_block_stop\ndata: {\"type\":\"content_block_stop\","
                         "\"index\":%u}\n\nevent: message_delta\ndata: {\"type\":"
                         "\"message_delta\",\"delta\":{\"stop_reason\":\"%s\","
                         "\"stop_sequence\":null},\"usage\":{\"output_tokens\":%llu}}\n\n"
                         "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
                         block_of(r, r->out - 1), stop_reason(r), usage_out(r));
}

/* ---- chat and completions ---- */

int lt_sim_render_head(struct lt_buf *b, const struct lt_sim_resp *r)
{
    if (typed(r))
        return typed_head(b, r);
    if (r->api != LT_SIM_CHAT || !r->d->role_chunk)
        return 0;
    int rc = chunk_open(b, r);
    if (rc == 0)
        rc = lt_buf_puts(b, "{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
                            "\"logprobs\":null,\"finish_reason\":null}]}\n\n");
    return rc;
}

/* The piece of the tool call's arguments carried by token i. */
static const char *tool_piece(const struct lt_sim_resp *r, uint32_t i)
{
    uint32_t j = i - r->reasoning, n = r->out - r->reasoning;
    if (j == 0)
        return n == 1 ? "{}" : "{\\\"q\\\": \\\"";
    if (j == n - 1)
        return "\\\"}";
    return lt_sim_word(i);
}

int lt_sim_render_token(struct lt_buf *b, const struct lt_sim_resp *r, uint32_t i, bool malformed)
{
    if (typed(r) && malformed)
        return lt_buf_printf(b, "data: {\"type\":\"%s\",\"delta\":\"%s\"\n\n",
                             r->api == LT_SIM_RESPONSES ? "response.output_text.delta"
                                                        : "content_block_delta",
                             lt_sim_word(i));
    if (r->api == LT_SIM_RESPONSES)
        return responses_token(b, r, i);
    if (r->api == LT_SIM_MESSAGES)
        return messages_token(b, r, i);
    if (r->bad_choices && i == r->bad_choices_at)
        return lt_buf_printf(b,
                             "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,"
                             "\"model\":%s,\"choices\":\"nope\"}\n\n",
                             r->id,
                             r->api == LT_SIM_CHAT ? "chat.completion.chunk" : "text_completion",
                             r->created, r->model_json);
    int rc = chunk_open(b, r);
    if (rc < 0)
        return rc;
    if (malformed)
        return lt_buf_printf(b, "{\"index\":0,\"delta\":{\"content\":\"%s\"\n\n", lt_sim_word(i));
    bool last = i + 1 >= r->out;
    if (r->api == LT_SIM_COMPLETIONS) {
        rc = lt_buf_printf(b, "{\"index\":0,\"text\":\"%s\",\"logprobs\":null,", lt_sim_word(i));
    } else {
        rc = lt_buf_puts(b, "{\"index\":0,\"delta\":{");
        if (rc == 0 && i == 0 && !r->d->role_chunk)
            rc = lt_buf_puts(b, "\"role\":\"assistant\",");
        if (rc < 0)
            return rc;
        if (i < r->reasoning)
            rc = lt_buf_printf(b, "\"%s\":\"%s\"", rkey(r), lt_sim_word(i));
        else if (r->tool_call && i == r->reasoning)
            rc = lt_buf_printf(b,
                               "\"tool_calls\":[{\"index\":0,\"id\":\"call_%llu\",\"type\":"
                               "\"function\",\"function\":{\"name\":%s,\"arguments\":\"%s\"}}]",
                               (unsigned long long)r->seq, r->tool_name_json, tool_piece(r, i));
        else if (r->tool_call)
            rc = lt_buf_printf(b,
                               "\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"%s\"}}]",
                               tool_piece(r, i));
        else
            rc = lt_buf_printf(b, "\"content\":\"%s\"", lt_sim_word(i));
        if (rc == 0)
            rc = lt_buf_puts(b, "},\"logprobs\":null,");
    }
    if (rc == 0 && last)
        rc = lt_buf_printf(b, "\"finish_reason\":\"%s\"}]", r->finish);
    else if (rc == 0)
        rc = lt_buf_puts(b, "\"finish_reason\":null}]");
    if (rc == 0 && last && r->include_usage && r->d->usage_in_last) {
        rc = lt_buf_puts(b, ",");
        if (rc == 0)
            rc = put_usage(b, r);
    }
    if (rc == 0 && last)
        rc = put_timings(b, r);
    if (rc == 0)
        rc = lt_buf_puts(b, "}\n\n");
    return rc;
}

int lt_sim_render_tail(struct lt_buf *b, const struct lt_sim_resp *r)
{
    if (typed(r))
        return typed_tail(b, r);
    int rc = 0;
    if (r->include_usage && !r->d->usage_in_last) {
        rc = chunk_open(b, r);
        if (rc == 0)
            rc = lt_buf_puts(b, "],");
        if (rc == 0)
            rc = put_usage(b, r);
        if (rc == 0)
            rc = put_timings(b, r);
        if (rc == 0)
            rc = lt_buf_puts(b, "}\n\n");
    }
    if (rc == 0)
        rc = lt_buf_puts(b, "data: [DONE]\n\n");
    return rc;
}

/* An embeddings answer: one vector of embed_dim values per input, drawn
 * from the request and the input (unit length is not promised). */
static int put_embeddings(struct lt_buf *b, const struct lt_sim_resp *r)
{
    int rc = lt_buf_puts(b, "{\"object\":\"list\",\"data\":[");
    for (uint32_t i = 0; rc == 0 && i < r->inputs; i++) {
        rc = lt_buf_printf(b, "%s{\"object\":\"embedding\",\"index\":%u,\"embedding\":[",
                           i ? "," : "", i);
        uint64_t h = lt_mix64(r->seq * 1000003u + i);
        for (uint32_t k = 0; rc == 0 && k < r->embed_dim; k++) {
            h = lt_mix64(h + k);
            rc = lt_buf_printf(b, k ? ",%.4f" : "%.4f",
                               ((double)(h >> 11) / 9007199254740992.0) - 0.5);
        }
        if (rc == 0)
            rc = lt_buf_puts(b, "]}");
    }
    if (rc == 0)
        rc = lt_buf_printf(b,
                           "],\"model\":%s,\"usage\":{\"prompt_tokens\":%llu,\"total_tokens\":"
                           "%llu}}",
                           r->model_json, usage_in(r), usage_in(r));
    return rc;
}

/* A rerank answer (Jina's and Cohere's shape, as vLLM serves it): the
 * documents by relevance, highest first, top_n of them. */
static int put_rerank(struct lt_buf *b, const struct lt_sim_resp *r)
{
    int rc = lt_buf_printf(b,
                           "{\"id\":\"%s\",\"model\":%s,\"usage\":{\"prompt_tokens\":%llu,"
                           "\"total_tokens\":%llu},\"results\":[",
                           r->id, r->model_json, usage_in(r), usage_in(r));
    uint32_t n = r->top_n && r->top_n < r->inputs ? r->top_n : r->inputs;
    /* scores falling with the rank; which document has which rank is drawn */
    uint64_t h = lt_mix64(r->seq);
    for (uint32_t k = 0; rc == 0 && k < n; k++) {
        uint32_t idx = (uint32_t)((h + (uint64_t)k * 7919u) % r->inputs);
        if (r->inputs % 7919u == 0)
            idx = k;
        rc = lt_buf_printf(b, "%s{\"index\":%u,\"relevance_score\":%.6f}", k ? "," : "", idx,
                           1.0 / (1.0 + k));
    }
    return rc == 0 ? lt_buf_puts(b, "]}") : rc;
}

int lt_sim_render_full(struct lt_buf *b, const struct lt_sim_resp *r)
{
    int rc;
    if (r->api == LT_SIM_EMBEDDINGS)
        return put_embeddings(b, r);
    if (r->api == LT_SIM_RERANK)
        return put_rerank(b, r);
    if (r->api == LT_SIM_RESPONSES)
        return put_response(b, r);
    if (r->api == LT_SIM_MESSAGES)
        return put_message(b, r);
    if (r->bad_choices) {
        rc = lt_buf_printf(b,
                           "{\"id\":\"%s\",\"object\":\"%s\",\"created\":%lld,\"model\":%s,"
                           "\"choices\":\"nope\",",
                           r->id, r->api == LT_SIM_CHAT ? "chat.completion" : "text_completion",
                           r->created, r->model_json);
    } else if (r->api == LT_SIM_COMPLETIONS) {
        rc = lt_buf_printf(b,
                           "{\"id\":\"%s\",\"object\":\"text_completion\",\"created\":%lld,"
                           "\"model\":%s,\"choices\":[{\"index\":0,\"text\":\"",
                           r->id, r->created, r->model_json);
        if (rc == 0)
            rc = put_words(b, 0, r->out);
        if (rc == 0)
            rc = lt_buf_printf(b, "\",\"logprobs\":null,\"finish_reason\":\"%s\"}],", r->finish);
    } else {
        rc = lt_buf_printf(b,
                           "{\"id\":\"%s\",\"object\":\"chat.completion\",\"created\":%lld,"
                           "\"model\":%s,\"choices\":[{\"index\":0,\"message\":{\"role\":"
                           "\"assistant\",\"content\":",
                           r->id, r->created, r->model_json);
        if (rc == 0 && r->tool_call) {
            rc = lt_buf_puts(b, "null");
        } else if (rc == 0) {
            rc = lt_buf_puts(b, "\"");
            if (rc == 0)
                rc = put_words(b, r->reasoning, r->out);
            if (rc == 0)
                rc = lt_buf_puts(b, "\"");
        }
        if (rc == 0 && r->reasoning) {
            rc = lt_buf_printf(b, ",\"%s\":\"", rkey(r));
            if (rc == 0)
                rc = put_words(b, 0, r->reasoning);
            if (rc == 0)
                rc = lt_buf_puts(b, "\"");
        }
        if (rc == 0 && r->tool_call) {
            rc = lt_buf_printf(b,
                               ",\"tool_calls\":[{\"id\":\"call_%llu\",\"type\":\"function\","
                               "\"function\":{\"name\":%s,\"arguments\":\"",
                               (unsigned long long)r->seq, r->tool_name_json);
            for (uint32_t i = r->reasoning; rc == 0 && i < r->out; i++)
                rc = lt_buf_puts(b, tool_piece(r, i));
            if (rc == 0)
                rc = lt_buf_puts(b, "\"}}]");
        }
        if (rc == 0)
            rc = lt_buf_printf(b, "},\"logprobs\":null,\"finish_reason\":\"%s\"}],", r->finish);
    }
    if (rc == 0)
        rc = put_usage(b, r);
    if (rc == 0 && !r->bad_choices)
        rc = put_timings(b, r);
    if (rc == 0)
        rc = lt_buf_puts(b, "}");
    return rc;
}
