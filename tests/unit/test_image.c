/*
 * base/lt_image: images made by lt_img_encode decode, with libpng's and
 * libjpeg's own readers called here (not loadtrace's header reader), to the
 * size and format asked for, the same bytes each time; the header reader
 * agrees with the libraries; base64 against RFC 4648's vectors; data URLs;
 * and the decode check finds a cut image and a header that lies.
 */
#include "base/lt_image.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jpeglib.h>
#include <png.h>

/* The library's own reading of a PNG: width, height, and that it decodes. */
static void png_lib_size(const struct lt_buf *b, uint32_t *w, uint32_t *h)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    assert_true(png_image_begin_read_from_memory(&img, b->p, b->len));
    img.format = PNG_FORMAT_RGB;
    void *px = malloc(PNG_IMAGE_SIZE(img));
    assert_non_null(px);
    assert_true(png_image_finish_read(&img, NULL, px, 0, NULL));
    *w = img.width;
    *h = img.height;
    free(px);
    png_image_free(&img);
}

static void jpeg_lib_size(const struct lt_buf *b, uint32_t *w, uint32_t *h)
{
    struct jpeg_decompress_struct d;
    struct jpeg_error_mgr e;
    d.err = jpeg_std_error(&e);
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, (const unsigned char *)b->p, (unsigned long)b->len);
    assert_int_equal(jpeg_read_header(&d, TRUE), JPEG_HEADER_OK);
    jpeg_start_decompress(&d);
    JSAMPLE *row = malloc((size_t)d.output_width * (size_t)d.output_components);
    while (d.output_scanline < d.output_height) {
        JSAMPROW r = row;
        jpeg_read_scanlines(&d, &r, 1);
    }
    assert_int_equal(e.num_warnings, 0);
    jpeg_finish_decompress(&d);
    *w = d.image_width;
    *h = d.image_height;
    free(row);
    jpeg_destroy_decompress(&d);
}

static void test_encode_decodes(void **state)
{
    (void)state;
    static const struct {
        enum lt_img_fmt fmt;
        uint32_t w, h;
    } cases[] = {{LT_IMG_PNG, 1, 1},     {LT_IMG_PNG, 640, 480},  {LT_IMG_PNG, 37, 1001},
                 {LT_IMG_JPEG, 1, 1},    {LT_IMG_JPEG, 800, 600}, {LT_IMG_JPEG, 1023, 17},
                 {LT_IMG_JPEG, 2048, 64}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct lt_buf a, b;
        struct lt_err err;
        lt_buf_init(&a, 64u << 20);
        lt_buf_init(&b, 64u << 20);
        assert_int_equal(lt_img_encode(&a, cases[i].fmt, cases[i].w, cases[i].h, 42, &err), 0);
        assert_int_equal(lt_img_encode(&b, cases[i].fmt, cases[i].w, cases[i].h, 42, &err), 0);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.p, b.p, a.len); /* deterministic */
        uint32_t w = 0, h = 0;
        if (cases[i].fmt == LT_IMG_PNG)
            png_lib_size(&a, &w, &h);
        else
            jpeg_lib_size(&a, &w, &h);
        assert_int_equal(w, cases[i].w);
        assert_int_equal(h, cases[i].h);
        struct lt_img_head hd;
        assert_int_equal(lt_img_head((const uint8_t *)a.p, a.len, &hd, &err), 0);
        assert_int_equal(hd.fmt, cases[i].fmt);
        assert_int_equal(hd.w, cases[i].w);
        assert_int_equal(hd.h, cases[i].h);
        assert_int_equal(lt_img_decode_check((const uint8_t *)a.p, a.len, UINT64_MAX, &hd, &err),
                         0);
        lt_buf_release(&a);
        lt_buf_release(&b);
    }
}

