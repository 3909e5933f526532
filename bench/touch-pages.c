/*
 * touch-pages: touch N fresh anonymous pages, then exit.
 *
 *     touch-pages N
 *
 * Run under rusage-exec for several N to see the resolution of ru_maxrss: the kernel
 * keeps RSS in per-CPU counters folded into the total in batches, so the reported
 * peak moves in steps (128 KiB on the project's machines), not page by page.
 * See bench/README.md, "Peak RSS has a resolution of 128 KiB".
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: touch-pages N\n");
        return 2;
    }
    long n = strtol(argv[1], NULL, 10);
    if (n < 0 || n > 4096) {
        fprintf(stderr, "touch-pages: N must be 0..4096\n");
        return 2;
    }
    volatile char *p = mmap(NULL, 4096 * 4096, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("touch-pages: mmap");
        return 1;
    }
    for (long i = 0; i < n; i++)
        p[i * 4096] = 1;
    return 0;
}
