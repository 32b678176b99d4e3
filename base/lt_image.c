/*
 * Image headers, base64, data URLs and the codec (lt_image.h). The header
 * readers follow each format's specification for the few bytes that say
 * the size; the codec is libpng's simplified API and libjpeg-turbo's
 * libjpeg API, with libjpeg's errors and warnings turned into returns (a
 * warning is a cut or corrupt file, which the sim must report, not paint
 * grey).
 */
#include "base/lt_image.h"

#include "base/lt_rng.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h> /* before jpeglib.h, which needs FILE */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

static const char *const fmt_names[] = {"", "png", "jpeg", "gif", "webp"};

const char *lt_img_fmt_name(enum lt_img_fmt f)
{
    return (unsigned)f < sizeof fmt_names / sizeof *fmt_names ? fmt_names[f] : "";
}

const char *lt_img_mime(enum lt_img_fmt f)
{
    static const char *const mimes[] = {"application/octet-stream", "image/png", "image/jpeg",
                                        "image/gif", "image/webp"};
    return (unsigned)f < sizeof mimes / sizeof *mimes ? mimes[f] : mimes[0];
}

enum lt_img_fmt lt_img_fmt_of(const char *s, size_t n)
{
    if (n > 6 && !strncmp(s, "image/", 6)) {
        s += 6;
        n -= 6;
    }
    if (n == 3 && !strncmp(s, "jpg", 3))
        return LT_IMG_JPEG;
    for (unsigned f = 1; f < sizeof fmt_names / sizeof *fmt_names; f++)
        if (strlen(fmt_names[f]) == n && !strncmp(s, fmt_names[f], n))
            return (enum lt_img_fmt)f;
    return LT_IMG_UNKNOWN;
}

static uint32_t be16(const uint8_t *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}
static uint32_t be32(const uint8_t *p)
{
    return be16(p) << 16 | be16(p + 2);
}
static uint32_t le16(const uint8_t *p)
{
    return (uint32_t)p[1] << 8 | p[0];
}
static uint32_t le24(const uint8_t *p)
{
    return le16(p) | (uint32_t)p[2] << 16;
}

static int jpeg_head(const uint8_t *p, size_t n, struct lt_img_head *h, struct lt_err *err)
{
    size_t i = 2;
    for (;;) {
        if (i + 4 > n)
            return LT_ETRUNC;
        if (p[i] != 0xff)
            return lt_errset(err, LT_EFORMAT, "a JPEG whose marker at byte %zu is broken", i);
        uint8_t m = p[i + 1];
        if (m == 0xff) { /* fill byte */
            i++;
            continue;
        }
        if (m == 0xd8 || (m >= 0xd0 && m <= 0xd7) || m == 0x01) { /* no length */
            i += 2;
            continue;
        }
        uint32_t len = be16(p + i + 2);
        if (len < 2)
            return lt_errset(err, LT_EFORMAT, "a JPEG segment at byte %zu has a bad length", i);
        bool sof = m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc;
        if (sof) {
            if (i + 9 > n)
                return LT_ETRUNC;
            h->fmt = LT_IMG_JPEG;
            h->h = be16(p + i + 5);
            h->w = be16(p + i + 7);
            return 0;
        }
        if (m == 0xd9 || m == 0xda)
            return lt_errset(err, LT_EFORMAT, "a JPEG with no frame header before its data");
        i += 2 + (size_t)len;
    }
}