static void test_base64(void **state)
{
    (void)state;
    /* RFC 4648 §10 */
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const enc[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                      "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        struct lt_buf b;
        lt_buf_init(&b, 1024);
        assert_int_equal(lt_b64_encode(&b, (const uint8_t *)plain[i], strlen(plain[i])), 0);
        assert_int_equal(b.len, strlen(enc[i]));
        assert_memory_equal(b.p ? b.p : "", enc[i], b.len);
        uint8_t out[16];
        size_t n;
        struct lt_err err;
        assert_int_equal(lt_b64_decode(enc[i], strlen(enc[i]), out, sizeof out, &n, &err), 0);
        assert_int_equal(n, strlen(plain[i]));
        assert_memory_equal(out, plain[i], n);
        assert_int_equal(lt_b64_decoded_len(enc[i], strlen(enc[i])), strlen(plain[i]));
        lt_buf_release(&b);
    }
    uint8_t out[16];
    size_t n;
    struct lt_err err;
    assert_int_equal(lt_b64_decode("Zm9", 3, out, sizeof out, &n, &err), LT_EFORMAT);
    assert_int_equal(lt_b64_decode("Zm!v", 4, out, sizeof out, &n, &err), LT_EFORMAT);
    assert_int_equal(lt_b64_decode("Z=9v", 4, out, sizeof out, &n, &err), LT_EFORMAT);
}

static void test_data_url(void **state)
{
    (void)state;
    struct lt_buf img, url;
    struct lt_err err;
    lt_buf_init(&img, 1u << 20);
    lt_buf_init(&url, 4u << 20);
    assert_int_equal(lt_img_encode(&img, LT_IMG_PNG, 300, 200, 7, &err), 0);
    lt_buf_puts(&url, "data:image/png;base64,");
    lt_b64_encode(&url, (const uint8_t *)img.p, img.len);
    struct lt_img_head h;
    uint64_t bytes = 0;
    assert_int_equal(lt_img_data_url(url.p, url.len, &h, &bytes, &err), 0);
    assert_int_equal(h.fmt, LT_IMG_PNG);
    assert_int_equal(h.w, 300);
    assert_int_equal(h.h, 200);
    assert_int_equal(bytes, img.len);
    /* broken: not base64, cut, no header */
    assert_int_equal(lt_img_data_url("data:image/png,abcd", 19, &h, &bytes, &err), LT_EFORMAT);
    assert_int_equal(lt_img_data_url(url.p, url.len - 1, &h, &bytes, &err), LT_EFORMAT);
    assert_int_equal(
        lt_img_data_url("data:image/png;base64,QUFBQUFBQUFBQUFBQUFB", 42, &h, &bytes, &err),
        LT_EFORMAT);
    url.p[40] = '*';
    assert_int_equal(lt_img_data_url(url.p, url.len, &h, &bytes, &err), LT_EFORMAT);
    lt_buf_release(&img);
    lt_buf_release(&url);
}

static void test_decode_check(void **state)
{
    (void)state;
    struct lt_err err;
    struct lt_img_head h;
    for (int f = LT_IMG_PNG; f <= LT_IMG_JPEG; f++) {
        struct lt_buf img;
        lt_buf_init(&img, 1u << 20);
        assert_int_equal(lt_img_encode(&img, (enum lt_img_fmt)f, 64, 48, 1, &err), 0);
        /* cut in the middle of its data */
        assert_int_equal(
            lt_img_decode_check((const uint8_t *)img.p, img.len / 2, UINT64_MAX, &h, &err),
            LT_EFORMAT);
        /* over a pixel limit */
        assert_int_equal(lt_img_decode_check((const uint8_t *)img.p, img.len, 1000, &h, &err),
                         LT_EFORMAT);
        /* a header that says 4096 rows for 48 rows of data */
        uint8_t *p = (uint8_t *)img.p;
        if (f == LT_IMG_PNG) {
            p[20] = 0;
            p[21] = 0;
            p[22] = 0x10;
            p[23] = 0;
        } else {
            struct lt_img_head hd;
            assert_int_equal(lt_img_head(p, img.len, &hd, &err), 0);
            for (size_t i = 2; i + 9 < img.len; i++)
                if (p[i] == 0xff && p[i + 1] == 0xc0) {
                    p[i + 5] = 0x10;
                    p[i + 6] = 0;
                    break;
                }
        }
        assert_int_equal(lt_img_head(p, img.len, &h, &err), 0);
        assert_int_equal(h.h, 4096);
        assert_int_equal(lt_img_decode_check(p, img.len, UINT64_MAX, &h, &err), LT_EFORMAT);
        lt_buf_release(&img);
    }
    static const uint8_t gif[] = "GIF89a\x40\x01\xf0\x00";
    assert_int_equal(lt_img_head(gif, 12, &h, &err), 0);
    assert_int_equal(h.fmt, LT_IMG_GIF);
    assert_int_equal(h.w, 320);
    assert_int_equal(h.h, 240);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_decodes),
        cmocka_unit_test(test_base64),
        cmocka_unit_test(test_data_url),
        cmocka_unit_test(test_decode_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
