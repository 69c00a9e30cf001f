/* replay_drive.h - the test client that drives a front-end replayer
 * (CloudProphet §3.3): `independent` mode sends the plan's requests at
 * their recorded arrival offsets (open loop), `session` mode keeps each
 * session's think times (closed loop). One thread, an epoll loop and as
 * many non-blocking connections as requests in flight, so the client is
 * never the bottleneck. Response times count from the scheduled arrival;
 * how late each send was is measured and reported besides.
 * Never retries a request: a failed one is a sample marked failed. */
#ifndef PREPLAY_REPLAY_DRIVE_H
#define PREPLAY_REPLAY_DRIVE_H

#include <stddef.h>
#include <stdint.h>

#include "plan.h"

enum replay_drive_mode { REPLAY_DRIVE_INDEPENDENT, REPLAY_DRIVE_SESSION };

struct replay_drive_options {
    const struct plan *plan;
    const char *target; /* front-end replayer HOST:PORT */
    uint64_t token;
    enum replay_drive_mode mode;
    double speed;      /* arrival offsets and think times divided by this (1) */
    double duration_s; /* > 0: repeat the schedule until this long; 0 = one pass */
    /* where in the endlessly repeating schedule to start, in recorded
     * seconds from its first arrival (0: the start); a run's next interval
     * passes the last one's schedule_to_s */
    double schedule_from_s;
    double drain_s;      /* wait this long for answers after the last send (30) */
    int max_connections; /* in flight at once (0 = as many as descriptors allow) */
    /* polled about every 50 ms; non-zero stops the drive (results so far kept) */
    int (*should_abort)(void *arg);
    void *abort_arg;
};

/* Why a request failed (replay_sample.fail); replay_fail_name says it. */
enum replay_fail {
    REPLAY_FAIL_NONE,    /* answered whole */
    REPLAY_FAIL_CONNECT, /* its connection was refused or could not be made */
    REPLAY_FAIL_SEND,    /* the connection failed while the request was sent */
    REPLAY_FAIL_CLOSED,  /* closed or reset before the whole answer came */
    REPLAY_FAIL_TIMEOUT, /* no whole answer within the drain time after the last send */
    REPLAY_FAIL_ABORTED, /* still in flight when the drive was stopped */
    REPLAY_FAIL_DRIVER,  /* the driver's own epoll failed on it */
    REPLAY_NFAIL
};

/* "connection refused", "closed before the whole answer", ... */
const char *replay_fail_name(unsigned fail);

struct replay_sample {
    uint32_t request;  /* index into plan->requests */
    uint32_t label;    /* string id */
    double sent_s;     /* when its first byte went out, from the start of the drive */
    double response_s; /* scheduled arrival -> last response byte (0: failed) */
    double late_s;     /* how much later than scheduled it was sent (part of response_s) */
    int ok;            /* 0: connection failed or answer incomplete */
    uint8_t fail;      /* enum replay_fail: why not ok */
};

struct replay_drive_result {
    struct replay_sample *samples;
    size_t nsamples;
    uint64_t failed;
    double elapsed_s;
    int aborted;
    int connections_opened;
    uint64_t refused; /* connections the target refused */
    int realtime;     /* the loop ran at real-time priority (replay_drive.c) */
    /* the part of the repeating schedule sent, in recorded seconds from
     * its first arrival: [from, to); schedule_s is one pass (its period) */
    double schedule_from_s, schedule_to_s, schedule_s;
};

/* What drive and run say when the loop could not run at real-time priority. */
#define REPLAY_DRIVE_NOT_REALTIME                                                                  \
    "the driver ran at normal priority (real-time priority needs root or CAP_SYS_NICE): on a "     \
    "busy host its sends may leave late, which counts in every response time (lateness in the "    \
    "results)"

int replay_drive_run(const struct replay_drive_options *opt, struct replay_drive_result *res,
                     char *err, size_t errlen);
void replay_drive_result_free(struct replay_drive_result *res);

/* The plan's earliest arrival, and the period its schedule repeats with:
 * the span of its arrivals plus one mean gap (1 ms when that is 0). */
uint64_t replay_drive_first_arrival(const struct plan *p);
uint64_t replay_drive_period_ns(const struct plan *p);

#endif
