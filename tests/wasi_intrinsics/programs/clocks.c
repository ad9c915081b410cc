// Clocks, sleeping (poll_oneoff) and randomness.
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long ns(clockid_t clock) {
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0) return -1;
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(void) {
    struct timespec res;
    long long before = ns(CLOCK_MONOTONIC);
    struct timespec nap = {0, 20 * 1000 * 1000};
    if (nanosleep(&nap, NULL) != 0) return 1;
    long long slept = ns(CLOCK_MONOTONIC) - before;
    printf("realtime after 2020: %d\n", ns(CLOCK_REALTIME) > 1577836800LL * 1000000000LL);
    printf("slept at least 20ms: %d\n", slept >= 20 * 1000 * 1000);
    printf("resolution positive: %d\n",
           clock_getres(CLOCK_MONOTONIC, &res) == 0 && (res.tv_sec > 0 || res.tv_nsec > 0));
    printf("cputime ok: %d\n", ns(CLOCK_PROCESS_CPUTIME_ID) >= 0);
    unsigned char a[32] = {0}, b[32] = {0};
    if (getentropy(a, sizeof a) != 0 || getentropy(b, sizeof b) != 0) return 2;
    printf("random differs: %d\n", memcmp(a, b, sizeof a) != 0);
    return 0;
}
