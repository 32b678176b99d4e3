/*
 * Images of a replay (replay_media.h): made once per shape before the run,
 * put into each request's body at its send.
 *
 * The body is built as a text request's (lt_replay_build_body, with the
 * prompt shortened by the recorded image tokens, so that text and images
 * together are the recorded prompt), then read back with jansson, its last
 * user message given the images as parts whose URL is a placeholder, and
 * written again with each placeholder replaced by the image's data URL:
 * the megabytes of base64 are copied once, never escaped or parsed.
 */
#include "replay/replay_media.h"

#include "base/lt_image.h"
#include "base/lt_video.h"
#include "base/lt_time.h"

#include <inttypes.h>
#include <jansson.h>
#include <microhttpd.h>
#include <stdatomic.h>
#include <sys/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

/* The pixels an image made here may have (a 100-megapixel image would take
 * seconds and hundreds of megabytes to make: such a record is refused). */
#define MEDIA_MAX_PIXELS ((uint64_t)50000000)
/* Audio is kept under this format code, its duration in ms as the width. */
#define AUDIO_FMT 200
#define AUDIO_MAX_MS 3600000u
#define AUDIO_DEFAULT_MS 1000u
/* Video (MJPEG in AVI, base/lt_video.h) is kept under this format code;
 * its frames at most this many pixels in all. */
#define VIDEO_FMT 201
#define VIDEO_MAX_PIXELS ((uint64_t)1000000000)

struct img {
    uint8_t fmt; /* enum lt_img_fmt (png or jpeg), AUDIO_FMT (w: ms) or VIDEO_FMT */
    uint32_t w, h;
    uint32_t frames;  /* video */
    int64_t frame_us; /* video */
    char *url;        /* "data:image/png;base64,...", NUL-terminated */
    size_t len;
    size_t b64;   /* where the base64 starts in url */
    uint8_t *raw; /* the encoded bytes, kept only to serve them as a link */
    size_t raw_len;
};

/* The path a served image has: /lt-media/ then 32 hex digits of
 * getrandom (only who was given a request's body can name it), then the
 * image's index and extension. */
#define LINK_PREFIX "/lt-media/"
#define LINK_SECRET_HEX 32

struct lt_replay_media {
    struct img *v; /* sorted by (fmt, w, h) */
    size_t n;
    uint64_t max_bytes;
    /* --media-links: the loopback server that serves v[i].raw */
    struct MHD_Daemon *httpd;
    char base[96]; /* "http://127.0.0.1:PORT/lt-media/SECRET/" */
    char secret[LINK_SECRET_HEX + 1];
    atomic_uint_fast64_t gets, refused_gets;
};

/* The format a part is made in: its own when the codec makes it, else png. */
static enum lt_img_fmt made_fmt(const struct lt_media *p, bool *subst)
{
    enum lt_img_fmt f = lt_img_fmt_of(p->fmt, strnlen(p->fmt, sizeof p->fmt));
    *subst = f != LT_IMG_PNG && f != LT_IMG_JPEG;
    return *subst ? LT_IMG_PNG : f;
}

static void part_size(const struct lt_media *p, uint32_t *w, uint32_t *h)
{
    if (p->kind == LT_MEDIA_VIDEO) {
        uint32_t f;
        int64_t us;
        lt_media_video_shape(p, w, h, &f, &us);
        return;
    }
    if (p->kind == LT_MEDIA_AUDIO) { /* its duration in ms, a second when unknown */
        int64_t ms = p->dur > 0 ? (p->dur + 999) / 1000 : AUDIO_DEFAULT_MS;
        *w = ms > AUDIO_MAX_MS ? AUDIO_MAX_MS + 1 : (uint32_t)ms;
        *h = 0;
        return;
    }
    *w = p->w ? p->w : LT_REPLAY_IMAGE_SIDE;
    *h = p->h ? p->h : LT_REPLAY_IMAGE_SIDE;
}

/* The key format of part p: its image format, AUDIO_FMT or VIDEO_FMT. */
static int key_fmt(const struct lt_media *p, bool *subst)
{
    *subst = false;
    if (p->kind == LT_MEDIA_VIDEO) {
        *subst = strcmp(p->fmt, "avi") != 0; /* an mp4 or webm is made as an AVI */
        return VIDEO_FMT;
    }
    return p->kind == LT_MEDIA_AUDIO ? AUDIO_FMT : (int)made_fmt(p, subst);
}

