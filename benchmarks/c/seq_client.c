/* Reference client for bench_run.py: N sequential nc-style connections to host:port.
 *
 * Each connection: blocking connect, read until EOF, close; the reply must start with "worker"
 * (the accept-order worker's answer), otherwise it counts as a failure. Prints one line:
 *   count N failures F elapsed_s S rate R
 * The same loop the Python driver runs, with no per-connection bookkeeping beyond the check, so the
 * ratio of the two rates is the cost of the driver itself.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int one_connection(const struct sockaddr *addr, socklen_t len, int family) {
    char buf[4096];
    size_t got = 0;
    int fd = socket(family, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    /* Like the Python driver's 5 s timeout: a stuck connection is a failure, not a hung benchmark
     * (SO_SNDTIMEO also bounds connect on Linux). */
    struct timeval limit = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    if (connect(fd, addr, len) < 0) {
        close(fd);
        return -1;
    }
    for (;;) {
        ssize_t n = read(fd, buf + got, sizeof buf - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close(fd);
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
        if (got == sizeof buf) /* a reply this long is not a worker's line; keep draining */
            got = 6 < got ? 6 : got;
    }
    close(fd);
    return got >= 6 && memcmp(buf, "worker", 6) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s HOST PORT COUNT\n", argv[0]);
        return 2;
    }
    const char *host = argv[1];
    char *end;
    long port = strtol(argv[2], &end, 10);
    if (*end || port < 1 || port > 65535) {
        fprintf(stderr, "seq_client: bad port %s\n", argv[2]);
        return 2;
    }
    long count = strtol(argv[3], &end, 10);
    if (*end || count < 1) {
        fprintf(stderr, "seq_client: bad count %s\n", argv[3]);
        return 2;
    }

    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t len;
    int family;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        family = v4->sin_family = AF_INET;
        v4->sin_port = htons((unsigned short)port);
        len = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        family = v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((unsigned short)port);
        len = sizeof *v6;
    } else {
        fprintf(stderr, "seq_client: %s is not an IP address\n", host);
        return 2;
    }

    long failures = 0;
    double t0 = now_s();
    for (long i = 0; i < count; i++)
        if (one_connection((struct sockaddr *)&ss, len, family) < 0)
            failures++;
    double elapsed = now_s() - t0;
    printf("count %ld failures %ld elapsed_s %.6f rate %.1f\n", count, failures, elapsed, count / elapsed);
    return failures ? 1 : 0;
}
