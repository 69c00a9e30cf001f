#!/usr/bin/python3
"""test_report_browser.py - opens the HTML report of `preplay compare` in
headless Chromium (Debian's `chromium`, from tools/install-deps) and checks
that a person would see it:

- the file is self-contained: no scripts, no external references (only the
  SVG namespace URI appears), labels are HTML-escaped (a label holding
  markup shows as text, never as an element);
- in the DOM Chromium built (--dump-dom), every chart is an <svg> with a
  title, axis labels and at least one non-empty <path>; the expected charts
  are all there (one distribution per label, normalized medians and p95,
  resources, stop rule, recording);
- the console shows nothing: Chromium logs console messages to stderr
  (INFO:CONSOLE); a canary page with a deliberate console.error proves the
  check can see one before the report is judged;
- the screenshot is a real picture (decoded here: enough non-white pixels);
- the first screen holds the box of what the verdict does not vouch for,
  above every chart: the failed replay's problem line (one run here has
  failed requests and DB errors) and the verdict's caveats, exactly.

Chromium runs as root with --no-sandbox, no network features, and a fresh
profile that is removed afterwards. Bounded: each browser run has a timeout.
"""
import html
import html.parser
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

BIN = os.environ["PREPLAY_BIN"]
SRC = os.environ["PREPLAY_SOURCE_DIR"]
BUILD = os.environ["PREPLAY_BUILD_DIR"]
MK = os.path.join(SRC, "tests/compare/make_results.py")
EVIL = 'GET /<script>alert(1)</script>&"q"'


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def chromium(work, url, *extra):
    exe = shutil.which("chromium")
    if not exe:
        fail("chromium is not installed (tools/install-deps lists it)")
    profile = tempfile.mkdtemp(prefix="profile-", dir=work)
    args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
            "--window-size=1000,6000"] + list(extra) + [url]
    p = subprocess.run(args, capture_output=True, timeout=120)
    shutil.rmtree(profile, ignore_errors=True)
    return p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def console_lines(stderr):
    return [l for l in stderr.splitlines() if ":CONSOLE" in l]


class Charts(html.parser.HTMLParser):
    """Collects every <svg class="chart">: its title, texts and path d attributes."""

    def __init__(self):
        super().__init__()
        self.charts, self.cur, self.in_title, self.in_text = [], None, False, False
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "svg" and "chart" in (a.get("class") or ""):
            self.cur = {"title": "", "texts": [], "paths": []}
        elif self.cur is not None:
            if tag == "path":
                self.cur["paths"].append(a.get("d") or "")
            self.in_title = tag == "title" and not self.cur["title"]
            self.in_text = tag == "text"

    def handle_endtag(self, tag):
        if tag == "svg" and self.cur is not None:
            self.charts.append(self.cur)
            self.cur = None
        self.in_title = self.in_text = False

    def handle_data(self, data):
        if self.cur is None:
            return
        if self.in_title:
            self.cur["title"] += data
        if self.in_text:
            self.cur["texts"].append(data)


def png_ink(path):
    """Fraction of pixels of an 8-bit RGB/RGBA PNG that are not near-white."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("screenshot is not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                fail("unexpected PNG layout %d/%d/%d" % (depth, ctype, interlace))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride = zlib.decompress(idat), w * bpp
    prev, ink, total, i = bytearray(stride), 0, 0, 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for x in range(0, stride, bpp * 4):  # every 4th pixel is enough
            total += 1
            if min(line[x], line[x + 1], line[x + 2]) < 200:
                ink += 1
        prev = line
    return ink / max(total, 1)


def check_trust_box(dom, large):
    """The first screen's box: before any chart, the exact problem line and caveats."""
    m = re.search(r'<div class="trust warn" id="trust">(.*?)</div>', dom, re.S)
    if not m:
        fail("no first-screen box (div#trust.warn) in the report")
    if m.start() > dom.find("<svg"):
        fail("the first-screen box comes after a chart")
    items = [html.unescape(re.sub(r"<[^>]+>", "", t))
             for t in re.findall(r"<li>(.*?)</li>", m.group(1), re.S)]
    want = [large + ": 4 DB queries failed (component app: 4 × 'Deadlock found when trying to "
            "get lock;…'), 2 requests failed"]
    if items != want:
        fail("box problem lines %s, want %s" % (items, want))
    caveats = re.search(r'<p class="caveats">(.*?)</p>', m.group(1), re.S)
    unlike = ("'GET /fast' (does not resemble the recording: p < 0.001 with 400 replayed and "
              "33 recorded samples)")
    want = ("Not ranked, the replay failed: large (--allow-failed ranks them). Not judged: "
            "small %s; medium %s; large %s." % (unlike, unlike, unlike))
    if not caveats or html.unescape(caveats.group(1)) != want:
        fail("box caveats %r, want %r" % (caveats and html.unescape(caveats.group(1)), want))


