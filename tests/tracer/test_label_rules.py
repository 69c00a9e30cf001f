#!/usr/bin/env python3
"""test_label_rules.py - `--label 'NAME=REGEX'` rules on a real program
nobody here wrote that routes by query string as WordPress does: PHP's
built-in server (php -S) with a router script where `?s=` is a search and
`?p=N` a post. Recorded with rules, the labels are the rules' names and the
unmatched keep `METHOD /path` (no query string anywhere in the trace, the
rules in record_options); with rules and --keep-query the unmatched keep
their query; a --keep-query trace analyzed with rules and --drop-query
groups the same requests in the plan; bad rules are refused by record,
collect and analyze with one line and exit status 2."""
import json
import os
import shutil
import signal
import subprocess
import urllib.request

import tracerlib as tl

ROUTER = r"""<?php
// what WordPress's plain permalinks do: the query string decides the page
if (isset($_GET['s'])) {
    echo "search: " . htmlspecialchars($_GET['s']);
} elseif (isset($_GET['p'])) {
    echo "post " . intval($_GET['p']);
} else {
    echo "home";
}
"""
# the rules of docs/user-guide.md: a search first (WordPress's template
# loader decides is_search before is_single)
RULES = ["search=^GET /(index\\.php)?\\?(.*&)?s=",
         "post=^GET /(index\\.php)?\\?(.*&)?p=[0-9]"]
RULE_ARGS = [a for r in RULES for a in ("--label", r)]
# (request target, label with the rules, with rules and --keep-query)
REQUESTS = [
    ("/?p=1", "post", "post"),
    ("/?p=2", "post", "post"),
    ("/?s=hello", "search", "search"),
    ("/?p=3&s=x", "search", "search"),
    ("/", "GET /", "GET /"),
    ("/?page_id=5", "GET /", "GET /?page_id=5"),
    ("/index.php?lang=en&p=9", "post", "post"),
    ("/?xp=4", "GET /", "GET /?xp=4"),
]

PHP = shutil.which("php8.2") or shutil.which("php")
if not PHP:
    tl.fail("php (php8.2-cli) is not installed: this test needs PHP's built-in server")
    tl.finish()
work = tl.scratch("label-rules")
with open(os.path.join(work, "router.php"), "w") as f:
    f.write(ROUTER)


