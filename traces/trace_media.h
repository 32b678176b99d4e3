/*
 * The media parts of a request (docs/trace-format.md §2.2 "media"): the
 * shapes of its images, audio clips and videos, never their content. A
 * record carries them as the optional key "media", an array of small maps,
 * kept among the record's other keys (`extra`), so that every tool that
 * copies records keeps them and a reader that predates them reads the
 * record as before.
 *
 * Producers (capture, synth, import) pack the key with lt_media_pack and
 * add it to a record's extra; consumers (info, replay, the sim, analyze)
 * read it back with lt_media_read.
 */
#ifndef LT_TRACE_MEDIA_H
#define LT_TRACE_MEDIA_H

#include "base/lt_err.h"
#include "traces/lt_mp.h"
#include "traces/trace_format.h"

#include <stdbool.h>
#include <stdint.h>

#define LT_MEDIA_KEY "media"
/* Parts one record may carry: more is refused (reader and packer). */
#define LT_MEDIA_MAX 64
/* The largest side of an image or video frame a record may say. */
#define LT_MEDIA_SIDE_MAX 65535u
/* The side of an image whose size a record does not say (a link): what
 * replay makes, and what capture shares a server's image tokens by. */
#define LT_MEDIA_SIDE_UNKNOWN 512u

enum lt_media_kind {
    LT_MEDIA_IMAGE = 1,
    LT_MEDIA_AUDIO = 2,
    LT_MEDIA_VIDEO = 3,
};

/* One part. Fields a part does not have are 0 (fmt ""). */
struct lt_media {
    uint8_t kind;    /* enum lt_media_kind */
    bool link;       /* sent as a link (http(s) URL), not inline data */
    char fmt[8];     /* "png", "jpeg", "webp", "gif", "wav", "mp3", "mp4", ...; "" unknown */
    uint32_t w, h;   /* pixels: image, video frame */
    uint64_t bytes;  /* encoded size; 0 unknown */
    uint32_t tokens; /* the tokens the server counted for it; 0 unknown */
    int64_t dur;     /* µs: audio, video */
    uint32_t frames; /* video */
};

/* The parts of x (a record's extra, as the reader gave it or as packed
 * with lt_mp) into v[0..max), *n of them. Returns 0 (with *n = 0 when the
 * record has none), or LT_EFORMAT with err filled when the key is there
 * but is not an array of part maps of known kinds (or holds more than
 * max). */
int lt_media_read(const struct lt_extra *x, struct lt_media *v, uint32_t max, uint32_t *n,
                  struct lt_err *err);

/* Pack the pair "media": [parts] (key and value, for a record's extra: the
 * caller counts one more pair). n == 0 packs nothing. Returns m->rc. */
int lt_media_pack(struct lt_mp *m, const struct lt_media *v, uint32_t n);

/* "image", "audio", "video"; NULL for another value. */
const char *lt_media_kind_name(unsigned kind);
/* The kind named s; 0 when none. */
unsigned lt_media_kind_of(const char *s, size_t n);

/* The frame rate a video made for a record that says only its frames or
 * only its duration is given (Qwen2-VL's sampling rate). */
#define LT_MEDIA_VIDEO_FPS 2
/* The shape replay makes video part p in, and the virtual sim counts:
 * its frame size (LT_MEDIA_SIDE_UNKNOWN where the record has none), its
 * frames (the record's; else its duration at LT_MEDIA_VIDEO_FPS; else 2)
 * and the time between frames (its duration over its frames; else at
 * LT_MEDIA_VIDEO_FPS). */
void lt_media_video_shape(const struct lt_media *p, uint32_t *w, uint32_t *h, uint32_t *frames,
                          int64_t *frame_us);

/* Images among v[0..n), and the tokens the server counted for them. */
uint32_t lt_media_images(const struct lt_media *v, uint32_t n, uint64_t *tokens);

#endif
