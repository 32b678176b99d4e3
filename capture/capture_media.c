/*
 * Media parts of a captured request (capture_media.h). An image whose data
 * cannot be read is still recorded, as an image of unknown size: the
 * request was made, and replay then sends an image of its default size.
 */
#include "capture/capture_media.h"

#include "base/lt_image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A note that stands where data was: its size, never its bytes. */
static json_t *note(uint64_t bytes)
{
    char s[64];
    snprintf(s, sizeof s, "[%llu bytes not kept by loadtrace capture]", (unsigned long long)bytes);
    return json_string(s);
}

static void set_fmt(struct lt_media *p, const char *s, size_t n)
{
    if (n >= sizeof p->fmt)
        n = sizeof p->fmt - 1;
    memcpy(p->fmt, s, n);
    p->fmt[n] = 0;
}

/* An image given as URL string u (held in obj under key): its shape into p,
 * and the URL scrubbed in place. */
static void image_url(struct lt_media *p, json_t *obj, const char *key, json_t *u)
{
    const char *s = json_string_value(u);
    size_t n = json_string_length(u);
    p->kind = LT_MEDIA_IMAGE;
    if (n >= 5 && !strncmp(s, "data:", 5)) {
        struct lt_img_head h;
        uint64_t bytes = 0;
        struct lt_err err;
        const char *mime = "", *data = NULL;
        size_t mn = 0, dn = 0;
        if (lt_data_url(s, n, &mime, &mn, &data, &dn, &err) < 0) {
            mime = ""; /* a broken data URL: its note says no type */
            mn = 0;
        } else {
            bytes = lt_b64_decoded_len(data, dn);
            enum lt_img_fmt f = lt_img_fmt_of(mime, mn);
            if (f)
                set_fmt(p, lt_img_fmt_name(f), strlen(lt_img_fmt_name(f)));
        }
        if (lt_img_data_url(s, n, &h, &bytes, &err) == 0) {
            p->w = h.w;
            p->h = h.h;
            set_fmt(p, lt_img_fmt_name(h.fmt), strlen(lt_img_fmt_name(h.fmt)));
        }
        p->bytes = bytes;
        char head[64];
        snprintf(head, sizeof head, "data:%.*s;base64,", (int)(mn < 32 ? mn : 32), mime);
        json_t *nt = note(bytes);
        char *both = malloc(strlen(head) + json_string_length(nt) + 1);
        if (both) {
            memcpy(both, head, strlen(head));
            memcpy(both + strlen(head), json_string_value(nt), json_string_length(nt) + 1);
            json_object_set_new(obj, key, json_string(both));
            free(both);
        } else {
            json_object_set_new(obj, key, json_string("data:"));
        }
        json_decref(nt);
        return;
    }
    p->link = true;
    /* the format a link's path says, and the link without its query */
    const char *q = memchr(s, '?', n);
    const char *hash = memchr(s, '#', n);
    size_t path_n = q ? (size_t)(q - s) : hash ? (size_t)(hash - s) : n;
    const char *dot = NULL;
    for (size_t i = path_n; i-- > 0 && s[i] != '/';)
        if (s[i] == '.') {
            dot = s + i + 1;
            break;
        }
    if (dot) {
        enum lt_img_fmt f = lt_img_fmt_of(dot, (size_t)(s + path_n - dot));
        if (f)
            set_fmt(p, lt_img_fmt_name(f), strlen(lt_img_fmt_name(f)));
    }
    if (path_n < n) {
        char *cut = malloc(path_n + 1);
        if (cut) {
            memcpy(cut, s, path_n);
            cut[path_n] = 0;
            json_object_set_new(obj, key, json_string(cut));
            free(cut);
        }
    }
}

/* chat's {"type":"input_audio","input_audio":{"data":..,"format":"wav"}} */
static void audio(struct lt_media *p, json_t *ia)
{
    p->kind = LT_MEDIA_AUDIO;
    const char *fmt = json_string_value(json_object_get(ia, "format"));
    if (fmt)
        set_fmt(p, fmt, strlen(fmt));
    json_t *d = json_object_get(ia, "data");
    if (!json_is_string(d))
        return;
    const char *s = json_string_value(d);
    size_t n = json_string_length(d);
    p->bytes = lt_b64_decoded_len(s, n);
    uint8_t head[4096];
    size_t got = 0;
    struct lt_err err;
    size_t take = n < sizeof head / 3 * 4 ? n / 4 * 4 : sizeof head / 3 * 4;
    if (lt_b64_decode(s, take, head, sizeof head, &got, &err) == 0)
        p->dur = lt_wav_duration_us(head, got, p->bytes);
    json_object_set_new(ia, "data", note(p->bytes));
}

static void scan_parts(json_t *content, struct lt_media *v, uint32_t max, uint32_t *n)
{
    size_t i;
    json_t *part;
    json_array_foreach(content, i, part)
    {
        const char *type = json_string_value(json_object_get(part, "type"));
        if (!type)
            continue;
        struct lt_media tmp, *p = *n < max ? &v[*n] : &tmp;
        memset(p, 0, sizeof *p);
        if (!strcmp(type, "image_url") || !strcmp(type, "input_image")) {
            json_t *u = json_object_get(part, "image_url");
            if (json_is_object(u))
                image_url(p, u, "url", json_object_get(u, "url"));
            else if (json_is_string(u))
                image_url(p, part, "image_url", u);
            else
                p->kind = LT_MEDIA_IMAGE;
        } else if (!strcmp(type, "image")) {
            json_t *src = json_object_get(part, "source");
            const char *st = json_string_value(json_object_get(src, "type"));
            json_t *d = json_object_get(src, st && !strcmp(st, "url") ? "url" : "data");
            p->kind = LT_MEDIA_IMAGE;
            if (st && !strcmp(st, "url") && json_is_string(d)) {
                image_url(p, src, "url", d);
            } else if (json_is_string(d)) {
                /* a data URL of its parts, read as chat's are */
                const char *mt = json_string_value(json_object_get(src, "media_type"));
                size_t len = 5 + (mt ? strlen(mt) : 0) + 8 + json_string_length(d) + 1;
                char *u = malloc(len);
                if (u) {
                    snprintf(u, len, "data:%s;base64,%s", mt ? mt : "", json_string_value(d));
                    json_t *tmpo = json_object();
                    json_t *us = json_string(u);
                    image_url(p, tmpo, "url", us);
                    json_decref(us);
                    json_decref(tmpo);
                    free(u);
                }
                json_object_set_new(src, "data", note(p->bytes));
            }
        } else if (!strcmp(type, "input_audio")) {
            audio(p, json_object_get(part, "input_audio"));
        } else {
            continue;
        }
        if (p != &tmp)
            (*n)++;
    }
}

void lt_capture_media_scan(json_t *req, struct lt_media *v, uint32_t max, uint32_t *n)
{
    *n = 0;
    static const char *const lists[] = {"messages", "input"};
    for (size_t l = 0; l < 2; l++) {
        json_t *list = json_object_get(req, lists[l]);
        if (!json_is_array(list))
            continue;
        size_t i;
        json_t *m;
        json_array_foreach(list, i, m)
        {
            json_t *c = json_object_get(m, "content");
            if (json_is_array(c))
                scan_parts(c, v, max, n);
        }
    }
}
