#!/usr/bin/env python3
"""wp_load.py - the WordPress accuracy app's load generator (open_loop.py:
Poisson arrivals from a fixed seed, one thread and connection per request,
loadgen's CSV) over a request mix of posts (GET /?p=N), pages (GET
/?page_id=N), searches (GET /?s=WORD), comments (POST
/wp-comments-post.php, each with unique text) and logins (POST
/wp-login.php as `reader`). A comment or login answers 302: that is its
success (never followed).
--warmup N sends N requests one after another first (posts, pages,
searches and logins in turn; never a comment, which would change the
database), not in the CSV: PHP compiles WordPress into opcache on the
first requests (seconds on `small`), a cold start the load is not about.
With --duration 0 only the warm-up runs.

usage: wp_load.py --host H --port P --rate R --duration S --seed N --csv OUT
                  [--mix post=40,page=20,search=20,comment=10,login=10]
                  [--posts 300] [--pages 100] [--warmup N]"""
import sys
import urllib.parse

import open_loop

HOST = "preplay-wordpress"
WORDS = ("cloud latency replay cache kernel socket thread queue buffer index "
         "server client packet schedule median tail budget").split()
FORM = {"Content-Type": "application/x-www-form-urlencoded"}
LOGIN = urllib.parse.urlencode({"log": "reader", "pwd": "reader-pass", "redirect_to": "/"})


def main():
    ap = open_loop.parser(__doc__, "post=40,page=20,search=20,comment=10,login=10")
    ap.add_argument("--posts", type=int, default=300)
    ap.add_argument("--pages", type=int, default=100)
    a = ap.parse_args()

    def build(rng, label, n):
        if label == "post":
            return ("GET", "/?p=%d" % (1000 + rng.randrange(a.posts)), None, None)
        if label == "page":
            return ("GET", "/?page_id=%d" % (1000 + a.posts + rng.randrange(a.pages)), None, None)
        if label == "search":
            return ("GET", "/?s=" + rng.choice(WORDS), None, None)
        if label == "comment":
            body = urllib.parse.urlencode({
                "comment_post_ID": 1000 + rng.randrange(a.posts),
                "author": "load%d" % rng.randrange(1000), "email": "load@example.org", "url": "",
                "comment": "comment %d of run seed %d: %s" % (n, a.seed, " ".join(rng.choice(WORDS) for _ in range(12))),
                "comment_parent": 0})
            return ("POST", "/wp-comments-post.php", body, FORM)
        return ("POST", "/wp-login.php", LOGIN, FORM)

    def warmup(i):
        kind = i % 4
        if kind == 0:
            return ("GET", "/?p=%d" % (1000 + i % a.posts), None, None)
        if kind == 1:
            return ("GET", "/?page_id=%d" % (1000 + a.posts + i % a.pages), None, None)
        if kind == 2:
            return ("GET", "/?s=" + WORDS[i % len(WORDS)], None, None)
        return ("POST", "/wp-login.php", LOGIN, FORM)

    return open_loop.run(a, "wp_load", HOST, build, warmup)


if __name__ == "__main__":
    sys.exit(main())
