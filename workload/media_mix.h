/*
 * Media parts made up by synth (docs/synth.md "Images"): `--images` draws
 * a share of requests with images of a given size, and `--servegen` on a
 * multimodal folder draws each request's image, audio and video tokens and
 * counts, which become parts of a size that carries about those tokens.
 * Either way a part's `tokens` is what the rule below gives, and the
 * record's `in` counts them (as servers' prompt_tokens do).
 */
#ifndef LT_MEDIA_MIX_H
#define LT_MEDIA_MIX_H

#include "base/lt_err.h"
#include "base/lt_rng.h"
#include "traces/trace_media.h"

#include <stdint.h>

/* The image token rule synth records with: Qwen2-VL's (the sim's default
 * profile): 2 + one token per 28 x 28 pixels. */
uint32_t lt_media_mix_image_tokens(uint32_t w, uint32_t h);

/* An image of about `tokens` tokens by that rule, 4:3 (at least 28 x 28),
 * in format fmt; its tokens set by the rule from its size. */
void lt_media_mix_image_for(uint32_t tokens, const char *fmt, struct lt_media *p);

/* --images SHARE:COUNT:WxH[:FMT] */
struct lt_media_mix {
    double share;                /* of requests with images; 0: off */
    uint32_t count_lo, count_hi; /* images per such request, uniform in [lo, hi] */
    uint32_t w, h;
    char fmt[8]; /* "jpeg" (default) or "png" */
};

/* Parse s ("0.3:1:640x480", "0.5:1-4:1024x768:png"). LT_EUSAGE with err
 * filled when it is not one. */
int lt_media_mix_parse(const char *s, struct lt_media_mix *m, struct lt_err *err);

/* Draw one request's images (none when it draws no images): v[0..*n),
 * their tokens added up in *tokens. */
void lt_media_mix_draw(const struct lt_media_mix *m, struct lt_rng *rng, struct lt_media *v,
                       uint32_t *n, uint64_t *tokens);

#endif
