/* Reference closed-loop client for bench_latency_driver.py: the same job as accept-order's driver
 * (nonblocking connect, read the reply to EOF, close, start the next request at once), in C with epoll.
 *
 *   epoll_client HOST PORT REQUESTS CONCURRENCY
 *
 * Prints one line: "ok N errors M wall_s S". Exit status 0 unless the arguments or epoll fail.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_storage addr;
static socklen_t addrlen;
static int family;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Start one request; returns the fd, or -1 if it failed at once (counted by the caller). */
static int start(int ep) {
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&addr, addrlen) < 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = fd};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s HOST PORT REQUESTS CONCURRENCY\n", argv[0]);
        return 2;
    }
    long requests = atol(argv[3]);
    int concurrency = atoi(argv[4]);
    int port = atoi(argv[2]);
    memset(&addr, 0, sizeof addr);
    struct sockaddr_in *a4 = (struct sockaddr_in *)&addr;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&addr;
    if (inet_pton(AF_INET, argv[1], &a4->sin_addr) == 1) {
        family = a4->sin_family = AF_INET;
        a4->sin_port = htons(port);
        addrlen = sizeof *a4;
    } else if (inet_pton(AF_INET6, argv[1], &a6->sin6_addr) == 1) {
        family = a6->sin6_family = AF_INET6;
        a6->sin6_port = htons(port);
        addrlen = sizeof *a6;
    } else {
        fprintf(stderr, "bad address %s\n", argv[1]);
        return 2;
    }
    if (requests < 1 || concurrency < 1) {
        fprintf(stderr, "REQUESTS and CONCURRENCY must be positive\n");
        return 2;
    }
    int ep = epoll_create1(0);
    if (ep < 0) {
        perror("epoll_create1");
        return 1;
    }
    long started = 0, ok = 0, errors = 0, inflight = 0;
    struct epoll_event events[256];
    char buf[4096];
    double t0 = now();
    while (ok + errors < requests) {
        while (inflight < concurrency && started < requests) {
            started++;
            if (start(ep) < 0)
                errors++;
            else
                inflight++;
        }
        if (inflight == 0)
            continue;
        int n = epoll_wait(ep, events, 256, 10000);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("epoll_wait");
            return 1;
        }
        if (n == 0) { /* nothing for 10 s: give up on what is in flight */
            errors += inflight;
            break;
        }
        for (int i = 0; i < n; i++) {
            int fd = events[i].data.fd;
            int done = 0, failed = 0;
            if (events[i].events & EPOLLERR) {
                done = failed = 1;
            } else {
                for (;;) {
                    ssize_t r = recv(fd, buf, sizeof buf, 0);
                    if (r > 0)
                        continue;
                    if (r == 0)
                        done = 1;
                    else if (errno != EAGAIN)
                        done = failed = 1;
                    break;
                }
            }
            if (done) {
                close(fd);
                inflight--;
                if (failed)
                    errors++;
                else
                    ok++;
            }
        }
    }
    printf("ok %ld errors %ld wall_s %.6f\n", ok, errors, now() - t0);
    return 0;
}
