#!/usr/bin/env python3
"""wp_content.py - the WordPress accuracy app's content, as SQL on stdout:
POSTS posts and PAGES pages (ids from 1000 on: posts 1000.., pages
1000+POSTS..), COMMENTS approved comments spread over the posts, one
subscriber `reader` (password `reader-pass`, phpass hash made by
WordPress itself and given here) for logins, and the options that let
anonymous comments through unmoderated. Deterministic: a fixed seed, fixed
dates; the same arguments always print the same bytes. Words come from
WORDS, so a search for any of them (the load generator's) finds posts.
Must never print anything that is not SQL (the output is piped to mariadb).

usage: wp_content.py --posts N --pages N --comments N --reader-hash HASH [--seed S]"""
import argparse
import random

WORDS = ("cloud latency replay cache kernel socket thread queue buffer index "
         "server client packet schedule median tail budget instance region "
         "storage memory compute network disk backup deploy rollback metric "
         "trace sample label plan driver emulate instance container").split()


def q(s):
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def text(rng, words, paras):
    return "\n\n".join(" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(paras))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--posts", type=int, default=300)
    ap.add_argument("--pages", type=int, default=100)
    ap.add_argument("--comments", type=int, default=1500)
    ap.add_argument("--reader-hash", required=True)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    out = ["SET autocommit=0;"]
    base = 1000
    for i in range(a.posts + a.pages):
        pid = base + i
        kind = "post" if i < a.posts else "page"
        date = "2024-%02d-%02d %02d:%02d:00" % (1 + i % 12, 1 + i % 28, i % 24, i % 60)
        title = " ".join(rng.choice(WORDS) for _ in range(4)).title()
        body = text(rng, rng.randint(60, 200), rng.randint(2, 6))
        out.append(
            "INSERT INTO wp_posts (ID, post_author, post_date, post_date_gmt, post_content, "
            "post_title, post_excerpt, post_status, comment_status, ping_status, post_name, "
            "to_ping, pinged, post_modified, post_modified_gmt, post_content_filtered, "
            "post_parent, guid, menu_order, post_type, comment_count) VALUES "
            f"({pid}, 1, '{date}', '{date}', {q(body)}, {q(title)}, '', 'publish', 'open', "
            f"'closed', '{kind}-{pid}', '', '', '{date}', '{date}', '', 0, "
            f"'http://preplay-wordpress/?p={pid}', 0, '{kind}', 0);")
        if kind == "post":
            out.append(f"INSERT INTO wp_term_relationships (object_id, term_taxonomy_id) VALUES ({pid}, 1);")
    for c in range(a.comments):
        pid = base + rng.randrange(a.posts)
        date = "2024-06-%02d %02d:%02d:00" % (1 + c % 28, c % 24, c % 60)
        out.append(
            "INSERT INTO wp_comments (comment_post_ID, comment_author, comment_author_email, "
            "comment_author_url, comment_author_IP, comment_date, comment_date_gmt, comment_content, "
            "comment_karma, comment_approved, comment_agent, comment_type, comment_parent, user_id) "
            f"VALUES ({pid}, 'visitor{c % 50}', 'visitor{c % 50}@example.org', '', '127.0.0.1', "
            f"'{date}', '{date}', {q(text(rng, rng.randint(10, 40), 1))}, 0, '1', '', 'comment', 0, 0);")
    out.append("UPDATE wp_posts p SET comment_count = "
               "(SELECT COUNT(*) FROM wp_comments c WHERE c.comment_post_ID = p.ID AND c.comment_approved = '1');")
    out.append(f"UPDATE wp_term_taxonomy SET count = {a.posts + 1} WHERE term_taxonomy_id = 1;")
    out.append(
        "INSERT INTO wp_users (user_login, user_pass, user_nicename, user_email, user_url, "
        "user_registered, user_activation_key, user_status, display_name) VALUES "
        f"('reader', {q(a.reader_hash)}, 'reader', 'reader@example.org', '', '2024-01-01 00:00:00', '', 0, 'reader');")
    out.append("INSERT INTO wp_usermeta (user_id, meta_key, meta_value) "
               "SELECT ID, 'wp_capabilities', 'a:1:{s:10:\"subscriber\";b:1;}' FROM wp_users WHERE user_login='reader';")
    out.append("INSERT INTO wp_usermeta (user_id, meta_key, meta_value) "
               "SELECT ID, 'wp_user_level', '0' FROM wp_users WHERE user_login='reader';")
    for k, v in (("comment_moderation", "0"), ("comment_previously_approved", "0"),
                 ("comments_notify", "0"), ("moderation_notify", "0"), ("require_name_email", "1"),
                 ("close_comments_for_old_posts", "0"), ("page_comments", "0"), ("posts_per_page", "10")):
        out.append(f"UPDATE wp_options SET option_value = '{v}' WHERE option_name = '{k}';")
    out.append("COMMIT;")
    print("\n".join(out))


if __name__ == "__main__":
    main()