/* Part p's key in the made media (fmt, w, h, and a video's frames). */
static struct img part_key(const struct lt_media *p, bool *subst)
{
    struct img k = {.fmt = (uint8_t)key_fmt(p, subst)};
    if (p->kind == LT_MEDIA_VIDEO)
        lt_media_video_shape(p, &k.w, &k.h, &k.frames, &k.frame_us);
    else
        part_size(p, &k.w, &k.h);
    return k;
}

static int img_cmp(const void *a, const void *b)
{
    const struct img *x = a, *y = b;
    if (x->fmt != y->fmt)
        return x->fmt < y->fmt ? -1 : 1;
    if (x->w != y->w)
        return x->w < y->w ? -1 : 1;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    if (x->frames != y->frames)
        return x->frames < y->frames ? -1 : 1;
    return x->frame_us < y->frame_us ? -1 : x->frame_us > y->frame_us;
}

/* Why part p is not made, or NULL when it is. */
static const char *refusal(const struct lt_media *p, uint64_t max_bytes, char *buf, size_t n)
{
    uint32_t w, h;
    part_size(p, &w, &h);
    if (p->kind == LT_MEDIA_AUDIO && w > AUDIO_MAX_MS) {
        snprintf(buf, n, "%lld us of audio, over an hour", (long long)p->dur);
        return buf;
    }
    if (p->bytes > max_bytes) {
        snprintf(buf, n, "a %" PRIu64 "-byte image, over --max-image-bytes %" PRIu64, p->bytes,
                 max_bytes);
        return buf;
    }
    if (p->kind != LT_MEDIA_AUDIO && (uint64_t)w * h > MEDIA_MAX_PIXELS) {
        snprintf(buf, n, "a %ux%u %s, over %" PRIu64 " pixels", w, h,
                 p->kind == LT_MEDIA_VIDEO ? "video" : "image", MEDIA_MAX_PIXELS);
        return buf;
    }
    if (p->kind == LT_MEDIA_VIDEO) {
        uint32_t f;
        int64_t us;
        lt_media_video_shape(p, &w, &h, &f, &us);
        if (f > LT_VIDEO_MAX_FRAMES || (uint64_t)w * h * f > VIDEO_MAX_PIXELS) {
            snprintf(buf, n, "a video of %u frames of %ux%u, over %u frames or %" PRIu64 " pixels",
                     f, w, h, LT_VIDEO_MAX_FRAMES, VIDEO_MAX_PIXELS);
            return buf;
        }
        if (us > 60000000) {
            snprintf(buf, n, "a video of %u frames over %lld us, over a minute a frame", f,
                     (long long)p->dur);
            return buf;
        }
    }
    return NULL;
}

static const struct img *find(const struct lt_replay_media *m, const struct img *key)
{
    return m ? bsearch(key, m->v, m->n, sizeof *m->v, img_cmp) : NULL;
}

void lt_replay_media_free(struct lt_replay_media *m)
{
    if (!m)
        return;
    if (m->httpd)
        MHD_stop_daemon(m->httpd);
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].url);
        free(m->v[i].raw);
    }
    free(m->v);
    free(m);
}