int lt_img_head(const uint8_t *p, size_t n, struct lt_img_head *h, struct lt_err *err)
{
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    int rc = 0;
    memset(h, 0, sizeof *h);
    if (n < 12)
        return LT_ETRUNC;
    if (!memcmp(p, png_sig, 8)) {
        if (n < 24)
            return LT_ETRUNC;
        if (memcmp(p + 12, "IHDR", 4))
            return lt_errset(err, LT_EFORMAT, "a PNG whose first chunk is not IHDR");
        h->fmt = LT_IMG_PNG;
        h->w = be32(p + 16);
        h->h = be32(p + 20);
    } else if (p[0] == 0xff && p[1] == 0xd8) {
        if ((rc = jpeg_head(p, n, h, err)) < 0)
            return rc;
    } else if (!memcmp(p, "GIF87a", 6) || !memcmp(p, "GIF89a", 6)) {
        h->fmt = LT_IMG_GIF;
        h->w = le16(p + 6);
        h->h = le16(p + 8);
    } else if (!memcmp(p, "RIFF", 4) && !memcmp(p + 8, "WEBP", 4)) {
        if (n < 30)
            return LT_ETRUNC;
        h->fmt = LT_IMG_WEBP;
        if (!memcmp(p + 12, "VP8 ", 4)) {
            h->w = le16(p + 26) & 0x3fff;
            h->h = le16(p + 28) & 0x3fff;
        } else if (!memcmp(p + 12, "VP8L", 4)) {
            const uint8_t *b = p + 21;
            h->w = 1 + (b[0] | (uint32_t)(b[1] & 0x3f) << 8);
            h->h = 1 + ((uint32_t)b[1] >> 6 | (uint32_t)b[2] << 2 | (uint32_t)(b[3] & 0xf) << 10);
        } else if (!memcmp(p + 12, "VP8X", 4)) {
            h->w = 1 + le24(p + 24);
            h->h = 1 + le24(p + 27);
        } else {
            return lt_errset(err, LT_EFORMAT, "a WebP of an unknown kind");
        }
    } else {
        return lt_errset(err, LT_EFORMAT, "not a PNG, JPEG, GIF or WebP image");
    }
    if (!h->w || !h->h)
        return lt_errset(err, LT_EFORMAT, "a %s header that says %ux%u pixels",
                         lt_img_fmt_name(h->fmt), h->w, h->h);
    return 0;
}

/* ---- base64 and data URLs -------------------------------------------- */

/* Each base64 character's value + 1; 0 for any other byte. A constant,
 * so that threads (the sim's) share it without a first-use race. */
static const signed char b64_tab1[256] = {
    ['A'] = 1,  ['B'] = 2,  ['C'] = 3,  ['D'] = 4,  ['E'] = 5,  ['F'] = 6,  ['G'] = 7,  ['H'] = 8,
    ['I'] = 9,  ['J'] = 10, ['K'] = 11, ['L'] = 12, ['M'] = 13, ['N'] = 14, ['O'] = 15, ['P'] = 16,
    ['Q'] = 17, ['R'] = 18, ['S'] = 19, ['T'] = 20, ['U'] = 21, ['V'] = 22, ['W'] = 23, ['X'] = 24,
    ['Y'] = 25, ['Z'] = 26, ['a'] = 27, ['b'] = 28, ['c'] = 29, ['d'] = 30, ['e'] = 31, ['f'] = 32,
    ['g'] = 33, ['h'] = 34, ['i'] = 35, ['j'] = 36, ['k'] = 37, ['l'] = 38, ['m'] = 39, ['n'] = 40,
    ['o'] = 41, ['p'] = 42, ['q'] = 43, ['r'] = 44, ['s'] = 45, ['t'] = 46, ['u'] = 47, ['v'] = 48,
    ['w'] = 49, ['x'] = 50, ['y'] = 51, ['z'] = 52, ['0'] = 53, ['1'] = 54, ['2'] = 55, ['3'] = 56,
    ['4'] = 57, ['5'] = 58, ['6'] = 59, ['7'] = 60, ['8'] = 61, ['9'] = 62, ['+'] = 63, ['/'] = 64,
};
#define B64(c) (b64_tab1[(unsigned char)(c)] - 1)

uint64_t lt_b64_decoded_len(const char *s, size_t n)
{
    uint64_t len = (uint64_t)n / 4 * 3;
    if (n >= 1 && s[n - 1] == '=')
        len--;
    if (n >= 2 && s[n - 2] == '=')
        len--;
    return len;
}

