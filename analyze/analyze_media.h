/*
 * A run's figures split by modality mix (docs/metrics.md "By modality"):
 * text only, with one image, with several, with audio, with video. A
 * result says its images in its extra keys "img" (count) and "img_tok"
 * (the image tokens its trace recorded), its audio and video in "aud",
 * "vid" (counts) and "av_tok" (their tokens), which replay writes; a
 * result without them is text only. A request with a video is "video"
 * whatever else it carries, else one with audio "audio", else it is
 * classed by its images.
 * Per class: requests, Ok, errors, TTFT and E2E percentiles, requests,
 * prompt, image and output tokens per second over the class's own span.
 */
#ifndef LT_ANALYZE_MEDIA_H
#define LT_ANALYZE_MEDIA_H

#include "analyze/analyze.h"

#include <stdio.h>

#define LT_ANALYZE_MODS 5 /* text, one image, several images, audio, video */

struct lt_analyze_mod {
    uint64_t results, ok, errors;
    uint64_t images, in_tokens, img_tokens, av_tokens, out_tokens; /* Ok requests' */
    struct lt_hist *ttft, *e2e;                                    /* Ok requests', µs */
    int64_t first_sent, last_end;
};

struct lt_analyze_mods {
    struct lt_analyze_mod m[LT_ANALYZE_MODS];
    bool any_media;
    /* embeddings and rerank results (their "inputs" key): Ok ones, their
     * inputs and prompt tokens, E2E, and the span */
    uint64_t in_results, in_ok, inputs, in_prompt;
    struct lt_hist *in_e2e;
    int64_t in_first, in_last;
};

/* "text", "one_image", "several_images", "audio", "video". */
const char *lt_analyze_mod_name(int k);

/* Count res (outcome ok or not) into r's split, made on first use.
 * Returns 0 or LT_ENOMEM. */
int lt_analyze_media_add(struct lt_analyze_run *r, const struct lt_result *res, bool ok,
                         int hist_bits, struct lt_err *err);
void lt_analyze_media_release(struct lt_analyze_run *r);

/* The split, as text lines and as the run's "modality" JSON member (with
 * its leading comma); nothing for a run without images. With embeddings
 * or rerank results, a line of inputs/s and tokens/s too (JSON "inputs"). */
void lt_analyze_media_text(const struct lt_analyze_run *r, FILE *out);
void lt_analyze_media_json(const struct lt_analyze_run *r, FILE *out);

#endif