int lt_replay_media_new(struct lt_replay_media **out, const struct lt_plan_jobs *js,
                        uint64_t max_bytes, struct lt_replay_media_stats *st, struct lt_err *err)
{
    int rc = 0;
    *out = NULL;
    memset(st, 0, sizeof *st);
    struct lt_replay_media *m = calloc(1, sizeof *m);
    if (!m)
        return lt_errset(err, LT_ENOMEM, "out of memory for the trace's images");
    m->max_bytes = max_bytes;
    size_t cap = 0;
    lt_mono t0 = lt_mono_now();
    struct lt_buf img, url;
    lt_buf_init(&img, (size_t)512 << 20);
    lt_buf_init(&url, (size_t)1 << 30);
    char why[160];
    for (size_t i = 0; i < js->n_media_parts; i++) {
        const struct lt_media *p = &js->media_parts[i];
        if (p->kind != LT_MEDIA_IMAGE && p->kind != LT_MEDIA_AUDIO && p->kind != LT_MEDIA_VIDEO)
            continue;
        if (refusal(p, max_bytes, why, sizeof why)) {
            st->refused++;
            continue;
        }
        bool subst;
        struct img key = part_key(p, &subst);
        int f = key.fmt;
        uint32_t w = key.w, h = key.h;
        bool have = false;
        for (size_t k = 0; k < m->n && !have; k++) /* the trace's shapes are few */
            have = !img_cmp(&m->v[k], &key);
        if (have)
            continue;
        st->substituted += subst;
        if (m->n == cap) {
            size_t nc = cap ? cap * 2 : 16;
            struct img *v = realloc(m->v, nc * sizeof *v);
            if (!v) {
                rc = lt_errset(err, LT_ENOMEM, "out of memory for the trace's images");
                goto out;
            }
            m->v = v;
            cap = nc;
        }
        lt_buf_reset(&img);
        lt_buf_reset(&url);
        /* the seed is the shape's: the same trace sends the same images */
        uint64_t seed = (uint64_t)f << 40 ^ (uint64_t)w << 20 ^ h ^ (uint64_t)key.frames << 48;
        if (f == VIDEO_FMT) {
            LT_TRY(lt_video_encode(&img, w, h, key.frames, key.frame_us, seed, err));
            LT_TRY(lt_buf_puts(&url, "data:video/x-msvideo;base64,"));
        } else if (f == AUDIO_FMT) {
            LT_TRY(lt_wav_encode(&img, (int64_t)w * 1000, seed, err));
            LT_TRY(lt_buf_puts(&url, "data:audio/wav;base64,"));
        } else {
            LT_TRY(lt_img_encode(&img, (enum lt_img_fmt)f, w, h, seed, err));
            LT_TRY(lt_buf_printf(&url, "data:%s;base64,", lt_img_mime((enum lt_img_fmt)f)));
        }
        size_t b64 = url.len;
        LT_TRY(lt_b64_encode(&url, (const uint8_t *)img.p, img.len));
        char *s = malloc(url.len + 1);
        if (!s) {
            rc = lt_errset(err, LT_ENOMEM, "out of memory for the trace's images");
            goto out;
        }
        memcpy(s, url.p, url.len);
        s[url.len] = 0;
        uint8_t *raw = malloc(img.len ? img.len : 1);
        if (!raw) {
            free(s);
            rc = lt_errset(err, LT_ENOMEM, "out of memory for the trace's images");
            goto out;
        }
        memcpy(raw, img.p, img.len);
        m->v[m->n++] = (struct img){.fmt = (uint8_t)f,
                                    .w = w,
                                    .h = h,
                                    .frames = key.frames,
                                    .frame_us = key.frame_us,
                                    .url = s,
                                    .len = url.len,
                                    .b64 = b64,
                                    .raw = raw,
                                    .raw_len = img.len};
        st->shapes++;
        st->bytes += img.len;
    }
    if (m->n) /* qsort takes no NULL array, even of none */
        qsort(m->v, m->n, sizeof *m->v, img_cmp);
    st->prep_us = lt_mono_diff_us(lt_mono_now(), t0);
out:
    lt_buf_release(&img);
    lt_buf_release(&url);
    if (rc < 0 || (!m->n && !st->refused)) {
        lt_replay_media_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

static const char *img_ext(const struct img *im)
{
    return im->fmt == AUDIO_FMT     ? "wav"
           : im->fmt == VIDEO_FMT   ? "avi"
           : im->fmt == LT_IMG_JPEG ? "jpg"
                                    : "png";
}

/* One GET of the link server: the image its path names, or a 404 (any
 * other path, method or secret). The bytes are the replay's own, alive
 * until the server stops, so they are served without a copy. */
static enum MHD_Result serve(void *cls, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_len, void **ctx)
{
    (void)version, (void)upload, (void)upload_len, (void)ctx;
    struct lt_replay_media *m = cls;
    const struct img *im = NULL;
    size_t pl = strlen(LINK_PREFIX);
    if (!strcmp(method, "GET") && !strncmp(url, LINK_PREFIX, pl) &&
        !strncmp(url + pl, m->secret, LINK_SECRET_HEX) && url[pl + LINK_SECRET_HEX] == '/') {
        char *e;
        const char *q = url + pl + LINK_SECRET_HEX + 1;
        unsigned long i = strtoul(q, &e, 10);
        if (e != q && *e == '.' && i < m->n && !strcmp(e + 1, img_ext(&m->v[i])))
            im = &m->v[i];
    }
    struct MHD_Response *r;
    enum MHD_Result ok;
    if (!im) {
        atomic_fetch_add(&m->refused_gets, 1);
        static const char nf[] = "not found\n";
        r = MHD_create_response_from_buffer(sizeof nf - 1, (void *)nf, MHD_RESPMEM_PERSISTENT);
        if (!r)
            return MHD_NO;
        ok = MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, r);
    } else {
        atomic_fetch_add(&m->gets, 1);
        r = MHD_create_response_from_buffer(im->raw_len, im->raw, MHD_RESPMEM_PERSISTENT);
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, "Content-Type",
                                im->fmt == AUDIO_FMT   ? "audio/wav"
                                : im->fmt == VIDEO_FMT ? "video/x-msvideo"
                                                       : lt_img_mime((enum lt_img_fmt)im->fmt));
        ok = MHD_queue_response(conn, MHD_HTTP_OK, r);
    }
    MHD_destroy_response(r);
    return ok;
}

