/* prepare_cli.c - `preplay prepare PLAN --dir D [--cold]`: creates the
 * plan's dummy files in D (recorded initial sizes, incompressible content)
 * and optionally evicts them from the page cache so the first replayed
 * reads hit storage.
 *
 * Must never: touch files in D other than the dummy files it names. */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replayer_cli.h"
#include "dummy_files.h"
#include "plan.h"

static const char prepare_usage[] =
    "usage: preplay prepare PLAN --dir D [--cold] [--cold-method auto|drop_caches|fadvise] "
    "[--json]\n"
    "Creates one dummy file per file of PLAN's manifest in D (created if\n"
    "missing), at the size the file had when first accessed while recording,\n"
    "filled with incompressible data so replayed reads hit storage.\n\n"
    "  -d, --dir D          where the dummy files go\n"
    "      --cold           evict them from the page cache afterwards\n"
    "      --cold-method M  auto (default: drop_caches if permitted, else fadvise),\n"
    "                       drop_caches (whole machine) or fadvise (only these files)\n"
    "      --json           machine-readable summary\n";

int cmd_prepare(int argc, char **argv)
{
    static const struct option longopts[] = {{"dir", required_argument, 0, 'd'},
                                             {"cold", no_argument, 0, 'c'},
                                             {"cold-method", required_argument, 0, 'm'},
                                             {"json", no_argument, 0, 'j'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *dir = NULL;
    int cold = 0, json = 0, method = 0, opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, "d:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'd':
            dir = optarg;
            break;
        case 'c':
            cold = 1;
            break;
        case 'm':
            if (!strcmp(optarg, "auto"))
                method = 0;
            else if (!strcmp(optarg, "drop_caches"))
                method = DUMMY_CACHE_DROP_CACHES;
            else if (!strcmp(optarg, "fadvise"))
                method = DUMMY_CACHE_FADVISE;
            else {
                fprintf(stderr,
                        "preplay prepare: bad --cold-method '%s' (auto, drop_caches, fadvise)\n",
                        optarg);
                return 2;
            }
            cold = 1;
            break;
        case 'j':
            json = 1;
            break;
        case 'h':
            printf("%s", prepare_usage);
            return 0;
        default:
            fprintf(stderr, "%s", prepare_usage);
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "preplay prepare: no plan given (preplay prepare PLAN --dir D)\n");
        return 2;
    }
    if (optind + 1 < argc) {
        fprintf(stderr, "preplay prepare: unexpected argument '%s'\n", argv[optind + 1]);
        return 2;
    }
    if (!dir || !*dir) {
        fprintf(stderr, "preplay prepare: --dir D is required\n");
        return 2;
    }
    const char *plan_path = argv[optind];
    char err[1024];
    struct plan *p = plan_read(plan_path, err, sizeof err);
    if (!p) {
        fprintf(stderr, "preplay prepare: %s\n", err);
        return 1;
    }
    int rc = 1, used_method = 0;
    struct dummy_files_stats st;
    struct dummy_files *d = dummy_files_open_plan(dir, p, err, sizeof err);
    if (!d || dummy_files_check_space(d, err, sizeof err) ||
        dummy_files_create(d, &st, err, sizeof err)) {
        fprintf(stderr, "preplay prepare: %s\n", err);
        goto out;
    }
    if (cold && (used_method = dummy_files_drop_cache(d, method, err, sizeof err)) < 0) {
        fprintf(stderr, "preplay prepare: %s\n", err);
        goto out;
    }
    if (json) {
        json_t *o = json_object(), *files = json_array();
        json_object_set_new(o, "dir", json_string(dir));
        json_object_set_new(o, "bytes", json_integer((json_int_t)st.bytes_written));
        json_object_set_new(o, "seconds", json_real(st.seconds));
        json_object_set_new(o, "cold",
                            cold ? json_string(dummy_files_cache_method_name(used_method))
                                 : json_null());
        for (uint32_t i = 0; i < dummy_files_count(d); i++) {
            json_t *f = json_object();
            json_object_set_new(f, "index", json_integer(i));
            json_object_set_new(f, "recorded_path", json_string(plan_string(p, p->files[i].path)));
            json_object_set_new(f, "path", json_string(dummy_files_path(d, i)));
            json_object_set_new(f, "size",
                                json_integer((json_int_t)dummy_files_initial_size(d, i)));
            json_array_append_new(files, f);
        }
        json_object_set_new(o, "files", files);
        char *text = json_dumps(o, JSON_INDENT(2));
        json_decref(o);
        if (text)
            printf("%s\n", text);
        free(text);
    } else {
        printf("prepared %u dummy files (%.1f MB) in %s in %.2f s", dummy_files_count(d),
               (double)st.bytes_written / 1e6, dir, st.seconds);
        if (cold)
            printf("; page cache dropped (%s)", dummy_files_cache_method_name(used_method));
        printf("\n");
    }
    rc = 0;
out:
    dummy_files_close(d);
    plan_free(p);
    return rc;
}
