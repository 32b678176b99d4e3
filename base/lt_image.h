/*
 * Images as loadtrace handles them: their shape, never their pixels. What
 * an encoded image's header says (format, width, height: PNG, JPEG, GIF,
 * WebP), base64 and data URLs (capture and the sim read a request's image
 * parts from them), and the one codec of the program (libpng and
 * libjpeg-turbo): replay makes an image of a recorded shape, and the sim
 * decodes what it is sent to find a header that lies about the data.
 */
#ifndef LT_IMAGE_H
#define LT_IMAGE_H

#include "base/lt_buf.h"
#include "base/lt_err.h"

#include <stddef.h>
#include <stdint.h>

enum lt_img_fmt { LT_IMG_UNKNOWN = 0, LT_IMG_PNG, LT_IMG_JPEG, LT_IMG_GIF, LT_IMG_WEBP };

struct lt_img_head {
    enum lt_img_fmt fmt;
    uint32_t w, h;
};

/* "png", "jpeg", "gif", "webp"; "" for unknown. */
const char *lt_img_fmt_name(enum lt_img_fmt f);
/* The format named s ("jpg" is jpeg; a MIME type "image/png" too). */
enum lt_img_fmt lt_img_fmt_of(const char *s, size_t n);
/* "image/png", ... */
const char *lt_img_mime(enum lt_img_fmt f);

/* Bytes an image header needs at most to say its size, for the formats
 * above (a JPEG's frame header may follow large metadata: a JPEG whose
 * frame header is past this is read as unknown). */
#define LT_IMG_HEAD_MAX ((size_t)256 << 10)

/* What the first n bytes of an encoded image say. 0; LT_ETRUNC when they
 * end before the size; LT_EFORMAT (err filled) when they are no image of
 * a known format, or say a size of 0. */
int lt_img_head(const uint8_t *p, size_t n, struct lt_img_head *h, struct lt_err *err);

/* base64 (standard alphabet, '=' padding; no whitespace): the decoded size
 * of n characters, and a decoding of them into out (at most cap bytes: a
 * prefix when it is short). LT_EFORMAT when a character is not base64 or
 * the length is not a multiple of 4. */
uint64_t lt_b64_decoded_len(const char *s, size_t n);
int lt_b64_decode(const char *s, size_t n, uint8_t *out, size_t cap, size_t *outn,
                  struct lt_err *err);
int lt_b64_encode(struct lt_buf *out, const uint8_t *p, size_t n);

/* A data URL "data:MIME;base64,DATA": its MIME type and its data, in s.
 * LT_EFORMAT when s is no base64 data URL. */
int lt_data_url(const char *s, size_t n, const char **mime, size_t *mime_n, const char **data,
                size_t *data_n, struct lt_err *err);

/* The shape of the image a data URL holds (every character checked, the
 * header decoded) and its decoded size. LT_EFORMAT with err filled: a
 * broken URL, bad base64, no image header. */
int lt_img_data_url(const char *s, size_t n, struct lt_img_head *h, uint64_t *bytes,
                    struct lt_err *err);

/* Encode a w x h image of format fmt (png or jpeg) into out (appended):
 * pixels drawn from seed (a smooth pattern with some noise, so that its
 * size is that of a photo's rather than of a flat colour). The same
 * arguments give the same bytes. LT_EINVAL for another format or a size
 * of 0; LT_ENOMEM, LT_ELIMIT (out's cap). */
int lt_img_encode(struct lt_buf *out, enum lt_img_fmt fmt, uint32_t w, uint32_t h, uint64_t seed,
                  struct lt_err *err);

/* Decode a whole png or jpeg (pixels thrown away) and say its shape: the
 * check that the data holds the image its header says. LT_EFORMAT with
 * err filled when it does not (cut, corrupt, a header that lies), or when
 * w * h is over max_pixels; other formats: their header only. */
int lt_img_decode_check(const uint8_t *p, size_t n, uint64_t max_pixels, struct lt_img_head *h,
                        struct lt_err *err);

/* Audio, as replay sends it and the sim and capture read it: a WAV's
 * duration from its header (the fmt chunk's byte rate, the data chunk's
 * size, or to the end of total bytes where the header does not say), in
 * µs; 0 when p (the first n of total bytes) is no WAV this reads. */
int64_t lt_wav_duration_us(const uint8_t *p, size_t n, uint64_t total);

/* A WAV of dur_us (16 kHz, mono, 16-bit PCM: a quiet tone drawn from
 * seed) appended to out. LT_EINVAL past an hour; LT_ELIMIT (out's cap). */
int lt_wav_encode(struct lt_buf *out, int64_t dur_us, uint64_t seed, struct lt_err *err);

#endif