int lt_b64_decode(const char *s, size_t n, uint8_t *out, size_t cap, size_t *outn,
                  struct lt_err *err)
{
    *outn = 0;
    if (n % 4)
        return lt_errset(err, LT_EFORMAT, "base64 of %zu characters (not a multiple of 4)", n);
    const unsigned char *u = (const unsigned char *)s;
    size_t body = n >= 4 ? n - 4 : 0; /* the last group may hold '=' */
    size_t o = 0, i = 0;
    for (; i < body && o + 3 <= cap; i += 4) {
        int a = B64(u[i]), b = B64(u[i + 1]), c = B64(u[i + 2]), d = B64(u[i + 3]);
        if ((a | b | c | d) < 0)
            return lt_errset(err, LT_EFORMAT, "a character that is not base64 near %zu", i);
        uint32_t w = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        out[o++] = (uint8_t)(w >> 16);
        out[o++] = (uint8_t)(w >> 8);
        out[o++] = (uint8_t)w;
    }
    for (; i < n; i += 4) { /* the tail: padding, or past the room */
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            unsigned char c = u[i + k];
            if (c == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad || (v[k] = B64(c)) < 0)
                return lt_errset(err, LT_EFORMAT, "a character that is not base64 at %zu",
                                 i + (size_t)k);
        }
        uint32_t w =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        uint8_t b[3] = {(uint8_t)(w >> 16), (uint8_t)(w >> 8), (uint8_t)w};
        for (int k = 0; k < 3 - pad; k++)
            if (o < cap)
                out[o++] = b[k];
    }
    *outn = o;
    return 0;
}

int lt_b64_encode(struct lt_buf *out, const uint8_t *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    int rc = lt_buf_reserve(out, (n + 2) / 3 * 4);
    if (rc < 0)
        return rc;
    char *d = out->p + out->len;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t w = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *d++ = tab[w >> 18];
        *d++ = tab[(w >> 12) & 63];
        *d++ = tab[(w >> 6) & 63];
        *d++ = tab[w & 63];
    }
    if (i < n) {
        uint32_t w = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
        *d++ = tab[w >> 18];
        *d++ = tab[(w >> 12) & 63];
        *d++ = i + 1 < n ? tab[(w >> 6) & 63] : '=';
        *d++ = '=';
    }
    out->len = (size_t)(d - out->p);
    return 0;
}

int lt_data_url(const char *s, size_t n, const char **mime, size_t *mime_n, const char **data,
                size_t *data_n, struct lt_err *err)
{
    if (n < 5 || strncmp(s, "data:", 5))
        return lt_errset(err, LT_EFORMAT, "not a data URL (no \"data:\")");
    const char *comma = memchr(s, ',', n);
    if (!comma)
        return lt_errset(err, LT_EFORMAT, "a data URL with no ',' before its data");
    const char *semi = memchr(s + 5, ';', (size_t)(comma - (s + 5)));
    if (!semi || (size_t)(comma - semi) != 7 || strncmp(semi, ";base64", 7))
        return lt_errset(err, LT_EFORMAT, "a data URL that is not base64 (no \";base64,\")");
    *mime = s + 5;
    *mime_n = (size_t)(semi - (s + 5));
    *data = comma + 1;
    *data_n = n - (size_t)(comma + 1 - s);
    return 0;
}

int lt_img_data_url(const char *s, size_t n, struct lt_img_head *h, uint64_t *bytes,
                    struct lt_err *err)
{
    const char *mime, *data;
    size_t mn, dn;
    int rc = lt_data_url(s, n, &mime, &mn, &data, &dn, err);
    if (rc < 0)
        return rc;
    if (dn % 4)
        return lt_errset(err, LT_EFORMAT, "a data URL whose base64 is cut (%zu characters)", dn);
    for (size_t i = 0; i + 2 < dn; i++) /* the last two may be '=' */
        if (B64(data[i]) < 0)
            return lt_errset(err, LT_EFORMAT,
                             "a data URL with a character that is not base64 at %zu", i);
    *bytes = lt_b64_decoded_len(data, dn);
    /* the header from a short prefix, longer only while it is cut (a
     * JPEG's frame header may follow its metadata) */
    uint8_t *buf = malloc(LT_IMG_HEAD_MAX + 3);
    if (!buf)
        return lt_errset(err, LT_ENOMEM, "out of memory reading an image header");
    rc = LT_ETRUNC;
    for (size_t want = 64; rc == LT_ETRUNC; want *= 8) {
        size_t chars = want / 3 * 4;
        bool all = chars >= dn || want >= LT_IMG_HEAD_MAX;
        if (all)
            chars = dn < LT_IMG_HEAD_MAX / 3 * 4 ? dn : LT_IMG_HEAD_MAX / 3 * 4;
        size_t got;
        rc = lt_b64_decode(data, chars, buf, LT_IMG_HEAD_MAX + 3, &got, err);
        if (rc == 0)
            rc = lt_img_head(buf, got, h, err);
        if (rc == LT_ETRUNC && all) {
            rc = lt_errset(err, LT_EFORMAT,
                           "a data URL of %zu bytes that ends before the image's size", got);
            break;
        }
    }
    free(buf);
    return rc;
}

