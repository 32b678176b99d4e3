/*
 * The media parts of a request body as capture records them: the shape of
 * each image (format, width and height from its header, bytes) and audio
 * clip (format, bytes, duration from a WAV header), read from chat's
 * image_url and input_audio parts, Responses' input_image and Messages'
 * image blocks. The pixels are never kept: each inline data is replaced in
 * the JSON tree by a note of its size before anything else reads the
 * request (kept content included), and a link keeps no query string (where
 * signed URLs carry their secrets).
 */
#ifndef LT_CAPTURE_MEDIA_H
#define LT_CAPTURE_MEDIA_H

#include "traces/trace_media.h"

#include <jansson.h>
#include <stdint.h>

/* Read and scrub the media parts of req (a request body of any of the
 * three chat-like APIs) into v[0..max), *n of them; parts past max are
 * scrubbed and not recorded. */
void lt_capture_media_scan(json_t *req, struct lt_media *v, uint32_t max, uint32_t *n);

#endif
