#!/usr/bin/python3
"""test_report_fit.py - no text of the HTML report's charts is clipped, as
headless Chromium (Debian's `chromium`, tools/install-deps) lays it out
with the fonts this machine has: the report of three runs whose labels
include two long ones (78 and 64 characters, one with UTF-8) is copied
with a measuring script appended (the report itself stays script-free),
and for every <text> of every chart the script records its rendered box
(getBoundingClientRect, which includes rotations) against its <svg>'s box,
and its getBBox against the viewBox for unrotated text. Every box must lie
inside the SVG viewport (0.5 px slack). The charts across types
("normalized to the slowest type") must use the category axis: long labels
turned vertical, shortened with "..." past the axis' room with the whole
label as a tooltip; and a second report with short labels only keeps
them horizontal. A third report adds duet files (A/B and its A/A,
tests/compare/make_duet.py) with the same long labels: the "Versions
(duet)" charts must keep every text inside too, with the long labels
vertical and shown whole or shortened with their tooltip. A fourth adds
regress files (`preplay regress` on tests/regress/make_counters.py
counters whose label is one of the long ones, its median shifted): the
"Why is this type slower?" chart of each flagged counter (named after the
long label) must keep every text inside, its title whole or shortened
with "...". Each browser run has a timeout.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

BIN = os.environ["PREPLAY_BIN"]
SRC = os.environ["PREPLAY_SOURCE_DIR"]
BUILD = os.environ["PREPLAY_BUILD_DIR"]
MK = os.path.join(SRC, "tests/compare/make_results.py")
MK_DUET = os.path.join(SRC, "tests/compare/make_duet.py")
MK_COUNTERS = os.path.join(SRC, "tests/regress/make_counters.py")
DUET = "per label, with 99% intervals"
LONG = "POST /api/v2/customers/orders/checkout/confirm-payment-and-send-receipt-by-email"
LONG_UTF8 = "GET /katalog/\u00fcbersicht/stra\u00dfen-und-pl\u00e4tze/m\u00fcnchen/alle-eintr\u00e4ge"
ACROSS = "normalized to the slowest type"

MEASURE = """<script>
(function () {
  var out = [];
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var title = svg.querySelector('title').textContent;
    var r = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
    svg.querySelectorAll('text').forEach(function (t) {
      var own = '';
      t.childNodes.forEach(function (n) { if (n.nodeType === 3) own += n.data; });
      if (!own.trim()) return;
      var b = t.getBoundingClientRect(), bb = t.getBBox();
      out.push({chart: title, text: own, cls: t.getAttribute('class') || '',
                transform: t.getAttribute('transform') || '',
                tip: t.querySelector('title') ? t.querySelector('title').textContent : '',
                left: b.left - r.left, top: b.top - r.top,
                right: r.right - b.right, bottom: r.bottom - b.bottom,
                bbox: [bb.x, bb.y, bb.width, bb.height],
                vb: [vb.x, vb.y, vb.width, vb.height]});
    });
  });
  var pre = document.createElement('pre');
  pre.id = 'fit';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def chromium(work, url):
    exe = shutil.which("chromium")
    if not exe:
        fail("chromium is not installed (tools/install-deps lists it)")
    profile = tempfile.mkdtemp(prefix="profile-", dir=work)
    args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--user-data-dir=" + profile, "--window-size=1000,6000",
            "--dump-dom", url]
    p = subprocess.run(args, capture_output=True, timeout=120)
    shutil.rmtree(profile, ignore_errors=True)
    return p.stdout.decode("utf-8", "replace")


def duet_files(work, labels):
    """An A/B file (slower, equal, faster in turn) and its A/A file."""
    ab, aa = os.path.join(work, "ab.json"), os.path.join(work, "aa.json")
    specs = ["1.06:1.04:1.08", "1.0:0.98:1.02", "0.9:0.85:0.95"]
    args = []
    for i, lab in enumerate(labels):
        args += ["--label", "%s=%s" % (lab, specs[i % 3])]
    subprocess.run(["/usr/bin/python3", MK_DUET, ab, "--overall", "1.03:1.01:1.05"] + args,
                   check=True)
    args = []
    for lab in labels:
        args += ["--label", "%s=1.0:0.985:1.015" % lab]
    subprocess.run(["/usr/bin/python3", MK_DUET, aa, "--aa", "--overall", "1.0:0.99:1.01"] + args,
                   check=True)
    return [ab, aa]


def regress_files(work, labels):
    """Per label, a regress.json whose target's median of that label tripled."""
    out = []
    for i, lab in enumerate(labels):
        paths = [os.path.join(work, "c%d-%s.json" % (i, k)) for k in ("b1", "b2", "t")]
        for path, seed in zip(paths, (1, 2, 4)):
            extra = ["--shift", "median_s:%s=3" % lab] if seed == 4 else []
            subprocess.run(["/usr/bin/python3", MK_COUNTERS, path, "--seed", str(seed),
                            "--label", lab] + extra, check=True)
        r = os.path.join(work, "regress%d.json" % i)
        subprocess.run([BIN, "regress", paths[0], paths[1], "--", paths[2], "-o", r,
                        "--method", "single", "--quiet"], check=True)
        out.append(r)
    return out


