/* duet_config.c - the options of `preplay duet`: usage text, getopt, the
 * checks and messages of each value (exit status 2) and the defaults
 * (--runs 10, --iterations 10, --warmup 1, the median, 10 000 replicates, 99%,
 * winsorization at 20%, the whole recording as the slice). Parsing only:
 * never opens a plan or starts anything. */
#include <getopt.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "duet.h"
#include "replay_cli.h"

static void duet_usage(FILE *out)
{
    fprintf(out,
            "usage: preplay duet A.PLAN [B.PLAN] -o DUET.json [--runs R] [--iterations I]\n"
            "                    [--warmup W] [--aa] [--sequential] [--seed S]\n"
            "                    [--slice FROM:LEN] [--mean] [--replicates N]\n"
            "                    [--confidence C] [--winsorize PCT] [--cpus X,Y]\n"
            "                    [--cpu-ratio R] [--speed X] [--pool N]\n"
            "                    [--db-a URL --db-b URL [--db-password-file F]]\n\n"
            "Replay A and B at the same time, each on a core of its own (the assignment\n"
            "drawn at random per run), their iterations started together by a shared-memory\n"
            "barrier; report B/A per label with a bootstrap interval (Bulej et al.).\n"
            "  --runs R          runs, each with fresh replayers (10)\n"
            "  --iterations I    measured iterations per run (10); an iteration is one\n"
            "                    pass of the slice of each plan's schedule\n"
            "  --warmup W        iterations run first and not counted (1)\n"
            "  --aa              A against itself (give one plan): the interval width\n"
            "                    this machine allows\n"
            "  --sequential      the same work one side at a time, in random order per\n"
            "                    iteration (randomized interleaving), for comparison\n"
            "  --seed S          core assignment, order and bootstrap (default: random)\n"
            "  --slice FROM:LEN  the part of the schedule an iteration replays, in\n"
            "                    recorded seconds (default: the whole recording)\n"
            "  --mean            per-iteration statistic: the mean (default: the median,\n"
            "                    robust to the odd stalled request on a shared machine)\n"
            "  --replicates N    bootstrap replicates (10000)\n"
            "  --confidence C    interval level (0.99)\n"
            "  --winsorize PCT   replace at most one ratio per run further than PCT%%\n"
            "                    outside the range of the others (20; 0: off)\n"
            "  --cpus X,Y        the two cores (default: the first two this process may use)\n"
            "  --cpu-ratio R     CPU ratio for both sides (default: measured)\n"
            "  --db-a/--db-b URL each side's own database (required for plans with DB work)\n");
}

