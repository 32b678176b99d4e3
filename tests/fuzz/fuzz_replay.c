/*
 * Runs a fuzz target over every file of a corpus directory, without
 * libFuzzer: the corpus is a regression test that any compiler runs under
 * ctest (and under the sanitizers in CI).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    int files = 0;
    for (int a = 1; a < argc; a++) {
        DIR *d = opendir(argv[a]);
        if (!d) {
            fprintf(stderr, "fuzz_replay: cannot open corpus %s\n", argv[a]);
            return 1;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
            FILE *f = fopen(path, "rb");
            if (!f)
                continue;
            fseek(f, 0, SEEK_END);
            long n = ftell(f);
            fseek(f, 0, SEEK_SET);
            uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
            if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
                fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
                return 1;
            }
            fclose(f);
            LLVMFuzzerTestOneInput(buf, (size_t)n);
            free(buf);
            files++;
        }
        closedir(d);
    }
    if (files == 0) {
        fprintf(stderr, "fuzz_replay: the corpus is empty\n");
        return 1;
    }
    printf("fuzz_replay: %d inputs ran cleanly\n", files);
    return 0;
}