def preplay(*args):
    p = subprocess.run([tl.PREPLAY, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def serve(tag, extra):
    """Records php -S with `extra` options while REQUESTS are made, one
    connection each; returns the trace."""
    out = os.path.join(work, tag)
    port = tl.free_port()
    srv = tl.spawn(tl.record_args(out, [PHP, "-S", f"127.0.0.1:{port}", "router.php"],
                                  extra=["--only", "net", *extra]),
                   cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if not tl.check(tl.wait_port(port, 30, srv), f"{tag}: php -S listening"):
        tl.finish()
    for target, _, _ in REQUESTS:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{target}", timeout=20) as r:
            tl.check_eq(r.status, 200, f"{tag}: status of {target}")
    os.killpg(srv.pid, signal.SIGINT)
    tl.wait_end(srv, f"{tag}: preplay record of php -S")
    traces = tl.read_traces(out)
    if not tl.check(len(traces) == 1, f"{tag}: one trace, got {len(traces)}"):
        tl.finish()
    return out, next(iter(traces.values()))


def labels(trace):
    return [e.get("label") for e in sorted(trace.of("label"), key=lambda e: e["ts"])]


def plan_labels(trace_dir, *opts):
    plan = os.path.join(work, "plan-%d" % len(os.listdir(work)))
    rc, _, err = preplay("analyze", "-q", trace_dir, "-o", plan, *opts)
    if not tl.check(rc == 0, f"analyze {opts}: exit {rc}, {err.strip()}"):
        return None
    rc, out, err = preplay("info", "--json", plan)
    tl.check(rc == 0, f"info --json of the plan: {err.strip()}")
    return json.loads(out).get("labels")


# ---- 1. recorded with rules: names, "METHOD /path", no query in the file ----
rules_dir, t = serve("rules", RULE_ARGS)
tl.check_eq(labels(t), [want for _, want, _ in REQUESTS], "labels recorded with --label rules")
tl.check_eq(t.header["record_options"],
            "--only net --label 'search=^GET /(index\\.php)?\\?(.*&)?s=' "
            "--label 'post=^GET /(index\\.php)?\\?(.*&)?p=[0-9]'",
            "record_options of a recording with rules")
rc, dump, err = preplay("dump", t.path)
tl.check(rc == 0 and dump, f"dump of the rules trace: {err.strip()}")
tl.check("?" not in dump, "no query string anywhere in a trace recorded with rules, no --keep-query")
tl.check_eq(plan_labels(rules_dir), {"post": 3, "search": 2, "GET /": 3},
            "plan labels of the rules trace")

# ---- 2. rules and --keep-query: unmatched labels keep their query ---------
_, t = serve("rules-keep", RULE_ARGS + ["--keep-query"])
tl.check_eq(labels(t), [want for _, _, want in REQUESTS], "labels with rules and --keep-query")

# ---- 3. a --keep-query trace grouped at analyze time ----------------------
keep_dir, t = serve("keep", ["--keep-query"])
tl.check_eq(labels(t), ["GET " + target for target, _, _ in REQUESTS], "labels with --keep-query")
tl.check_eq(plan_labels(keep_dir), {"GET " + target: 1 for target, _, _ in REQUESTS},
            "plan labels of a --keep-query trace: one per page")
tl.check_eq(plan_labels(keep_dir, *RULE_ARGS, "--drop-query"),
            {"post": 3, "search": 2, "GET /": 3}, "analyze --label ... --drop-query")
tl.check_eq(plan_labels(keep_dir, *RULE_ARGS),
            {"post": 3, "search": 2, "GET /": 1, "GET /?page_id=5": 1, "GET /?xp=4": 1},
            "analyze --label without --drop-query")
tl.check_eq(plan_labels(keep_dir, "--drop-query"), {"GET /": 7, "GET /index.php": 1},
            "analyze --drop-query alone")
rules_file = os.path.join(work, "routes.txt")
with open(rules_file, "w") as f:
    f.write("# WordPress\n\n" + "\n".join("  " + r for r in RULES) + "\n")
tl.check_eq(plan_labels(keep_dir, "--label-file", rules_file, "--drop-query"),
            {"post": 3, "search": 2, "GET /": 3}, "analyze --label-file")

# ---- 4. bad rules: one line naming the rule, exit 2 ------------------------
with open(rules_file, "a") as f:
    f.write("broken=(\n")
BAD = [
    (["record", "--label", "post", "--", "true"],
     "preplay record: --label rule 'post': no '=' (NAME=REGEX)"),
    (["record", "--label", "=^GET", "--", "true"],
     "preplay record: --label rule '=^GET': empty NAME (NAME=REGEX)"),
    (["collect", "--label", "post="], "preplay collect: --label rule 'post=': empty REGEX (NAME=REGEX)"),
    (["collect", "--label", "n" * 64 + "=x"],
     "preplay collect: --label rule '" + "n" * 64 + "=x': NAME longer than 63 bytes"),
    (["analyze", keep_dir, "-o", os.path.join(work, "bad.plan"), "--label", "x=^GET /("],
     "preplay analyze: --label rule 'x=^GET /(': bad REGEX: Unmatched ( or \\("),
    (["analyze", keep_dir, "-o", os.path.join(work, "bad.plan"), "--label-file", rules_file],
     f"preplay analyze: --label-file {rules_file}:5: rule 'broken=(': bad REGEX: "
     "Unmatched ( or \\("),
    (["record", "--label-file", os.path.join(work, "none"), "--", "true"],
     f"preplay record: --label-file {os.path.join(work, 'none')}: No such file or directory"),
    (["record"] + [a for i in range(65) for a in ("--label", f"r{i}=x")] + ["--", "true"],
     "preplay record: --label rule 'r64=x': more than 64 rules"),
]
for args, want in BAD:
    rc, out, err = preplay(*args)
    tl.check_eq((rc, err), (2, want + "\n"), f"preplay {' '.join(args[:3])[:60]}")
tl.check(not os.path.exists(os.path.join(work, "bad.plan")), "no plan written after a bad rule")
tl.finish()