static const struct option duet_options[] = {{"output", required_argument, 0, 'o'},
                                             {"runs", required_argument, 0, 'R'},
                                             {"iterations", required_argument, 0, 'I'},
                                             {"warmup", required_argument, 0, 'w'},
                                             {"aa", no_argument, 0, 'a'},
                                             {"sequential", no_argument, 0, 'q'},
                                             {"seed", required_argument, 0, 'S'},
                                             {"slice", required_argument, 0, 'l'},
                                             {"mean", no_argument, 0, 'M'},
                                             {"replicates", required_argument, 0, 'B'},
                                             {"confidence", required_argument, 0, 'c'},
                                             {"winsorize", required_argument, 0, 'W'},
                                             {"cpus", required_argument, 0, 'C'},
                                             {"cpu-ratio", required_argument, 0, 'r'},
                                             {"speed", required_argument, 0, 's'},
                                             {"pool", required_argument, 0, 'L'},
                                             {"db-a", required_argument, 0, 'x'},
                                             {"db-b", required_argument, 0, 'y'},
                                             {"db-password-file", required_argument, 0, 'P'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};

static int duet_bad(const char *opt, const char *arg, const char *want)
{
    fprintf(stderr, "duet: %s '%s': expected %s\n", opt, arg, want);
    return 2;
}

static int duet_long(const char *arg, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(arg, &end, 10);
    if (!*arg || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int duet_double(const char *arg, double *out)
{
    char *end;
    double v = strtod(arg, &end);
    if (!*arg || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

/* FROM:LEN, both in seconds (LEN > 0). */
static int duet_slice(const char *arg, struct duet_config *c)
{
    char *end;
    double from = strtod(arg, &end);
    if (end == arg || *end != ':' || !(from >= 0))
        return -1;
    double len;
    if (replay_parse_duration(end + 1, &len) || !(len > 0))
        return -1;
    c->slice_from = from;
    c->slice_len = len;
    return 0;
}

static int duet_cpus(const char *arg, struct duet_config *c)
{
    int x, y, n;
    if (sscanf(arg, "%d,%d%n", &x, &y, &n) != 2 || arg[n] || x < 0 || y < 0 || x == y ||
        x >= 1024 || y >= 1024)
        return -1;
    c->cpus[0] = x;
    c->cpus[1] = y;
    c->cpus_given = 1;
    return 0;
}

/* One option: 0, or the exit status (-1 for --help). */
static int duet_option(struct duet_config *c, int opt, const char *arg)
{
    long v;
    switch (opt) {
    case 'o':
        c->out = arg;
        return 0;
    case 'a':
        c->aa = 1;
        return 0;
    case 'q':
        c->sequential = 1;
        return 0;
    case 'M':
        c->median = 0;
        return 0;
    case 'L':
        c->pool = arg;
        return 0;
    case 'x':
        c->db_a = arg;
        return 0;
    case 'y':
        c->db_b = arg;
        return 0;
    case 'P':
        c->db_password_file = arg;
        return 0;
    case 'R':
        return duet_long(arg, 2, 100000, &c->runs) ? duet_bad("--runs", arg, "2..100000") : 0;
    case 'I':
        return duet_long(arg, 1, 1000000, &c->iterations)
                   ? duet_bad("--iterations", arg, "1..1000000")
                   : 0;
    case 'w':
        return duet_long(arg, 0, 1000000, &c->warmup) ? duet_bad("--warmup", arg, "0..1000000") : 0;
    case 'S': {
        char *end;
        c->seed = strtoull(arg, &end, 0);
        c->seed_given = 1;
        return *arg && *arg != '-' && !*end && c->seed <= INT64_MAX
                   ? 0
                   : duet_bad("--seed", arg, "an integer 0..2^63-1");
    }
    case 'l':
        return duet_slice(arg, c) ? duet_bad("--slice", arg, "FROM:LEN in seconds, LEN > 0") : 0;
    case 'B':
        return duet_long(arg, 100, 10000000, &v) ? duet_bad("--replicates", arg, "100..10000000")
                                                 : (c->replicates = (int)v, 0);
    case 'c':
        return duet_double(arg, &c->cl) || !(c->cl > 0 && c->cl < 1)
                   ? duet_bad("--confidence", arg, "a level in (0, 1)")
                   : 0;
    case 'W':
        return duet_double(arg, &c->winsor_pct) || c->winsor_pct < 0
                   ? duet_bad("--winsorize", arg, "a percentage >= 0")
                   : 0;
    case 'r':
        return duet_double(arg, &c->ratio) || !(c->ratio > 0)
                   ? duet_bad("--cpu-ratio", arg, "a positive number")
                   : 0;
    case 's':
        return duet_double(arg, &c->speed) || !(c->speed > 0)
                   ? duet_bad("--speed", arg, "a positive number")
                   : 0;
    case 'C':
        return duet_cpus(arg, c) ? duet_bad("--cpus", arg, "two different CPU numbers X,Y") : 0;
    case 'h':
        duet_usage(stdout);
        return -1;
    default:
        duet_usage(stderr);
        return 2;
    }
}

/* The plans on the command line and what they allow. */
static int duet_config_check(int argc, char **argv, struct duet_config *c)
{
    int nplans = argc - optind;
    if (!c->out || nplans < 1 || nplans > 2) {
        fprintf(stderr,
                "duet: needs A.PLAN B.PLAN (or A.PLAN --aa) and -o DUET.json (see --help)\n");
        return 2;
    }
    c->plan_a = argv[optind];
    if (c->aa && nplans == 2) {
        fprintf(stderr, "duet: --aa replays A against itself: give one plan, not two\n");
        return 2;
    }
    if (!c->aa && nplans == 1) {
        fprintf(stderr, "duet: needs B.PLAN to compare with A.PLAN (or --aa for A/A)\n");
        return 2;
    }
    c->plan_b = c->aa ? c->plan_a : argv[optind + 1];
    if (!c->db_a != !c->db_b) {
        fprintf(stderr, "duet: --db-a and --db-b go together: each side needs its own DB\n");
        return 2;
    }
    if (c->db_password_file && !c->db_a) {
        fprintf(stderr, "duet: --db-password-file needs --db-a and --db-b\n");
        return 2;
    }
    return 0;
}

int duet_config_parse(int argc, char **argv, struct duet_config *c, int *exit_code)
{
    *c = (struct duet_config){.pool = "64",
                              .runs = 10,
                              .iterations = 10,
                              .warmup = 1,
                              .replicates = 10000,
                              .cl = 0.99,
                              .winsor_pct = 20,
                              .median = 1,
                              .speed = 1};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "o:h", duet_options, NULL)) != -1) {
        /* a URL's password leaves this process's argv at once */
        const char *arg = optarg;
        if ((opt == 'x' || opt == 'y') && !(arg = replay_cli_db_url_take("duet", optarg))) {
            *exit_code = 2;
            return -1;
        }
        int st = duet_option(c, opt, arg);
        if (st) {
            *exit_code = st < 0 ? 0 : st;
            return -1;
        }
    }
    int st = duet_config_check(argc, argv, c);
    if (st) {
        *exit_code = st;
        return -1;
    }
    if (!c->seed_given && getrandom(&c->seed, sizeof c->seed, 0) != (ssize_t)sizeof c->seed)
        c->seed = 0x9e3779b97f4a7c15ULL; /* no entropy: still a valid, recorded seed */
    if (!c->seed_given)
        c->seed &= (1ULL << 53) - 1; /* exact in any JSON reader */
    return 0;
}
