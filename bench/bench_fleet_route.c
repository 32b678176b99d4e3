/*
 * The fleet router's own cost (replay/route.h): nanoseconds per request
 * of a pick and its done, for each policy, over 2,000,000 requests of a
 * synthetic stream (10,000 sessions, 64 prefixes of 4 blocks, up to 256 in
 * flight at once) across 8 replicas. What it says: whether routing could
 * matter at 10,000 requests/s (100 us a request).
 */
#include "replay/route.h"

#include <stdio.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    enum { N = 8, REQ = 2000000, WINDOW = 256 };
    static const char *const pol[] = {"round-robin", "least-outstanding", "session", "prefix",
                                      "weighted"};
    const uint32_t w[N] = {1, 2, 3, 4, 1, 2, 3, 4};
    static uint64_t blocks[64][4];
    for (int i = 0; i < 64; i++)
        for (int k = 0; k < 4; k++)
            blocks[i][k] = (uint64_t)i * 1000003u + (uint64_t)k;
    static int held[WINDOW];
    for (size_t p = 0; p < sizeof pol / sizeof pol[0]; p++) {
        struct lt_route_opts o = {.n = N, .weights = w};
        lt_route_parse(pol[p], &o);
        struct lt_route r;
        struct lt_err e = {0};
        if (lt_route_init(&r, &o, &e) < 0) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        for (int k = 0; k < WINDOW; k++)
            held[k] = -1;
        uint64_t x = 88172645463325252ULL, sink = 0;
        double t0 = now_s();
        for (uint64_t s = 0; s < REQ; s++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
            struct lt_route_key k = {.seq = s,
                                     .index = s,
                                     .session = 1 + x % 10000,
                                     .blocks = blocks[(x >> 20) % 64],
                                     .n_blocks = 4};
            int slot = (int)(s % WINDOW);
            if (held[slot] >= 0)
                lt_route_done(&r, held[slot]);
            held[slot] = lt_route_pick(&r, &k);
            sink += (uint64_t)held[slot];
        }
        double dt = now_s() - t0;
        printf("%-18s %6.1f ns per request (pick + done), %.1f M requests/s on one core "
               "(checksum %llu, %llu spilled)\n",
               pol[p], dt / REQ * 1e9, REQ / dt / 1e6, (unsigned long long)sink,
               (unsigned long long)r.spilled);
        lt_route_release(&r);
    }
    return 0;
}