def report(work, name, labels, duet_labels=None, regress_labels=None):
    files = []
    for inst, price, scale, seed in (("small", 0.05, 2.0, 1), ("medium", 0.1, 1.0, 2),
                                     ("large", 0.2, 0.97, 3)):
        path = os.path.join(work, "%s-%s.json" % (name, inst))
        subprocess.run(["/usr/bin/python3", MK, path, inst, str(price), str(scale), "hand-built",
                        "--seed", str(seed), "--labels", ",".join(labels)], check=True)
        files.append(path)
    if duet_labels:
        files += duet_files(work, duet_labels)
    if regress_labels:
        files += regress_files(work, regress_labels)
    out = os.path.join(work, name + ".html")
    p = subprocess.run([BIN, "compare"] + files + ["--slo", "p95<15ms", "-o", out],
                       capture_output=True, text=True, timeout=240)
    if p.returncode:
        fail("compare exited %d: %s" % (p.returncode, p.stderr))
    text = open(out, encoding="utf-8").read()
    measured = os.path.join(work, name + "-measured.html")
    with open(measured, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", MEASURE + "</body>"))
    dom = chromium(work, "file://" + measured)
    m = re.search(r'<pre id="fit">(.*?)</pre>', dom, re.S)
    if not m:
        fail("the measuring script left nothing in the DOM (%d bytes)" % len(dom))
    return json.loads(html.unescape(m.group(1)))


def check_inside(boxes):
    bad = []
    for b in boxes:
        worst = min(b["left"], b["top"], b["right"], b["bottom"])
        if worst < -0.5:
            bad.append("chart '%s': text '%s' (%s) is clipped by %.1f px (left %.1f top %.1f "
                       "right %.1f bottom %.1f)" % (b["chart"][:50], b["text"][:60],
                                                    b["transform"] or "unrotated", -worst,
                                                    b["left"], b["top"], b["right"], b["bottom"]))
        elif not b["transform"]:
            x, y, w, h = b["bbox"]
            vx, vy, vw, vh = b["vb"]
            if x < vx - 0.5 or y < vy - 0.5 or x + w > vx + vw + 0.5 or y + h > vy + vh + 0.5:
                bad.append("chart '%s': getBBox of '%s' %s leaves the viewBox %s" %
                           (b["chart"][:50], b["text"][:60], b["bbox"], b["vb"]))
    if bad:
        fail("%d of %d texts clipped:\n  %s" % (len(bad), len(boxes), "\n  ".join(bad)))


def across(boxes):
    cats = [b for b in boxes if ACROSS in b["chart"] and b["cls"] == "cat"]
    if len({b["chart"] for b in cats}) != 2:
        fail("the two charts across types do not draw category labels (class cat): %s" %
             sorted({b["chart"] for b in boxes}))
    return cats


def main():
    work = tempfile.mkdtemp(prefix="compare-fit-")
    try:
        labels = ["GET /fast", LONG, "GET /s", LONG_UTF8]
        boxes = report(work, "long", labels)
        if len(boxes) < 50:
            fail("only %d texts measured" % len(boxes))
        check_inside(boxes)
        cats = across(boxes)
        for b in cats:
            if "rotate(-90" not in b["transform"]:
                fail("'%s' in '%s' is not vertical (%r)" % (b["text"], b["chart"][:40],
                                                           b["transform"]))
        for lab in (LONG, LONG_UTF8):
            shown = [b for b in cats if b["text"] == lab or (b["tip"] == lab and
                                                             b["text"].endswith("..."))]
            if len(shown) != 2:
                fail("label %r is not shown whole or shortened with its tooltip in both "
                     "charts across types: %s" % (lab, [(b["text"], b["tip"]) for b in cats]))
        short = across(report(work, "short", ["GET /fast", "POST /slow", "GET /s"]))
        turned = [b["text"] for b in short if b["transform"]]
        if turned:
            fail("short labels turned in the charts across types: %s" % turned)
        boxes = report(work, "duet", ["GET /fast", "POST /slow"],
                       duet_labels=["GET /fast", LONG, "GET /s", LONG_UTF8])
        check_inside(boxes)
        duet = [b for b in boxes if DUET in b["chart"] and b["cls"] == "cat"]
        if len({b["chart"] for b in duet}) != 2 or len(duet) != 10:
            fail("the two duet charts do not draw 5 category labels each: %s" %
                 [(b["chart"][:30], b["text"]) for b in duet])
        for lab in (LONG, LONG_UTF8):
            shown = [b for b in duet if b["text"] == lab or (b["tip"] == lab and
                                                             b["text"].endswith("..."))]
            if len(shown) != 2 or any("rotate(-90" not in b["transform"] for b in shown):
                fail("label %r is not vertical, whole or shortened with its tooltip, in both "
                     "duet charts: %s" % (lab, [(b["text"], b["transform"]) for b in duet]))
        boxes = report(work, "regress", ["GET /fast", "POST /slow"],
                       regress_labels=[LONG, LONG_UTF8])
        check_inside(boxes)
        why = [b for b in boxes if b["chart"].startswith("median_s:") and "(severity " in b["chart"]]
        titles = {b["chart"] for b in why}
        named = {re.sub(r" \(severity [0-9.]+, up\)$", "", t) for t in titles}
        if len(titles) != 2 or named != {"median_s:" + LONG, "median_s:" + LONG_UTF8}:
            fail("want one why chart per long label's median: %s" % sorted(titles))
        for t in titles:
            shown = [b["text"] for b in why if b["chart"] == t and b["text"].startswith("median_s:")]
            if len(shown) != 1 or not (shown[0] == t or (shown[0].endswith("...") and
                                                         t.startswith(shown[0][:-3]))):
                fail("why chart title %r shown as %r" % (t, shown))
        print("report fit ok: %d texts inside their charts, long labels vertical" % len(boxes))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
