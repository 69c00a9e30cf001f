/* fuzz_cpu_ratio.c - libFuzzer target for the CPU ratio's inputs that come
 * from outside: the CPU identity parsed from cpuinfo text
 * (cpu_ratio_identity_of) and the estimate against a plan's score list
 * (cpu_ratio_estimate; a plan is any file a user was handed). The input is
 * split at its first NUL: before it the cpuinfo text, after it up to 16
 * score entries of 32 bytes (name, binary64 seconds). Must never crash or
 * read out of bounds; the identity is "" or "cpu-id:" and 16 hex digits;
 * an estimate that found nothing says so with a NaN ratio, one that found
 * something has a ratio that is not negative and an interval around it
 * when both are numbers. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ratio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_check_identity(const char *id)
{
    size_t n = strlen(id), p = strlen(CPU_RATIO_ID_PREFIX);
    if (!n)
        return;
    if (n != p + 16 || memcmp(id, CPU_RATIO_ID_PREFIX, p) ||
        strspn(id + p, "0123456789abcdef") != 16)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t text_len = nul ? (size_t)(nul - data) : size;
    char *text = malloc(text_len + 1);
    if (!text)
        return 0;
    memcpy(text, data, text_len);
    text[text_len] = 0;
    struct cpu_ratio_scores target = {.n = 2, .rounds = 11};
    strcpy(target.name[0], "sha256");
    strcpy(target.name[1], CPU_KERNELS_CHAIN);
    target.seconds[0] = 0.1;
    target.seconds[1] = 0.05;
    target.log_se[0] = target.log_se[1] = CPU_RATIO_SE_FLOOR;
    cpu_ratio_identity_of(text, target.cpu_id);
    free(text);
    fuzz_check_identity(target.cpu_id);

    struct trace_cpu_score list[TRACE_MAX_CPU_SCORES];
    uint32_t n = 0;
    for (size_t at = nul ? text_len + 1 : size; at + 32 <= size && n < TRACE_MAX_CPU_SCORES;
         at += 32, n++) {
        memcpy(list[n].name, data + at, 23); /* as the trace and plan readers do */
        list[n].name[23] = 0;
        memcpy(&list[n].seconds, data + at + 24, 8);
    }
    struct cpu_ratio_estimate est;
    if (!cpu_ratio_estimate(list, n, &target, &est)) {
        if (!isnan(est.ratio))
            abort();
    } else if (est.ratio < 0 || (!isnan(est.lo) && !isnan(est.hi) && !isnan(est.ratio) &&
                                 !(est.lo <= est.ratio && est.ratio <= est.hi))) {
        abort();
    }
    return 0;
}