int lt_replay_media_serve(struct lt_replay_media *m, struct lt_err *err)
{
    if (!m || m->httpd)
        return 0;
    uint8_t rnd[LINK_SECRET_HEX / 2];
    size_t got = 0;
    while (got < sizeof rnd) {
        ssize_t k = getrandom(rnd + got, sizeof rnd - got, 0);
        if (k <= 0)
            return lt_errset(err, LT_EIO, "no random bytes for the media links' path");
        got += (size_t)k;
    }
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(m->secret + 2 * i, 3, "%02x", rnd[i]);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    m->httpd =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL_LINUX_ONLY, 0, NULL, NULL,
                         serve, m, MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_THREAD_POOL_SIZE, 2u,
                         MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    if (!m->httpd)
        return lt_errset(err, LT_EIO, "cannot start the media links' server on 127.0.0.1");
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(m->httpd, MHD_DAEMON_INFO_BIND_PORT);
    if (!di || !di->port) {
        MHD_stop_daemon(m->httpd);
        m->httpd = NULL;
        return lt_errset(err, LT_EIO, "the media links' server has no port");
    }
    snprintf(m->base, sizeof m->base, "http://127.0.0.1:%u" LINK_PREFIX "%s/", (unsigned)di->port,
             m->secret);
    return 0;
}

void lt_replay_media_link_base(const struct lt_replay_media *m, char *out, size_t n)
{
    const char *end = m && m->httpd ? strstr(m->base, LINK_PREFIX) : NULL;
    snprintf(out, n, "%.*s", end ? (int)(end - m->base) : 0, end ? m->base : "");
}

void lt_replay_media_link_stats(const struct lt_replay_media *m, uint64_t *gets, uint64_t *refused)
{
    *gets = m ? atomic_load(&m->gets) : 0;
    *refused = m ? atomic_load(&m->refused_gets) : 0;
}

/* Placeholders: '@' never appears in synthesized words, and the salt makes
 * a recorded text that holds one by chance improbable. */
#define PH_FMT "@lt-img-%08x-%u@"

/* The content of message msg as a list of parts (a string becomes one
 * text part of type text_type); NULL when it has none that can be a list. */
static json_t *content_list(json_t *msg, const char *text_type)
{
    json_t *c = json_object_get(msg, "content");
    if (json_is_array(c))
        return c;
    json_t *list = json_array();
    if (json_is_string(c))
        json_array_append_new(list, json_pack("{s:s,s:O}", "type", text_type, "text", c));
    json_object_set_new(msg, "content", list);
    return list;
}

