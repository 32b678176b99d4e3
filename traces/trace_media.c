/*
 * The "media" key of a record: packing and reading its part maps. Built in
 * the reader's unit (CMakeLists.txt) for its cursor: the extra bytes it
 * reads were scanned by the reader (or packed by lt_mp), so they are
 * well-formed msgpack and need no bounds checks beyond the counts.
 */
#include "traces/trace_media.h"

#include "traces/reader_internal.h"

#include <string.h>

static const char *const media_kinds[] = {NULL, "image", "audio", "video"};

void lt_media_video_shape(const struct lt_media *p, uint32_t *w, uint32_t *h, uint32_t *frames,
                          int64_t *frame_us)
{
    *w = p->w ? p->w : LT_MEDIA_SIDE_UNKNOWN;
    *h = p->h ? p->h : LT_MEDIA_SIDE_UNKNOWN;
    uint64_t f = p->frames;
    if (!f && p->dur > 0)
        f = ((uint64_t)p->dur * LT_MEDIA_VIDEO_FPS + 500000) / 1000000;
    if (!f)
        f = 2;
    *frames = f > UINT32_MAX ? UINT32_MAX : (uint32_t)f;
    *frame_us = p->dur > 0 ? p->dur / (int64_t)*frames : 1000000 / LT_MEDIA_VIDEO_FPS;
    if (*frame_us < 1)
        *frame_us = 1;
}

const char *lt_media_kind_name(unsigned kind)
{
    return kind < sizeof media_kinds / sizeof *media_kinds ? media_kinds[kind] : NULL;
}

unsigned lt_media_kind_of(const char *s, size_t n)
{
    for (unsigned k = 1; k < sizeof media_kinds / sizeof *media_kinds; k++)
        if (strlen(media_kinds[k]) == n && !memcmp(media_kinds[k], s, n))
            return k;
    return 0;
}

uint32_t lt_media_images(const struct lt_media *v, uint32_t n, uint64_t *tokens)
{
    uint32_t k = 0;
    uint64_t t = 0;
    for (uint32_t i = 0; i < n; i++)
        if (v[i].kind == LT_MEDIA_IMAGE) {
            k++;
            t += v[i].tokens;
        }
    if (tokens)
        *tokens = t;
    return k;
}

int lt_media_pack(struct lt_mp *m, const struct lt_media *v, uint32_t n)
{
    if (!n)
        return m->rc;
    lt_mp_cstr(m, LT_MEDIA_KEY);
    lt_mp_array(m, n);
    for (uint32_t i = 0; i < n; i++) {
        const struct lt_media *p = &v[i];
        uint32_t keys = 1 + (p->link ? 1 : 0) + (p->fmt[0] ? 1 : 0) + (p->w ? 1 : 0) +
                        (p->h ? 1 : 0) + (p->bytes ? 1 : 0) + (p->tokens ? 1 : 0) +
                        (p->dur ? 1 : 0) + (p->frames ? 1 : 0);
        lt_mp_map(m, keys);
        const char *kn = lt_media_kind_name(p->kind);
        lt_mp_cstr(m, "kind");
        lt_mp_cstr(m, kn ? kn : "");
        if (p->fmt[0]) {
            lt_mp_cstr(m, "fmt");
            lt_mp_str(m, p->fmt, strnlen(p->fmt, sizeof p->fmt));
        }
        if (p->link) {
            lt_mp_cstr(m, "link");
            lt_mp_bool(m, true);
        }
#define PUT(name, field)                                                                           \
    if (p->field) {                                                                                \
        lt_mp_cstr(m, name);                                                                       \
        lt_mp_uint(m, (uint64_t)p->field);                                                         \
    }
        PUT("w", w)
        PUT("h", h)
        PUT("bytes", bytes)
        PUT("tokens", tokens)
        PUT("dur", dur)
        PUT("frames", frames)
#undef PUT
    }
    return m->rc;
}

static int media_bad(struct lt_err *err, uint32_t i, const char *what)
{
    return lt_errset(err, LT_EFORMAT, "media part %u: %s", (unsigned)i + 1, what);
}

