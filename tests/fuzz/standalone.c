/* SPDX-License-Identifier: MIT */
/*
 * main() for a fuzz target built without libFuzzer: runs the target once
 * on each file named on the command line, or on each file of a directory
 * named there (the seed corpus), so that `meson test` checks every seed
 * with the target's own assertions (a failed one aborts).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long n;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "%s: cannot read\n", path);
        return -1;
    }
    /* An exact allocation: a read past the input is caught by ASan. */
    buf = malloc(n ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "%s: cannot read\n", path);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 1;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order: a failure names the same seed
 * on every run. */
static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int count = 0;
    if (!d) {
        fprintf(stderr, "%s: cannot read\n", dir);
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap && !(names = realloc(names, (cap = cap ? cap * 2 : 32) * sizeof *names)))
            return -1;
        if (!(names[n] = malloc(strlen(dir) + strlen(de->d_name) + 2)))
            return -1;
        sprintf(names[n++], "%s/%s", dir, de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp);
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        if (count >= 0 && stat(names[i], &sb) == 0 && S_ISREG(sb.st_mode))
            count = run_file(names[i]) < 0 ? -1 : count + 1;
        free(names[i]);
    }
    free(names);
    return count;
}

int main(int argc, char **argv)
{
    const char *name = strrchr(argv[0], '/');
    int total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        int k = stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
        if (k < 0)
            return 2;
        total += k;
    }
    if (total == 0) {
        fprintf(stderr, "%s: no inputs\n", name ? name + 1 : argv[0]);
        return 2;
    }
    printf("%s: %d inputs, every check held\n", name ? name + 1 : argv[0], total);
    return 0;
}
