/*
 * The media a replay sends (docs/multimodal.md): before the run, one image
 * is made for each shape (format, width, height) the trace's records carry
 * (base/lt_image.c: deterministic pixels, libpng or libjpeg-turbo), one WAV
 * per audio duration, one AVI of Motion-JPEG frames per video shape (frame
 * size, frames, frame time: base/lt_video.c), each kept as a data URL, and
 * the time this took is measured; at each send the
 * request's text is built as for a text request, less the image tokens the
 * trace recorded, and its images are put in its last user message, in the
 * API's own shape (chat's image_url parts, Responses' input_image,
 * Messages' base64 image blocks).
 *
 * A request whose media cannot be sent (a malformed media key, an image
 * over the byte limit, an API that carries no images) fails alone with
 * replay's "media" error and the run goes on.
 */
#ifndef LT_REPLAY_MEDIA_H
#define LT_REPLAY_MEDIA_H

#include "plan/plan_jobs.h"
#include "replay/replay_prompt.h"
#include "base/lt_buf.h"
#include "base/lt_err.h"

#include <stdint.h>

/* The default of --max-image-bytes: larger recorded images are not made. */
#define LT_REPLAY_MAX_IMAGE_BYTES ((uint64_t)20 << 20)
/* The side an image without a recorded size is made with. */
#define LT_REPLAY_IMAGE_SIDE LT_MEDIA_SIDE_UNKNOWN

struct lt_replay_media;

/* What preparing cost, for the run's summary. */
struct lt_replay_media_stats {
    uint64_t shapes;      /* distinct images made */
    uint64_t bytes;       /* their encoded bytes */
    int64_t prep_us;      /* the time making them took (before the run) */
    uint64_t substituted; /* shapes of another format (webp, gif, unknown) made as png */
    uint64_t refused;     /* image parts over max_bytes or the pixel limit (not made) */
};

/* Make the images of every media part of js (its table is complete after
 * lt_plan_jobs_load or _open). *out is NULL when the trace has no images.
 * Returns 0, LT_ENOMEM. */
int lt_replay_media_new(struct lt_replay_media **out, const struct lt_plan_jobs *js,
                        uint64_t max_bytes, struct lt_replay_media_stats *st, struct lt_err *err);
void lt_replay_media_free(struct lt_replay_media *m);

/* Serve m's images as links from now on (--media-links): a server on
 * 127.0.0.1 (an ephemeral port, libmicrohttpd) gives each image at a path
 * of 128 random bits, and the bodies carry the link in place of the data
 * URL (chat and Responses: image_url; Messages: a url source); audio stays
 * a data URL (input_audio has no link). It stops in lt_replay_media_free.
 * m may be NULL (no images: nothing to serve). Returns 0, LT_EIO. */
int lt_replay_media_serve(struct lt_replay_media *m, struct lt_err *err);
/* The server's address, http://127.0.0.1:PORT (no secret), or "". */
void lt_replay_media_link_base(const struct lt_replay_media *m, char *out, size_t n);
/* The GETs the link server answered with an image, and with a 404. */
void lt_replay_media_link_stats(const struct lt_replay_media *m, uint64_t *gets, uint64_t *refused);

/* Build job's body with its media (parts, n of them; rec as
 * lt_plan_job_media gave it). Returns 0; LT_EFORMAT with err filled when
 * the media cannot be sent (the request's "media" error); LT_ENOMEM,
 * LT_ELIMIT as lt_replay_build_body. */
int lt_replay_media_body(struct lt_buf *out, const struct lt_replay_build *b,
                         const struct lt_replay_media *m, const struct lt_plan_job *job,
                         const struct lt_plan_media_rec *rec, const struct lt_media *parts,
                         uint32_t *want_in, uint32_t *want_out, struct lt_err *err);

#endif