/* One part map at c into p. */
static int read_part(struct cur *c, uint32_t i, struct lt_media *p, struct lt_err *err)
{
    uint32_t keys;
    memset(p, 0, sizeof *p);
    if (!lt__rd_coll(c, true, &keys))
        return media_bad(err, i, "is not a map");
    for (uint32_t k = 0; k < keys; k++) {
        const uint8_t *key, *s;
        uint32_t kn, sn;
        if (!lt__rd_str(c, &key, &kn))
            return media_bad(err, i, "has a key that is not a string");
#define IS(name) (kn == sizeof name - 1 && !memcmp(key, name, kn))
        if (IS("kind") || IS("fmt")) {
            if (!lt__rd_str(c, &s, &sn))
                return media_bad(err, i,
                                 IS("kind") ? "kind is not a string" : "fmt is not a string");
            if (IS("kind")) {
                p->kind = (uint8_t)lt_media_kind_of((const char *)s, sn);
                if (!p->kind)
                    return media_bad(err, i, "kind is not image, audio or video");
            } else {
                if (sn >= sizeof p->fmt)
                    return media_bad(err, i, "fmt is longer than 7 bytes");
                memcpy(p->fmt, s, sn);
                p->fmt[sn] = 0;
            }
            continue;
        }
        if (IS("link")) {
            if (c->p[0] != 0xc2 && c->p[0] != 0xc3)
                return media_bad(err, i, "link is not true or false");
            p->link = c->p[0] == 0xc3;
            c->p++;
            continue;
        }
        uint64_t u;
        int64_t sv;
        bool known = IS("w") || IS("h") || IS("bytes") || IS("tokens") || IS("dur") || IS("frames");
        if (!known) { /* a key a newer loadtrace added: skipped */
            lt__rd_skip_value(c);
            continue;
        }
        if (lt__rd_int(c, &u, &sv) != 1)
            return media_bad(err, i, "has a size that is not a whole number >= 0");
        if ((IS("w") || IS("h")) && u > LT_MEDIA_SIDE_MAX)
            return media_bad(err, i, "has a side over 65535 pixels");
        if ((IS("tokens") || IS("frames")) && u > UINT32_MAX)
            return media_bad(err, i, "has a count over 4294967295");
        if (IS("dur") && u > INT64_MAX)
            return media_bad(err, i, "has a duration out of range");
        if (IS("w"))
            p->w = (uint32_t)u;
        else if (IS("h"))
            p->h = (uint32_t)u;
        else if (IS("bytes"))
            p->bytes = u;
        else if (IS("tokens"))
            p->tokens = (uint32_t)u;
        else if (IS("dur"))
            p->dur = (int64_t)u;
        else
            p->frames = (uint32_t)u;
#undef IS
    }
    if (!p->kind)
        return media_bad(err, i, "has no kind");
    return 0;
}

int lt_media_read(const struct lt_extra *x, struct lt_media *v, uint32_t max, uint32_t *n,
                  struct lt_err *err)
{
    *n = 0;
    if (!x || !x->n || !x->len)
        return 0;
    struct cur c = {x->data};
    for (uint32_t i = 0; i < x->n; i++) {
        const uint8_t *k;
        uint32_t kn;
        if (!lt__rd_str(&c, &k, &kn))
            return lt_errset(err, LT_EFORMAT, "a record key is not a string");
        if (kn != sizeof LT_MEDIA_KEY - 1 || memcmp(k, LT_MEDIA_KEY, kn)) {
            lt__rd_skip_value(&c);
            continue;
        }
        uint32_t parts;
        if (!lt__rd_coll(&c, false, &parts))
            return lt_errset(err, LT_EFORMAT, "media is not an array");
        if (parts > max)
            return lt_errset(err, LT_EFORMAT, "media has %u parts, more than %u", (unsigned)parts,
                             (unsigned)max);
        for (uint32_t j = 0; j < parts; j++) {
            int rc = read_part(&c, j, &v[j], err);
            if (rc < 0)
                return rc;
        }
        *n = parts;
        return 0;
    }
    return 0;
}
