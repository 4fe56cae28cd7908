/* The floor of a timer monitor: one thread per CPU, pinned, SCHED_FIFO 95, memory locked and
 * /dev/cpu_dma_latency held at 0 (as rtbench does), waking at an absolute period and reading
 * the clock, nothing else. Its CPU time is what the kernel and the machine charge per wake-up.
 *
 *   wakeloop PERIOD_US CPU...
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static long period_ns;

static void *wake(void *arg)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(intptr_t)arg, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    struct sched_param p = { .sched_priority = 95 };
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
    struct timespec next, now;
    clock_gettime(CLOCK_MONOTONIC, &next);
    volatile long worst = 0;
    for (;;) {
        next.tv_nsec += period_ns;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        long late = (now.tv_sec - next.tv_sec) * 1000000000L + now.tv_nsec - next.tv_nsec;
        if (late > worst)
            worst = late;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: wakeloop PERIOD_US CPU...\n");
        return 2;
    }
    period_ns = atol(argv[1]) * 1000L;
    mlockall(MCL_CURRENT | MCL_FUTURE);
    int fd = open("/dev/cpu_dma_latency", O_WRONLY);
    int32_t zero = 0;
    if (fd >= 0 && write(fd, &zero, sizeof zero) != sizeof zero)
        perror("cpu_dma_latency");
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 512 * 1024);
    for (int i = 2; i < argc; i++) {
        pthread_t t;
        pthread_create(&t, &attr, wake, (void *)(intptr_t)atoi(argv[i]));
    }
    pause();
    return 0;
}
