/* Writes a synthetic cyclictest -v log to stdout: "%8d:%8lu:%8ld\n" per sample
 * (thread:cycle:value, cyclictest's own format), threads taking turns in blocks of
 * 100 cycles as cyclictest's ring-buffer drain prints them, values in whole µs: mostly
 * 2-12, now and then a spike up to a few hundred.
 *
 *     verbose-log THREADS MEGABYTES > log
 *
 * Stops after the block that reaches MEGABYTES (10^6 bytes). Deterministic (fixed
 * seed), so every bench run imports the same bytes. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: verbose-log THREADS MEGABYTES\n");
        return 2;
    }
    int threads = atoi(argv[1]);
    long long limit = atoll(argv[2]) * 1000000LL;
    if (threads < 1 || limit < 1) {
        fprintf(stderr, "verbose-log: THREADS and MEGABYTES must be positive\n");
        return 2;
    }
    static char buf[1 << 20];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    unsigned long long x = 88172645463325252ULL; /* xorshift64 */
    unsigned long *cycle = calloc(threads, sizeof *cycle);
    long long written = 0;
    while (written < limit) {
        for (int t = 0; t < threads && written < limit; t++) {
            for (int i = 0; i < 100; i++) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                long value = 2 + (long)(x % 11);
                if ((x >> 20) % 10000 == 0)
                    value += (long)((x >> 32) % 400);
                int n = printf("%8d:%8lu:%8ld\n", t, cycle[t]++, value);
                if (n < 0)
                    return 1;
                written += n;
            }
        }
    }
    free(cycle);
    return fflush(stdout) == 0 ? 0 : 1;
}
