/*
 * Synth's media parts (media_mix.h).
 */
#include "workload/media_mix.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t lt_media_mix_image_tokens(uint32_t w, uint32_t h)
{
    return 2 + ((w + 27) / 28) * ((h + 27) / 28);
}

void lt_media_mix_image_for(uint32_t tokens, const char *fmt, struct lt_media *p)
{
    memset(p, 0, sizeof *p);
    p->kind = LT_MEDIA_IMAGE;
    snprintf(p->fmt, sizeof p->fmt, "%s", fmt);
    double tiles = tokens > 3 ? (double)tokens - 2 : 1;
    /* w/28 * h/28 = tiles with w:h = 4:3 */
    double hw = sqrt(tiles * 3.0 / 4.0);
    uint32_t tw = (uint32_t)fmax(1, floor(tiles / fmax(1, floor(hw + 0.5)) + 0.5));
    uint32_t th = (uint32_t)fmax(1, floor(hw + 0.5));
    if ((double)tw * 28 > LT_MEDIA_SIDE_MAX)
        tw = LT_MEDIA_SIDE_MAX / 28;
    if ((double)th * 28 > LT_MEDIA_SIDE_MAX)
        th = LT_MEDIA_SIDE_MAX / 28;
    p->w = tw * 28;
    p->h = th * 28;
    p->tokens = lt_media_mix_image_tokens(p->w, p->h);
}

int lt_media_mix_parse(const char *s, struct lt_media_mix *m, struct lt_err *err)
{
    memset(m, 0, sizeof *m);
    snprintf(m->fmt, sizeof m->fmt, "jpeg");
    char *e;
    m->share = strtod(s, &e);
    if (e == s || *e != ':' || !(m->share > 0 && m->share <= 1))
        goto bad;
    const char *q = e + 1;
    unsigned long lo = strtoul(q, &e, 10), hi = lo;
    if (e == q || lo < 1 || lo > LT_MEDIA_MAX)
        goto bad;
    if (*e == '-') {
        q = e + 1;
        hi = strtoul(q, &e, 10);
        if (e == q || hi < lo || hi > LT_MEDIA_MAX)
            goto bad;
    }
    if (*e != ':')
        goto bad;
    q = e + 1;
    unsigned long w = strtoul(q, &e, 10);
    if (e == q || *e != 'x' || w < 1 || w > LT_MEDIA_SIDE_MAX)
        goto bad;
    q = e + 1;
    unsigned long h = strtoul(q, &e, 10);
    if (e == q || h < 1 || h > LT_MEDIA_SIDE_MAX || (*e && *e != ':'))
        goto bad;
    if (*e == ':') {
        if (strcmp(e + 1, "png") && strcmp(e + 1, "jpeg"))
            goto bad;
        snprintf(m->fmt, sizeof m->fmt, "%s", e + 1);
    }
    m->count_lo = (uint32_t)lo;
    m->count_hi = (uint32_t)hi;
    m->w = (uint32_t)w;
    m->h = (uint32_t)h;
    return 0;
bad:
    return lt_errset(err, LT_EUSAGE,
                     "--images '%s': expected SHARE:COUNT:WxH[:FMT], e.g. 0.3:1-3:640x480:jpeg "
                     "(share 0 to 1, count 1 to %u or A-B, sides 1 to 65535, png or jpeg)",
                     s, (unsigned)LT_MEDIA_MAX);
}

void lt_media_mix_draw(const struct lt_media_mix *m, struct lt_rng *rng, struct lt_media *v,
                       uint32_t *n, uint64_t *tokens)
{
    *n = 0;
    *tokens = 0;
    if (!(m->share > 0) || lt_rng_uniform(rng) >= m->share)
        return;
    uint32_t k = m->count_lo + (uint32_t)lt_rng_below(rng, m->count_hi - m->count_lo + 1);
    for (uint32_t i = 0; i < k; i++) {
        struct lt_media *p = &v[i];
        memset(p, 0, sizeof *p);
        p->kind = LT_MEDIA_IMAGE;
        snprintf(p->fmt, sizeof p->fmt, "%s", m->fmt);
        p->w = m->w;
        p->h = m->h;
        p->tokens = lt_media_mix_image_tokens(m->w, m->h);
        *tokens += p->tokens;
    }
    *n = k;
}
