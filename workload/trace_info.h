/*
 * What is in a trace: span, rate, burstiness, timestamp rounding, token
 * lengths, failures, sessions, prefix reuse, models and APIs, computed in one
 * streaming pass over the records (`loadtrace info`, and the fit of
 * `loadtrace synth --fit`).
 *
 * Memory is bounded (a few fixed-size histograms and counters) except for
 * two sets that grow with the trace's content: the ids of the prefix blocks
 * seen so far (an unlimited prefix cache: 34-68 bytes per distinct block)
 * and the ids of the sessions seen (as much per session).
 * docs/info.md defines every figure.
 *
 * Use: lt_info_init, lt_info_add for each record in arrival order,
 * lt_info_finish, read the fields, lt_info_release. Or lt_info_compute for
 * a whole file.
 */
#ifndef LT_TRACE_INFO_H
#define LT_TRACE_INFO_H

#include "base/lt_err.h"
#include "base/lt_hist.h"
#include "traces/trace_format.h"

#include <stdint.h>

#define LT_INFO_NAMES_MAX 32
#define LT_INFO_NAME_LEN 64

/* A model or API name and the number of records that named it. */
struct lt_info_name {
    char name[LT_INFO_NAME_LEN];
    uint64_t count;
};

/* Token lengths of one kind, over the records that carry the field. */
struct lt_info_len {
    struct lt_hist *h; /* values, for percentiles */
    uint64_t sum;      /* exact total */
};

struct lt_info_state;

struct lt_info {
    uint64_t records;
    int64_t t_first, t_last; /* arrival of the first and last record, us */
    double span_s;           /* (t_last - t_first) in seconds */
    double rate;             /* (records - 1) / span: arrivals per second; 0 if span is 0 */

    /* Gaps between consecutive arrivals (records - 1 of them), us. */
    double gap_mean_us, gap_sd_us; /* population sd */
    double gap_cv;                 /* sd / mean; 0 when the mean is 0 */
    struct lt_hist *gaps;
    uint64_t out_of_order; /* records earlier than their predecessor (not in gaps) */

    /* Most arrivals in one second / one minute, counted in bins aligned to
     * the first arrival: [t_first + k s, t_first + (k+1) s). */
    uint64_t peak_sec, peak_min;
    double peak_sec_at_s, peak_min_at_s; /* start of the busiest bin, s from t_first */

    /* Timestamp rounding: the largest power of ten (1 us .. 1 s) dividing
     * every t - t_first, and how many records share their t with another. */
    int64_t granularity_us;
    uint64_t distinct_t;
    uint64_t shared_t;   /* records whose t equals another record's */
    uint64_t max_same_t; /* most records at one t */

    struct lt_info_len in, out, reasoning, cached;
    uint64_t failed;    /* records marked failed */
    uint64_t cancelled; /* records whose client left mid-stream (cancel_tokens, cancel_after) */
    uint64_t estimated; /* records whose token counts are estimates */
    uint64_t with_reasoning; /* reasoning > 0 */
    uint64_t with_tools;     /* tool definitions offered */
    uint64_t with_calls;     /* at least one tool call in the response */
    uint64_t calls;          /* tool calls in all */
    uint64_t with_msgs;      /* prompt shape known */
    struct lt_hist *msgs;    /* messages per prompt */

    uint64_t with_session; /* records with a session id */
    uint64_t sessions;     /* distinct session ids */
    struct lt_hist *turns; /* records per session */

    /* Prefix reuse with an unlimited cache: of all block ids in all prompts,
     * how many had been seen before (anywhere in an earlier prompt or earlier
     * in the same one), and how many before the first unseen block of their
     * prompt (what a prefix cache can serve). */
    uint32_t block_tokens;
    uint64_t with_blocks;
    uint64_t blocks; /* block ids in all prompts */
    uint64_t blocks_reused;
    uint64_t blocks_prefix_hit;
    uint64_t distinct_blocks;
    uint64_t records_reusing; /* prompts whose first block was seen before */

    struct lt_info_name models[LT_INFO_NAMES_MAX], apis[LT_INFO_NAMES_MAX];
    uint32_t n_models, n_apis;
    uint64_t models_other, apis_other; /* records whose name did not fit the table */
    /* Media parts (traces/trace_media.h): requests with one image, with
     * several, with audio, with video; every image, its sides (pixels),
     * encoded bytes and the tokens the server counted (over the images
     * that say); audio and video clips and their seconds. */
    uint64_t with_media, with_one_image, with_many_images, with_audio, with_video;
    uint64_t images, image_links, images_counted, image_tokens;
    struct lt_hist *image_w, *image_h, *image_bytes, *images_per;
    struct lt_info_name image_fmts[LT_INFO_NAMES_MAX];
    uint32_t n_image_fmts;
    uint64_t image_fmts_other;
    uint64_t audio, videos, video_frames;
    double audio_s, video_s;
    uint64_t bad_media; /* records whose media key is malformed (left out) */

    struct lt_info_state *st; /* private */
};

/* Prepare info for a trace whose header says block_tokens. */
int lt_info_init(struct lt_info *info, uint32_t block_tokens, struct lt_err *err);
/* Add one record (records must come in arrival order for the gap figures). */
int lt_info_add(struct lt_info *info, const struct lt_record *rec, struct lt_err *err);
/* Compute the derived figures; call once after the last record. */
int lt_info_finish(struct lt_info *info, struct lt_err *err);
/* Free what info holds; safe on a zeroed or released struct. */
void lt_info_release(struct lt_info *info);

/* Read every record of the trace file at path into info (init, add,
 * finish); the header's source is copied to source (may be NULL). */
int lt_info_compute(const char *path, struct lt_info *info, char *source, size_t source_len,
                    struct lt_err *err);
/* The same, calling progress(ud, records) after every millionth record
 * (progress may be NULL): a trace of tens of millions of records takes a
 * while. */
#define LT_INFO_PROGRESS_EVERY 1000000
int lt_info_compute_progress(const char *path, struct lt_info *info, char *source,
                             size_t source_len, void (*progress)(void *ud, uint64_t records),
                             void *ud, struct lt_err *err);

#endif