/* ---- the codec -------------------------------------------------------- */

/* The pixels of row y: a smooth pattern (a photo's large areas) with
 * noise drawn from the seed and the position (its detail). */
static void fill_row(uint8_t *row, uint32_t w, uint32_t h, uint32_t y, uint64_t seed)
{
    for (uint32_t x = 0; x < w; x++) {
        uint64_t r = lt_mix64(seed ^ ((uint64_t)y << 32 | x));
        uint32_t gx = (uint32_t)((uint64_t)x * 255 / (w > 1 ? w - 1 : 1));
        uint32_t gy = (uint32_t)((uint64_t)y * 255 / (h > 1 ? h - 1 : 1));
        row[3 * x + 0] = (uint8_t)((gx + (r & 15)) & 0xff);
        row[3 * x + 1] = (uint8_t)((gy + ((r >> 8) & 15)) & 0xff);
        row[3 * x + 2] = (uint8_t)(((gx + gy) / 2 + ((r >> 16) & 15)) & 0xff);
    }
}

struct png_out {
    struct lt_buf *b;
    int rc;
};

static void png_write_cb(png_structp png, png_bytep data, size_t n)
{
    struct png_out *o = png_get_io_ptr(png);
    if (o->rc == 0)
        o->rc = lt_buf_append(o->b, data, n);
}

static void png_flush_cb(png_structp png)
{
    (void)png;
}

static int encode_png(struct lt_buf *out, uint32_t w, uint32_t h, uint64_t seed, struct lt_err *err)
{
    struct png_out o = {out, 0};
    uint8_t *volatile row = malloc((size_t)w * 3);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int rc = 0;
    if (!row || !png || !info) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory encoding a PNG");
        goto out;
    }
    if (setjmp(png_jmpbuf(png))) {
        rc = lt_errset(err, o.rc ? o.rc : LT_EINVAL, "libpng failed encoding a %ux%u PNG", w, h);
        goto out;
    }
    png_set_write_fn(png, &o, png_write_cb, png_flush_cb);
    png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_compression_level(png, 3); /* fast: replay makes these before the run */
    png_write_info(png, info);
    for (uint32_t y = 0; y < h && o.rc == 0; y++) {
        fill_row(row, w, h, y, seed);
        png_write_row(png, row);
    }
    png_write_end(png, info);
    if (o.rc)
        rc = lt_errset(err, o.rc, "a %ux%u PNG is larger than the buffer's limit", w, h);
out:
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    free(row);
    return rc;
}

struct jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
    int warnings;
};

static void jerr_exit(j_common_ptr c)
{
    struct jerr *e = (struct jerr *)c->err;
    c->err->format_message(c, e->msg);
    longjmp(e->jb, 1);
}

static void jerr_emit(j_common_ptr c, int level)
{
    struct jerr *e = (struct jerr *)c->err;
    if (level < 0 && !e->warnings++) /* a warning: corrupt or cut data */
        c->err->format_message(c, e->msg);
}

