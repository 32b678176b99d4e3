/*
 * MJPEG in AVI (lt_video.h). The file is
 *
 *   RIFF 'AVI '
 *     LIST 'hdrl'
 *       'avih' (56 bytes: us per frame, flags, frames, streams, w, h)
 *       LIST 'strl'
 *         'strh' (56: 'vids' 'MJPG', scale/rate = frames per second)
 *         'strf' (40: BITMAPINFOHEADER, compression 'MJPG')
 *     LIST 'movi'
 *       '00dc' (a JPEG) ...   each chunk padded to an even size
 *     'idx1' (16 bytes a frame: id, keyframe, offset from 'movi', size)
 *
 * all little-endian: Microsoft's AVI RIFF reference.
 */
#include "base/lt_video.h"

#include "base/lt_image.h"

#include <stdbool.h>
#include <string.h>

#define AVIF_HASINDEX 0x10u
#define AVIIF_KEYFRAME 0x10u

static int put32(struct lt_buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    return lt_buf_append(b, (const char *)x, 4);
}

static int put16(struct lt_buf *b, uint16_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    return lt_buf_append(b, (const char *)x, 2);
}

static int fourcc(struct lt_buf *b, const char *s)
{
    return lt_buf_append(b, s, 4);
}

static void set32(struct lt_buf *b, size_t at, uint32_t v)
{
    uint8_t *p = (uint8_t *)b->p + at;
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int lt_video_encode(struct lt_buf *out, uint32_t w, uint32_t h, uint32_t frames, int64_t frame_us,
                    uint64_t seed, struct lt_err *err)
{
    if (!w || !h || !frames || frames > LT_VIDEO_MAX_FRAMES || frame_us <= 0 || frame_us > 60000000)
        return lt_errset(err, LT_EINVAL,
                         "a %ux%u video of %u frames %lld us apart cannot be made (1 to %u frames, "
                         "at most a minute apart)",
                         w, h, frames, (long long)frame_us, LT_VIDEO_MAX_FRAMES);
    int rc = 0;
    bool said = false; /* err holds the frame's own words */
    struct lt_buf idx, frame;
    lt_buf_init(&idx, (size_t)16 * frames + 16);
    lt_buf_init(&frame, out->max);
    size_t riff = out->len;
#define T(x)                                                                                       \
    do {                                                                                           \
        if ((rc = (x)) < 0)                                                                        \
            goto out;                                                                              \
    } while (0)
    T(fourcc(out, "RIFF"));
    T(put32(out, 0)); /* set at the end */
    T(fourcc(out, "AVI "));
    T(fourcc(out, "LIST"));
    T(put32(out, 4 + 8 + 56 + 8 + 4 + 8 + 56 + 8 + 40));
    T(fourcc(out, "hdrl"));
    T(fourcc(out, "avih"));
    T(put32(out, 56));
    T(put32(out, (uint32_t)frame_us));
    T(put32(out, 0)); /* max bytes per second: unknown */
    T(put32(out, 0));
    T(put32(out, AVIF_HASINDEX));
    T(put32(out, frames));
    T(put32(out, 0));
    T(put32(out, 1)); /* streams */
    T(put32(out, 0)); /* suggested buffer: set at the end */
    size_t avih_buf = out->len - 4;
    T(put32(out, w));
    T(put32(out, h));
    for (int i = 0; i < 4; i++)
        T(put32(out, 0));
    T(fourcc(out, "LIST"));
    T(put32(out, 4 + 8 + 56 + 8 + 40));
    T(fourcc(out, "strl"));
    T(fourcc(out, "strh"));
    T(put32(out, 56));
    T(fourcc(out, "vids"));
    T(fourcc(out, "MJPG"));
    T(put32(out, 0));                  /* flags */
    T(put16(out, 0));                  /* priority */
    T(put16(out, 0));                  /* language */
    T(put32(out, 0));                  /* initial frames */
    T(put32(out, (uint32_t)frame_us)); /* scale / rate = seconds per frame */
    T(put32(out, 1000000));
    T(put32(out, 0)); /* start */
    T(put32(out, frames));
    T(put32(out, 0)); /* suggested buffer: set at the end */
    size_t strh_buf = out->len - 4;
    T(put32(out, 0xffffffffu)); /* quality: default */
    T(put32(out, 0));           /* sample size: varies */
    T(put16(out, 0));
    T(put16(out, 0));
    T(put16(out, (uint16_t)(w > 0xffff ? 0xffff : w)));
    T(put16(out, (uint16_t)(h > 0xffff ? 0xffff : h)));
    T(fourcc(out, "strf"));
    T(put32(out, 40));
    T(put32(out, 40));
    T(put32(out, w));
    T(put32(out, h));
    T(put16(out, 1));  /* planes */
    T(put16(out, 24)); /* bits */
    T(fourcc(out, "MJPG"));
    T(put32(out, (uint32_t)((uint64_t)w * h * 3 > UINT32_MAX ? UINT32_MAX : (uint64_t)w * h * 3)));
    for (int i = 0; i < 4; i++)
        T(put32(out, 0));
    size_t movi = out->len;
    T(fourcc(out, "LIST"));
    T(put32(out, 0)); /* set below */
    T(fourcc(out, "movi"));
    uint32_t biggest = 0;
    for (uint32_t i = 0; i < frames; i++) {
        lt_buf_reset(&frame);
        if ((rc = lt_img_encode(&frame, LT_IMG_JPEG, w, h, seed * 1000003u + i, err)) < 0) {
            said = true;
            goto out;
        }
        uint32_t n = (uint32_t)frame.len;
        T(fourcc(&idx, "00dc"));
        T(put32(&idx, AVIIF_KEYFRAME));
        T(put32(&idx, (uint32_t)(out->len - (movi + 8))));
        T(put32(&idx, n));
        T(fourcc(out, "00dc"));
        T(put32(out, n));
        T(lt_buf_append(out, frame.p, frame.len));
        if (n & 1)
            T(lt_buf_append(out, "", 1));
        biggest = n > biggest ? n : biggest;
    }
    set32(out, movi + 4, (uint32_t)(out->len - (movi + 8)));
    T(fourcc(out, "idx1"));
    T(put32(out, (uint32_t)idx.len));
    T(lt_buf_append(out, idx.p, idx.len));
    set32(out, riff + 4, (uint32_t)(out->len - (riff + 8)));
    set32(out, avih_buf, biggest + 8);
    set32(out, strh_buf, biggest + 8);
#undef T
out:
    if (rc < 0 && !said)
        lt_errset(err, rc, "out of memory for a %ux%u video of %u frames", w, h, frames);
    lt_buf_release(&idx);
    lt_buf_release(&frame);
    return rc;
}

int lt_video_head(const uint8_t *p, size_t n, struct lt_video_head *h, struct lt_err *err)
{
    memset(h, 0, sizeof *h);
    if (n < 12 || memcmp(p, "RIFF", 4) || memcmp(p + 8, "AVI ", 4))
        return lt_errset(err, LT_EFORMAT, "not an AVI (no RIFF 'AVI ' header)");
    /* avih is the first chunk of the hdrl list, at 24 in every AVI writer
     * we know; look for it in the first chunks rather than assume it */
    size_t at = 12;
    if (n >= at + 12 && !memcmp(p + at, "LIST", 4) && !memcmp(p + at + 8, "hdrl", 4))
        at += 12;
    if (n < at + 8 + 56 || memcmp(p + at, "avih", 4) || get32(p + at + 4) < 40)
        return lt_errset(err, LT_EFORMAT, "an AVI without its main header (avih) first");
    const uint8_t *a = p + at + 8;
    uint32_t us = get32(a), frames = get32(a + 16), w = get32(a + 32), hh = get32(a + 36);
    if (!w || !hh || !frames)
        return lt_errset(err, LT_EFORMAT, "an AVI whose header says %ux%u, %u frames", w, hh,
                         frames);
    h->w = w;
    h->h = hh;
    h->frames = frames;
    h->dur_us = (int64_t)us * frames;
    return 0;
}