/* The last message of list whose role is user, or NULL. */
static json_t *last_user(json_t *list)
{
    for (size_t i = json_array_size(list); i-- > 0;) {
        json_t *m = json_array_get(list, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (role && !strcmp(role, "user"))
            return m;
    }
    return NULL;
}

int lt_replay_media_body(struct lt_buf *out, const struct lt_replay_build *b,
                         const struct lt_replay_media *m, const struct lt_plan_job *job,
                         const struct lt_plan_media_rec *rec, const struct lt_media *parts,
                         uint32_t *want_in, uint32_t *want_out, struct lt_err *err)
{
    int rc = 0;
    char why[160];
    json_t *root = NULL;
    char *dumped = NULL;
    if (rec->bad)
        return lt_errset(err, LT_EFORMAT, "its media key is malformed: %s", rec->why);
    const struct img *imgs[LT_MEDIA_MAX];
    uint32_t ni = 0;
    uint64_t img_tokens = 0;
    for (uint32_t i = 0; i < rec->n; i++) {
        const struct lt_media *p = &parts[i];
        if (p->kind != LT_MEDIA_IMAGE &&
            !(p->kind == LT_MEDIA_AUDIO && b->api == LT_REPLAY_API_CHAT) &&
            !(p->kind == LT_MEDIA_VIDEO && b->api == LT_REPLAY_API_CHAT))
            return lt_errset(err, LT_EFORMAT, "part %u is %s: replay sends images%s only", i + 1,
                             lt_media_kind_name(p->kind),
                             b->api == LT_REPLAY_API_CHAT ? ", audio and video"
                                                          : " (audio and video: chat)");
        if (refusal(p, m ? m->max_bytes : LT_REPLAY_MAX_IMAGE_BYTES, why, sizeof why))
            return lt_errset(err, LT_EFORMAT, "part %u is %s", i + 1, why);
        bool subst;
        struct img key = part_key(p, &subst);
        if (!(imgs[ni++] = find(m, &key)))
            return lt_errset(err, LT_EFORMAT, "%s %u (%ux%u) was not prepared",
                             lt_media_kind_name(p->kind), i + 1, key.w, key.h);
        img_tokens += p->tokens;
    }
    if (!lt_replay_api_chat_like(b->api))
        return lt_errset(err, LT_EFORMAT, "the completions API carries no images");
    /* the text is the prompt less what the images take */
    struct lt_plan_job text = *job;
    text.in = job->in > img_tokens ? job->in - (uint32_t)img_tokens : 1;
    LT_TRY(lt_replay_build_body(out, b, &text, want_in, want_out));
    lt_plan_job_lengths(job, b->default_out, want_in, &(uint32_t){0});
    if (!ni)
        return 0;

    json_error_t je;
    root = json_loadb(out->p, out->len, 0, &je);
    if (!root)
        return lt_errset(err, LT_EFORMAT, "its body is not JSON: %s", je.text);
    bool responses = b->api == LT_REPLAY_API_RESPONSES;
    json_t *list = json_object_get(root, responses ? "input" : "messages");
    if (responses && json_is_string(list)) {
        json_t *l = json_pack("[{s:s,s:O}]", "role", "user", "content", list);
        json_object_set_new(root, "input", l);
        list = l;
    }
    json_t *msg = last_user(list);
    if (!msg) {
        rc = lt_errset(err, LT_EFORMAT, "its prompt has no user message to carry the images");
        goto out;
    }
    json_t *content = content_list(msg, b->api == LT_REPLAY_API_CHAT ? "text"
                                        : responses                  ? "input_text"
                                                                     : "text");
    uint32_t salt = (uint32_t)(b->salt ^ job->index);
    for (uint32_t i = 0; i < ni; i++) {
        char ph[48];
        snprintf(ph, sizeof ph, PH_FMT, salt, i);
        json_t *part;
        if (imgs[i]->fmt == AUDIO_FMT)
            part = json_pack("{s:s,s:{s:s,s:s}}", "type", "input_audio", "input_audio", "data", ph,
                             "format", "wav");
        else if (imgs[i]->fmt == VIDEO_FMT)
            part = json_pack("{s:s,s:{s:s}}", "type", "video_url", "video_url", "url", ph);
        else if (b->api == LT_REPLAY_API_CHAT)
            part = json_pack("{s:s,s:{s:s}}", "type", "image_url", "image_url", "url", ph);
        else if (responses)
            part = json_pack("{s:s,s:s}", "type", "input_image", "image_url", ph);
        else if (m->httpd)
            part =
                json_pack("{s:s,s:{s:s,s:s}}", "type", "image", "source", "type", "url", "url", ph);
        else
            part = json_pack("{s:s,s:{s:s,s:s,s:s}}", "type", "image", "source", "type", "base64",
                             "media_type", lt_img_mime((enum lt_img_fmt)imgs[i]->fmt), "data", ph);
        json_array_append_new(content, part);
    }
    dumped = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!dumped) {
        rc = lt_errset(err, LT_ENOMEM, "out of memory building a request with images");
        goto out;
    }
    lt_buf_reset(out);
    const char *p = dumped;
    for (uint32_t i = 0; i < ni; i++) {
        char ph[48];
        int pl = snprintf(ph, sizeof ph, PH_FMT, salt, i);
        const char *at = strstr(p, ph);
        if (!at) {
            rc = lt_errset(err, LT_EFORMAT, "lost an image's place in its body");
            goto out;
        }
        const struct img *im = imgs[i];
        LT_TRY(lt_buf_append(out, p, (size_t)(at - p)));
        if (m->httpd && im->fmt != AUDIO_FMT) {
            LT_TRY(lt_buf_printf(out, "%s%zu.%s", m->base, (size_t)(im - m->v), img_ext(im)));
        } else {
            size_t skip = b->api == LT_REPLAY_API_MESSAGES || im->fmt == AUDIO_FMT ? im->b64 : 0;
            LT_TRY(lt_buf_append(out, im->url + skip, im->len - skip));
        }
        p = at + pl;
    }
    LT_TRY(lt_buf_puts(out, p));
out:
    free(dumped);
    json_decref(root);
    return rc;
}