static int encode_jpeg(struct lt_buf *out, uint32_t w, uint32_t h, uint64_t seed,
                       struct lt_err *err)
{
    struct jpeg_compress_struct c;
    struct jerr e;
    unsigned char *volatile mem = NULL;
    unsigned long mem_n = 0;
    uint8_t *volatile row = malloc((size_t)w * 3);
    int rc = 0;
    memset(&e, 0, sizeof e);
    c.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = jerr_exit;
    e.pub.emit_message = jerr_emit;
    if (!row)
        return lt_errset(err, LT_ENOMEM, "out of memory encoding a JPEG");
    if (setjmp(e.jb)) {
        jpeg_destroy_compress(&c);
        free(mem);
        free(row);
        return lt_errset(err, LT_EINVAL, "libjpeg failed encoding a %ux%u JPEG: %s", w, h, e.msg);
    }
    jpeg_create_compress(&c);
    unsigned char *m = NULL;
    jpeg_mem_dest(&c, &m, &mem_n);
    c.image_width = w;
    c.image_height = h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 85, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        fill_row(row, w, h, c.next_scanline, seed);
        JSAMPROW r = row;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    mem = m;
    rc = lt_buf_append(out, mem, mem_n);
    if (rc < 0)
        lt_errset(err, rc, "a %ux%u JPEG of %lu bytes is larger than the buffer's limit", w, h,
                  mem_n);
    jpeg_destroy_compress(&c);
    free(mem);
    free(row);
    return rc;
}

int lt_img_encode(struct lt_buf *out, enum lt_img_fmt fmt, uint32_t w, uint32_t h, uint64_t seed,
                  struct lt_err *err)
{
    if (!w || !h || w > 65535 || h > 65535)
        return lt_errset(err, LT_EINVAL, "cannot make an image of %ux%u pixels", w, h);
    if (fmt == LT_IMG_PNG)
        return encode_png(out, w, h, seed, err);
    if (fmt == LT_IMG_JPEG)
        return encode_jpeg(out, w, h, seed, err);
    return lt_errset(err, LT_EINVAL, "cannot make a %s image (png and jpeg only)",
                     fmt ? lt_img_fmt_name(fmt) : "unknown");
}

static int check_png(const uint8_t *p, size_t n, struct lt_img_head *h, struct lt_err *err)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, p, n))
        return lt_errset(err, LT_EFORMAT, "a PNG that libpng cannot read: %s", img.message);
    img.format = PNG_FORMAT_GRAY;
    size_t size = PNG_IMAGE_SIZE(img);
    void *buf = malloc(size ? size : 1);
    if (!buf) {
        png_image_free(&img);
        return lt_errset(err, LT_ENOMEM, "out of memory decoding a %ux%u PNG", h->w, h->h);
    }
    int ok = png_image_finish_read(&img, NULL, buf, 0, NULL);
    free(buf);
    if (!ok || PNG_IMAGE_FAILED(img)) {
        int rc = lt_errset(err, LT_EFORMAT,
                           "a PNG whose header says %ux%u but whose data does "
                           "not decode: %s",
                           h->w, h->h, img.message);
        png_image_free(&img);
        return rc;
    }
    png_image_free(&img);
    return 0;
}

static int check_jpeg(const uint8_t *p, size_t n, struct lt_img_head *h, struct lt_err *err)
{
    struct jpeg_decompress_struct d;
    struct jerr e;
    JSAMPLE *volatile row = NULL;
    memset(&e, 0, sizeof e);
    d.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = jerr_exit;
    e.pub.emit_message = jerr_emit;
    if (setjmp(e.jb)) {
        jpeg_destroy_decompress(&d);
        free(row);
        return lt_errset(err, LT_EFORMAT,
                         "a JPEG whose header says %ux%u but whose data does "
                         "not decode: %s",
                         h->w, h->h, e.msg);
    }
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, p, (unsigned long)n);
    jpeg_read_header(&d, TRUE);
    d.out_color_space = JCS_GRAYSCALE;
    jpeg_start_decompress(&d);
    row = malloc((size_t)d.output_width * (size_t)d.output_components);
    if (!row) {
        jpeg_destroy_decompress(&d);
        return lt_errset(err, LT_ENOMEM, "out of memory decoding a JPEG");
    }
    while (d.output_scanline < d.output_height && !e.warnings) {
        JSAMPROW r = row;
        jpeg_read_scanlines(&d, &r, 1);
    }
    if (!e.warnings)
        jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    free(row);
    if (e.warnings)
        return lt_errset(err, LT_EFORMAT,
                         "a JPEG whose header says %ux%u but whose data does "
                         "not decode: %s",
                         h->w, h->h, e.msg);
    return 0;
}

