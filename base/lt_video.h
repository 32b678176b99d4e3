/*
 * Video as loadtrace sends and reads it: an AVI (RIFF) holding Motion-JPEG
 * frames, written by our own code around libjpeg-turbo's frames (no video
 * library: vLLM's OpenCV loader and SGLang's decord, both FFmpeg-based,
 * decode MJPEG in AVI), and the shape an AVI's header says. Replay makes
 * one per recorded video shape; the sim counts a video's tokens from its
 * header (docs/multimodal.md "Video").
 */
#ifndef LT_VIDEO_H
#define LT_VIDEO_H

#include "base/lt_buf.h"
#include "base/lt_err.h"

#include <stddef.h>
#include <stdint.h>

/* The most frames a made video may have (an hour at 2 fps). */
#define LT_VIDEO_MAX_FRAMES 7200u

struct lt_video_head {
    uint32_t w, h;
    uint32_t frames;
    int64_t dur_us; /* frames x the header's time per frame */
};

/* Append an AVI of frames w x h JPEG frames (each its own picture drawn
 * from seed and its index, as lt_img_encode draws them), frame_us apart,
 * with its idx1 index, to out. The same arguments give the same bytes.
 * LT_EINVAL: a size or frame count of 0, more than LT_VIDEO_MAX_FRAMES,
 * frame_us <= 0; LT_ENOMEM, LT_ELIMIT (out's cap). */
int lt_video_encode(struct lt_buf *out, uint32_t w, uint32_t h, uint32_t frames, int64_t frame_us,
                    uint64_t seed, struct lt_err *err);

/* What the first n bytes of an AVI say (its main header avih: size, frame
 * count, time per frame). LT_EFORMAT with err filled when they are no AVI
 * or say a size or frame count of 0. */
int lt_video_head(const uint8_t *p, size_t n, struct lt_video_head *h, struct lt_err *err);

#endif
