/* Independent reference numbers for `rtbench sysbench`: each measurement written plainly in C,
 * timed with CLOCK_MONOTONIC over a fixed count, best of 5 rounds. Build and run through
 * bench/sysbench-reference.sh. Prints "name value unit" lines. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static volatile sig_atomic_t caught;
static void on_usr1(int s) { (void)s; caught++; }

/* Seconds per operation, best of 5 rounds of n. */
#define BEST(n, body)                                                  \
    ({                                                                 \
        double best = 1e9;                                             \
        for (int r = 0; r < 5; r++) {                                  \
            double t0 = now();                                         \
            for (long i = 0; i < (n); i++) { body; }                   \
            double dt = (now() - t0) / (n);                            \
            if (dt < best) best = dt;                                  \
        }                                                              \
        best;                                                          \
    })

/* A partner that sends back every byte until its input ends. */
static void echo(int in, int out) {
    char b;
    while (read(in, &b, 1) == 1 && write(out, &b, 1) == 1) {}
    _exit(0);
}

int main(void) {
    char b = 1;
    printf("null-call %.4f us\n", 1e6 * BEST(1000000, syscall(SYS_getppid)));
    struct stat st;
    printf("stat %.4f us\n", 1e6 * BEST(200000, stat("/usr/bin/true", &st)));
    signal(SIGUSR1, on_usr1);
    printf("sig-catch %.4f us\n", 1e6 * BEST(200000, raise(SIGUSR1)));
    printf("fork-exit %.4f us\n", 1e6 * BEST(500, { pid_t p = fork(); if (p == 0) _exit(0); waitpid(p, 0, 0); }));

    int a[2], c[2];
    pipe(a);
    pipe(c);
    pid_t p = fork();
    if (p == 0) { close(a[1]); close(c[0]); echo(a[0], c[1]); }
    close(a[0]);
    close(c[1]);
    printf("lat-pipe %.4f us\n", 1e6 * BEST(100000, { write(a[1], &b, 1); read(c[0], &b, 1); }));
    /* Two processes passing a token: two switches per round trip, less the pipe work done
     * alone (a write and a read on a pipe of our own), as lmbench's lat_ctx 2p/0K. */
    int own[2];
    pipe(own);
    double rt = BEST(100000, { write(a[1], &b, 1); read(c[0], &b, 1); });
    double alone = BEST(100000, { write(own[1], &b, 1); read(own[0], &b, 1); });
    printf("ctx-2p-0k %.4f us\n", 1e6 * (rt - 2 * alone) / 2);
    close(a[1]);
    waitpid(p, 0, 0);

    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    bind(ls, (struct sockaddr *)&sa, sizeof sa);
    listen(ls, 1);
    getsockname(ls, (struct sockaddr *)&sa, &len);
    int cs = socket(AF_INET, SOCK_STREAM, 0);
    connect(cs, (struct sockaddr *)&sa, sizeof sa);
    int ss = accept(ls, 0, 0), one = 1;
    setsockopt(cs, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(ss, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    p = fork();
    if (p == 0) { close(cs); echo(ss, ss); }
    close(ss);
    printf("lat-tcp %.4f us\n", 1e6 * BEST(50000, { write(cs, &b, 1); read(cs, &b, 1); }));
    close(cs);
    waitpid(p, 0, 0);

    size_t words = (16 << 20) / 8;
    uint64_t *m = malloc(words * 8), sum = 0;
    for (size_t i = 0; i < words; i++) m[i] = i;
    /* The barrier keeps the compiler from reading the unchanged buffer once for all rounds. */
    double per = BEST(20, { __asm__ volatile("" ::: "memory"); for (size_t i = 0; i < words; i++) sum += m[i]; });
    printf("bw-mem-read %.1f MB/s\n", (16 << 20) / per / 1e6);
    return sum == 42; /* keeps the sum alive */
}
