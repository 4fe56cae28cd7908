/* A real-time demonstration application for `rtbench watch`: periodic SCHED_FIFO threads done
 * right (memory locked and prefaulted, absolute clock_nanosleep, pinned, priority-inheriting
 * locks), and one switch per mistake that costs a real-time thread its latency.
 *
 *   rtdemo [-D SECONDS] [-p PERIOD_US] [-c CPU] [MISTAKE…]
 *
 * MISTAKE: fault (touches fresh memory every period), sleep (relative nanosleep instead of an
 * absolute clock_nanosleep), block (a blocking read on a pipe), inversion (waits on a lock
 * without priority inheritance held by a lower-priority thread, a middle one hogging the CPU),
 * migrate (the periodic thread left unpinned, and two higher-priority intruders taking a CPU
 * each in turn, so it is moved between them), throttle (spins without sleeping, past the RT
 * runtime, an ordinary thread on its CPU starved until the kernel throttles it), share (two
 * FIFO threads of one priority on one CPU). The helper threads sleep as a real-time thread
 * should (absolute clock_nanosleep), so each switch makes one mistake only.
 *
 * Prints "ready PID", then each thread it starts prints "thread TID NAME POLICY PRIO"; it ends by
 * itself after -D seconds, printing its first periodic thread's lateness at wake-up (its own
 * measure of its period's jitter): "jitter N p50 p99 max" in microseconds. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int fault, slp, block, inversion, migrate, throttle, share;
static int period_us = 1000, cpu = 0;
static double duration = 5;
static struct timespec end_at;
static pthread_mutex_t plain_lock = PTHREAD_MUTEX_INITIALIZER;
/* The first periodic thread's lateness at each wake-up (ns past the time it asked for). */
#define LATE_MAX 4000000
static long *late;
static long lates;
static pthread_mutex_t pi_lock;
static int pipe_fds[2];
/* Set once the starved thread has said its id (throttle): the spinning waits for it. */
static volatile int starved_ready;

struct spec {
    const char *name;
    int prio;
    void *(*body)(void *);
    /* Pinned to the -c CPU plus this (modulo the CPUs), and its phase in a 10 ms cycle. */
    int cpu_offset;
    long phase_us;
};

static struct timespec base;
static struct spec first_periodic;

/* Each thread names itself and says its id (as the kernel and rtbench name it) first. */
static void announce(void *arg)
{
    const struct spec *s = arg;
    pthread_setname_np(pthread_self(), s->name);
    printf("thread %ld %s %s %d\n", (long)syscall(SYS_gettid), s->name, s->prio ? "FIFO" : "OTHER", s->prio);
    fflush(stdout);
}

static int over(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > end_at.tv_sec || (now.tv_sec == end_at.tv_sec && now.tv_nsec >= end_at.tv_nsec);
}

static void advance(struct timespec *t, long ns)
{
    t->tv_nsec += ns;
    while (t->tv_nsec >= 1000000000L) {
        t->tv_nsec -= 1000000000L;
        t->tv_sec++;
    }
}

/* Sleeps until now + us, absolute on CLOCK_MONOTONIC (the way that keeps a real-time rule). */
static void pause_us(long us)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    advance(&t, us * 1000L);
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
}

static void spin_us(long us)
{
    struct timespec from, now;
    clock_gettime(CLOCK_MONOTONIC, &from);
    do
        clock_gettime(CLOCK_MONOTONIC, &now);
    while ((now.tv_sec - from.tv_sec) * 1000000L + (now.tv_nsec - from.tv_nsec) / 1000 < us);
}

/* The periodic real-time thread: wakes every period, works a little, sleeps again. */
static void *periodic(void *arg)
{
    announce(arg);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    long page = sysconf(_SC_PAGESIZE);
    while (!over()) {
        advance(&next, period_us * 1000L);
        if (slp) {
            struct timespec rel = {0, period_us * 1000L};
            nanosleep(&rel, NULL);
        } else {
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        }
        if (arg == (void *)&first_periodic && lates < LATE_MAX) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            late[lates++] = (now.tv_sec - next.tv_sec) * 1000000000L + (now.tv_nsec - next.tv_nsec);
        }
        if (fault) {
            /* Fresh pages, never locked: each touch a page fault. */
            char *fresh = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (fresh != MAP_FAILED) {
                for (int i = 0; i < 4; i++)
                    fresh[i * page] = 1;
                munmap(fresh, 4 * page);
            }
        }
        if (block) {
            char c;
            if (read(pipe_fds[0], &c, 1) <= 0)
                block = 0;
        }
        pthread_mutex_lock(inversion ? &plain_lock : &pi_lock);
        spin_us(20);
        pthread_mutex_unlock(inversion ? &plain_lock : &pi_lock);
        if (throttle && starved_ready)
            spin_us(period_us * 2);
    }
    return NULL;
}

/* Feeds the blocking reader once a period. */
static void *feeder(void *arg)
{
    announce(arg);
    while (!over()) {
        pause_us(period_us);
        if (write(pipe_fds[1], "x", 1) < 0)
            break;
    }
    close(pipe_fds[1]); /* the reader sees the end instead of waiting for ever */
    return NULL;
}

