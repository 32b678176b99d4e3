/*
 * The hash map of lt_u64map.h. Keys are spread with lt_mix64 so that the
 * small consecutive ids real traces use (Mooncake numbers its blocks 0, 1,
 * 2, ...) do not cluster.
 */
#include "base/lt_u64map.h"
#include "base/lt_rng.h"

#include <stdlib.h>
#include <string.h>

void lt_u64map_init(struct lt_u64map *m)
{
    memset(m, 0, sizeof *m);
}

void lt_u64map_release(struct lt_u64map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
    lt_u64map_init(m);
}

static size_t find(const struct lt_u64map *m, uint64_t key)
{
    size_t mask = m->cap - 1, i = (size_t)lt_mix64(key) & mask;
    while (m->used[i] && m->keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

static int grow(struct lt_u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 1024;
    struct lt_u64map n = {.cap = cap};
    n.keys = malloc(cap * sizeof *n.keys);
    n.vals = malloc(cap * sizeof *n.vals);
    n.used = calloc(cap, 1);
    if (!n.keys || !n.vals || !n.used) {
        free(n.keys);
        free(n.vals);
        free(n.used);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i])
            continue;
        size_t j = find(&n, m->keys[i]);
        n.used[j] = 1;
        n.keys[j] = m->keys[i];
        n.vals[j] = m->vals[i];
    }
    n.len = m->len;
    lt_u64map_release(m);
    *m = n;
    return 0;
}

uint64_t *lt_u64map_upsert(struct lt_u64map *m, uint64_t key, bool *added)
{
    if ((m->len + 1) * 2 > m->cap && grow(m) < 0)
        return NULL;
    size_t i = find(m, key);
    bool fresh = !m->used[i];
    if (fresh) {
        m->used[i] = 1;
        m->keys[i] = key;
        m->vals[i] = 0;
        m->len++;
    }
    if (added)
        *added = fresh;
    return &m->vals[i];
}

uint64_t *lt_u64map_get(const struct lt_u64map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t i = find(m, key);
    return m->used[i] ? &m->vals[i] : NULL;
}

size_t lt_u64map_memory(const struct lt_u64map *m)
{
    return m->cap * (2 * sizeof(uint64_t) + 1);
}
