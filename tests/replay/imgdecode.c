/*
 * A test's witness of an image file: "FORMAT WIDTH HEIGHT" as libpng's and
 * libjpeg's own readers see it, after decoding every pixel (exit 1 when the
 * file is no whole PNG or JPEG). Tests check the images replay sent with
 * it, not with loadtrace's own header reader.
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

struct jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jb;
};

static void jerr_exit(j_common_ptr c)
{
    longjmp(((struct jerr *)c->err)->jb, 1);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: imgdecode FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        return 1;
    static unsigned char buf[64 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (n > 8 && !memcmp(buf, "\x89PNG", 4)) {
        png_image img;
        memset(&img, 0, sizeof img);
        img.version = PNG_IMAGE_VERSION;
        if (!png_image_begin_read_from_memory(&img, buf, n))
            return 1;
        img.format = PNG_FORMAT_RGB;
        void *px = malloc(PNG_IMAGE_SIZE(img));
        if (!px || !png_image_finish_read(&img, NULL, px, 0, NULL))
            return 1;
        printf("png %u %u\n", img.width, img.height);
        free(px);
        return 0;
    }
    struct jpeg_decompress_struct d;
    struct jerr e;
    d.err = jpeg_std_error(&e.pub);
    e.pub.error_exit = jerr_exit;
    if (setjmp(e.jb))
        return 1;
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, buf, (unsigned long)n);
    if (jpeg_read_header(&d, TRUE) != JPEG_HEADER_OK)
        return 1;
    jpeg_start_decompress(&d);
    JSAMPLE *row = malloc((size_t)d.output_width * (size_t)d.output_components);
    while (d.output_scanline < d.output_height) {
        JSAMPROW r = row;
        jpeg_read_scanlines(&d, &r, 1);
    }
    if (e.pub.num_warnings)
        return 1;
    jpeg_finish_decompress(&d);
    printf("jpeg %u %u\n", d.image_width, d.image_height);
    free(row);
    jpeg_destroy_decompress(&d);
    return 0;
}