/* The low-priority holder of the plain lock (inversion). */
static void *holder(void *arg)
{
    announce(arg);
    while (!over()) {
        pthread_mutex_lock(&plain_lock);
        spin_us(300);
        pthread_mutex_unlock(&plain_lock);
        pause_us(period_us);
    }
    return NULL;
}

/* A higher-priority thread that takes its CPU 4 ms of every 10 (migrate): one on each of two
 * CPUs, in turn, so an unpinned thread woken where one spins is pushed to the other CPU. */
static void *intruder(void *arg)
{
    announce(arg);
    const struct spec *s = arg;
    struct timespec next = base;
    advance(&next, s->phase_us * 1000L);
    while (!over()) {
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        spin_us(4000);
        advance(&next, 10000000L);
    }
    return NULL;
}

/* The middle-priority hog that keeps the holder off the CPU (inversion): 60 % of it, so the
 * real-time threads together stay below the RT runtime (95 %) and are not throttled too. */
static void *hog(void *arg)
{
    announce(arg);
    while (!over()) {
        spin_us(1500);
        pause_us(1000);
    }
    return NULL;
}

/* An ordinary thread on the periodic thread's CPU (throttle): starved while that one spins. */
static void *starved(void *arg)
{
    announce(arg);
    starved_ready = 1;
    while (!over())
        spin_us(1000);
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* The nearest rank of quantile q among the lateness values. */
static long rank(double q)
{
    long r = (long)(q * lates + 0.999999);
    return (r < 1 ? 1 : r) - 1;
}

static pthread_t start(const struct spec *s, int pinned)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&attr, s->prio ? SCHED_FIFO : SCHED_OTHER);
    struct sched_param sp = {.sched_priority = s->prio};
    pthread_attr_setschedparam(&attr, &sp);
    if (pinned) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((cpu + s->cpu_offset) % sysconf(_SC_NPROCESSORS_ONLN), &set);
        pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    }
    pthread_t t;
    int e = pthread_create(&t, &attr, s->body, (void *)s);
    if (e) {
        fprintf(stderr, "rtdemo: %s: %s\n", s->name, strerror(e));
        exit(1);
    }
    return t;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-D") && i + 1 < argc)
            duration = atof(argv[++i]);
        else if (!strcmp(a, "-p") && i + 1 < argc)
            period_us = atoi(argv[++i]);
        else if (!strcmp(a, "-c") && i + 1 < argc)
            cpu = atoi(argv[++i]);
        else if (!strcmp(a, "fault")) fault = 1;
        else if (!strcmp(a, "sleep")) slp = 1;
        else if (!strcmp(a, "block")) block = 1;
        else if (!strcmp(a, "inversion")) inversion = 1;
        else if (!strcmp(a, "migrate")) migrate = 1;
        else if (!strcmp(a, "throttle")) throttle = 1;
        else if (!strcmp(a, "share")) share = 1;
        else {
            fprintf(stderr, "rtdemo: unknown argument '%s'\n", a);
            return 2;
        }
    }
    /* A reader that stopped reading (a test that took the thread lines it needed) ends no run. */
    signal(SIGPIPE, SIG_IGN);
    if (duration <= 0 || duration > 3600 || period_us < 100) {
        fprintf(stderr, "rtdemo: -D 0-3600 s, -p at least 100 us\n");
        return 2;
    }
    if (!fault && mlockall(MCL_CURRENT | MCL_FUTURE)) {
        perror("rtdemo: mlockall");
        return 1;
    }
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&pi_lock, &ma);
    if (pipe(pipe_fds)) {
        perror("rtdemo: pipe");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &end_at);
    base = end_at;
    advance(&end_at, (long)(duration * 1e9));
    struct spec specs[] = {
        {"rt-periodic", 80, periodic, 0, 0},
        {"rt-twin", 80, periodic, 0, 0},
        {"pipe-feeder", 10, feeder, 0, 0},
        {"lock-holder", 10, holder, 0, 0},
        {"cpu-hog", 50, hog, 0, 0},
        {"intruder-0", 90, intruder, 0, 0},
        {"intruder-1", 90, intruder, 1, 5000},
        {"starved", 0, starved, 0, 0},
    };
    enum { THREADS = sizeof specs / sizeof specs[0] };
    pthread_t threads[THREADS];
    int started[THREADS] = {1, share, block, inversion, inversion, migrate, migrate, throttle};
    printf("ready %d\n", getpid());
    fflush(stdout);
    first_periodic = specs[0];
    late = calloc(LATE_MAX, sizeof *late);
    if (!late) {
        perror("rtdemo: calloc");
        return 1;
    }
    for (int i = 0; i < THREADS; i++)
        if (started[i])
            threads[i] = start(i == 0 ? &first_periodic : &specs[i], i != 0 || !migrate);
    for (int i = 0; i < THREADS; i++)
        if (started[i])
            pthread_join(threads[i], NULL);
    qsort(late, lates, sizeof *late, by_value);
    if (lates > 0)
        printf("jitter %ld %.3f %.3f %.3f\n", lates, late[(lates - 1) / 2] / 1e3, late[rank(0.99)] / 1e3,
               late[lates - 1] / 1e3);
    return 0;
}