int lt_img_decode_check(const uint8_t *p, size_t n, uint64_t max_pixels, struct lt_img_head *h,
                        struct lt_err *err)
{
    int rc = lt_img_head(p, n, h, err);
    if (rc == LT_ETRUNC)
        return lt_errset(err, LT_EFORMAT, "an image of %zu bytes that ends before its size", n);
    if (rc < 0)
        return rc;
    if ((uint64_t)h->w * h->h > max_pixels)
        return lt_errset(err, LT_EFORMAT, "a %ux%u image: more than %llu pixels", h->w, h->h,
                         (unsigned long long)max_pixels);
    if (h->fmt == LT_IMG_PNG)
        return check_png(p, n, h, err);
    if (h->fmt == LT_IMG_JPEG)
        return check_jpeg(p, n, h, err);
    return 0;
}

/* ---- audio ------------------------------------------------------------ */

static uint32_t le32(const uint8_t *p)
{
    return le16(p) | (uint32_t)le16(p + 2) << 16;
}

int64_t lt_wav_duration_us(const uint8_t *p, size_t n, uint64_t total)
{
    if (n < 12 || memcmp(p, "RIFF", 4) || memcmp(p + 8, "WAVE", 4))
        return 0;
    uint32_t rate = 0;
    size_t i = 12;
    while (i + 8 <= n) {
        uint32_t len = le32(p + i + 4);
        if (!memcmp(p + i, "fmt ", 4) && i + 20 <= n)
            rate = le32(p + i + 16);
        if (!memcmp(p + i, "data", 4)) {
            uint64_t data = len;
            if (total < i + 8 || data > total - (i + 8) || len == 0xffffffffu)
                data = total > i + 8 ? total - (i + 8) : 0; /* streamed: to the end */
            return rate ? (int64_t)(data * 1000000 / rate) : 0;
        }
        i += 8 + (size_t)len + (len & 1);
    }
    return 0;
}

static void put_le(uint8_t *p, uint32_t v, int n)
{
    for (int k = 0; k < n; k++)
        p[k] = (uint8_t)(v >> (8 * k));
}

int lt_wav_encode(struct lt_buf *out, int64_t dur_us, uint64_t seed, struct lt_err *err)
{
    const uint32_t rate = 16000;
    if (dur_us <= 0 || dur_us > INT64_C(3600000000))
        return lt_errset(err, LT_EINVAL, "cannot make %lld us of audio", (long long)dur_us);
    uint64_t samples = (uint64_t)dur_us * rate / 1000000;
    if (!samples)
        samples = 1;
    uint32_t data = (uint32_t)(samples * 2);
    uint8_t h[44];
    memcpy(h, "RIFF", 4);
    put_le(h + 4, 36 + data, 4);
    memcpy(h + 8, "WAVEfmt ", 8);
    put_le(h + 16, 16, 4);
    put_le(h + 20, 1, 2); /* PCM */
    put_le(h + 22, 1, 2); /* mono */
    put_le(h + 24, rate, 4);
    put_le(h + 28, rate * 2, 4); /* byte rate */
    put_le(h + 32, 2, 2);
    put_le(h + 34, 16, 2);
    memcpy(h + 36, "data", 4);
    put_le(h + 40, data, 4);
    int rc = lt_buf_append(out, h, sizeof h);
    if (rc == 0)
        rc = lt_buf_reserve(out, data);
    if (rc < 0)
        return lt_errset(err, rc, "%lld us of audio is larger than the buffer's limit",
                         (long long)dur_us);
    /* a tone whose pitch the seed picks, as a square-ish wave: no libm */
    uint32_t period = 20 + (uint32_t)(lt_mix64(seed) % 40);
    uint8_t *d = (uint8_t *)out->p + out->len;
    for (uint64_t i = 0; i < samples; i++) {
        int16_t v = (int16_t)((i % period) < period / 2 ? 2000 : -2000);
        put_le(d + 2 * i, (uint16_t)v, 2);
    }
    out->len += data;
    return 0;
}
