/*
 * A hash map from 64-bit keys to 64-bit values (open addressing, linear
 * probing, grows at 1/2 load). It holds the sets that trace statistics and
 * the synthesizer need: prefix block ids seen, sessions and their turn
 * counts. Every key is allowed, 0 included.
 */
#ifndef LT_U64MAP_H
#define LT_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct lt_u64map {
    uint64_t *keys;
    uint64_t *vals;
    uint8_t *used;
    size_t cap; /* slots, a power of two, or 0 */
    size_t len; /* keys held */
};

void lt_u64map_init(struct lt_u64map *m);
void lt_u64map_release(struct lt_u64map *m);
/* Pointer to key's value, inserting it with value 0 if absent (*added says
 * which, if not NULL). NULL when out of memory. The pointer is valid until
 * the next insertion. */
uint64_t *lt_u64map_upsert(struct lt_u64map *m, uint64_t key, bool *added);
/* Pointer to key's value, or NULL if absent. */
uint64_t *lt_u64map_get(const struct lt_u64map *m, uint64_t key);
/* Bytes held. */
size_t lt_u64map_memory(const struct lt_u64map *m);

#endif