def main():
    work = tempfile.mkdtemp(prefix="compare-browser-")
    try:
        labels = "GET /fast,POST /slow," + EVIL
        failures = ["--failed", "2", "--db-error",
                    "app:4:Deadlock found when trying to get lock; try restarting transaction"]
        for name, price, scale, seed in (("small", 0.05, 2.0, 1), ("medium", 0.1, 1.0, 2),
                                         ("large", 0.2, 0.97, 3)):
            subprocess.run(["/usr/bin/python3", MK, os.path.join(work, name + ".json"), name,
                            str(price), str(scale), "hand-built", "--seed", str(seed),
                            "--labels", labels] + (failures if name == "large" else []),
                           check=True)
        make_plan = os.path.join(BUILD, "tests/replay/replay_make_plan")
        if not os.access(make_plan, os.X_OK):
            fail("replay_make_plan not built (tests/replay): the report needs a plan")
        plan = os.path.join(work, "plan")
        subprocess.run([make_plan, "two-tier", plan], check=True)
        report = os.path.join(work, "report.html")
        p = subprocess.run([BIN, "compare"] + [os.path.join(work, n + ".json")
                                               for n in ("small", "medium", "large")]
                           + ["--plan", plan, "--slo", "p95<15ms", "-o", report],
                           capture_output=True, text=True, timeout=240)
        if p.returncode:
            fail("compare exited %d: %s" % (p.returncode, p.stderr))
        text = open(report, encoding="utf-8").read()

        # self-contained and escaped
        refs = [t for t in ("<script", "src=", "<link", "@import", "url(http", "<img", "<iframe")
                if t in text]
        if refs:
            fail("report references outside content: %s" % refs)
        if text.replace("http://www.w3.org/2000/svg", "").count("http"):
            fail("report holds a URL other than the SVG namespace")
        if EVIL in text or "&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;q&quot;" not in text:
            fail("the label with markup is not escaped")

        # the recorded baseline row in the per-label table, the plan box, no empty label
        if text.count('<tr class="recorded"><td>') < 3 or "recorded (server side)" not in text:
            fail("the per-label table lacks its recorded baseline rows")
        if "The plan behind these numbers" not in text or "coverage: <strong>" not in text:
            fail("the plan-quality box is missing")
        if "How the runs were made" not in text or "cpu_ratio" not in text:
            fail("the runs' cpu_ratio table is missing")
        if ": </text>" in text or "<td></td>" in text:
            fail("an empty label is shown")

        # the detector sees console errors (canary), then the report has none
        canary = os.path.join(work, "canary.html")
        with open(canary, "w") as f:
            f.write('<!DOCTYPE html><html><body><script>console.error("canary-7731")</script>'
                    "</body></html>")
        _, err = chromium(work, "file://" + canary, "--dump-dom")
        if not any("canary-7731" in l for l in console_lines(err)):
            fail("cannot see console messages in chromium's log; stderr was:\n" + err[-2000:])
        dom, err = chromium(work, "file://" + report, "--dump-dom")
        if console_lines(err):
            fail("console messages while showing the report:\n" + "\n".join(console_lines(err)))

        check_trust_box(dom, os.path.join(work, "large.json"))
        parser = Charts()
        parser.feed(dom)
        if parser.scripts:
            fail("the DOM holds scripts")
        charts = parser.charts
        titles = [c["title"] for c in charts]
        want = ["Response time of GET /fast", "Response time of POST /slow",
                "Response time of " + EVIL, "Median response time per label",
                "95th percentile response time per label", "Time per front-end request",
                "PT4Cloud stop rule: p per interval", "The recording: requests per label"]
        for w in want:
            if not any(t.startswith(w) for t in titles):
                fail("chart '%s' missing; charts: %s" % (w, titles))
        if len(charts) != len(want):
            fail("%d charts, want %d: %s" % (len(charts), len(want), titles))
        for c in charts:
            drawn = [d for d in c["paths"] if any(ch.isdigit() for ch in d) and len(d) > 10]
            # frame + ticks + at least one data path beyond the axes
            if len(drawn) < 3:
                fail("chart '%s' drew nothing (%d paths)" % (c["title"], len(drawn)))
            texts = " ".join(c["texts"])
            if not any(u in texts for u in ("(ms)", "(s)", "(1/ms)", "(number)", "slowest")):
                fail("chart '%s' has no axis label with a unit: %s" % (c["title"], texts[:200]))
        dist = charts[0]
        for legend in ("small", "medium", "large", "on-premise (recorded)"):
            if legend not in dist["texts"]:
                fail("distribution legend lacks '%s'" % legend)
        # the distribution chart draws a band and a density per type, and the recording
        if len([d for d in dist["paths"] if d.rstrip().endswith("Z") and d.count("L") > 50]) < 3:
            fail("distribution chart lacks the confidence bands")

        shot = os.path.join(work, "shot.png")
        _, err = chromium(work, "file://" + report, "--screenshot=" + shot)
        if not os.path.exists(shot):
            fail("no screenshot: " + err[-1000:])
        ink = png_ink(shot)
        if ink < 0.03:
            fail("screenshot nearly blank (%.3f of pixels inked)" % ink)
        print("report ok: %d charts, %d bytes, screenshot %.1f%% inked" %
              (len(charts), len(text), ink * 100))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
