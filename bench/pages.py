"""Web pages under gunicorn at 100,000 sub-agents, and the fork tree in headless Chromium.

Loads the catalog bench's synthetic forest into PostgreSQL (COPY), adds a 5,000-node lineage,
ratings, daily stats and recent usage, starts gunicorn (2 gthread workers, read cache off
unless ``--read-cache``), and drives each page with concurrent keep-alive clients, in short
slices that alternate with the baseline's (``bench/interleave.py``). For every page it
reports the server's own time (the ``Server-Timing`` header the pages send) at p50 and p99
and the latency the client saw; baselines in the same run are ``/api/v1/health`` (each
page's throughput as the median of its slice ratios, their spread and a "too noisy to judge"
verdict) and the JSON API answering the same question (browse, detail), with each page's
median server time as a ratio of its API twin's median latency in the same round, the median
of the rounds. Closed-loop clients keep the server saturated, so those latencies are mostly the
queue the clients make; each page is then driven alone open-loop, requests arriving at half its
own throughput (``--paced-share``), for its server p50 and p99 at a stated load. Then Chromium
opens the 5,000-node lineage's tree view and reports how long until it is drawn and clickable,
how long "show more" takes, and how long drawing all 5,000 nodes takes. The last line is JSON.

With ``--writes W``, a writer forks sub-agents drawn at random at W a second throughout, as
the community publishing while people read: each fork changes its lineage, which drops that
lineage's cached pages and every cached list on every worker. The hit shares then say how much
of the cache survives that write rate.

``--popularity zipf`` draws the sub-agents asked for by Zipf's law instead of uniformly, as
people ask for a few sub-agents far more than the rest: what the read cache meets in the field.

    python bench/pages.py [--quick] [--subagents N] [--clients C] [--seconds S]
                          [--read-cache SECONDS] [--writes W] [--popularity uniform|zipf]
                          [--paced-share S] [--paced-seconds S]
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import re
import statistics
import sys
import threading
import time
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import interleave, loadgen  # noqa: E402
from bench.catalog import (  # noqa: E402
    CATEGORIES,
    TOPICS,
    free_port,
    load_forest,
    start_gunicorn,
    startup_allowance,
    stop_gunicorn,
)
from bench.servers import database_url_or_rerun_with_servers  # noqa: E402

LINEAGE_SIZE = 5000
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]


def _dsn(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _bundles() -> list[tuple[str, bytes, int, dict]]:
    """Two small real bundles (so detail pages, previews and diffs read real blobs)."""
    from market.catalog import bundles

    made = []
    for variant, scopes in (("a", ["hydration.read"]), ("b", ["hydration.read", "calendar.read"])):
        bundle = bundles.bundle_from_json(
            {
                "manifest": {"name": "Tracker", "entry": "index.html", "scopes": scopes},
                "files": {
                    "index.html": "<!doctype html><title>t</title><script src=app.js></script>",
                    "app.js": "".join(f"const v{i} = '{variant}{i}';\n" for i in range(60)),
                },
            }
        )
        raw = bundle.canonical_bytes()
        made.append((bundle.sha256, zlib.compress(raw, 6), len(raw), bundle.manifest))
    return made


def enrich(url: str, forest: dict, seed: int) -> dict:
    """Real bundles, a 5,000-node lineage, ratings, 30 days of daily stats, a week of usage."""
    import psycopg

    rng = random.Random(seed)
    n, users = forest["subagents"], forest["users"]
    now = datetime.now(UTC)
    today = now.date()
    blobs = _bundles()
    with psycopg.connect(_dsn(url)) as conn, conn.cursor() as cur:
        for sha, content, size, _ in blobs:
            cur.execute(
                "INSERT INTO bundle_blob (sha256, content, size_bytes) VALUES (%s, %s, %s)",
                (sha, content, size),
            )
        for index, (sha, _, size, manifest) in enumerate(blobs):
            cur.execute(
                "UPDATE subagent_version SET sha256 = %s, manifest = %s, size_bytes = %s, "
                "file_count = 2 WHERE id %% 2 = %s",
                (sha, json.dumps(manifest), size, index),
            )

        # A lineage of 5,000 sub-agents under one new root, grown by preferential attachment.
        first = n + 1
        parent, depth, ancestry, installs = {}, {}, {}, {}
        weights: list[int] = []
        for i in range(first, first + LINEAGE_SIZE):
            if i == first:
                parent[i], depth[i], ancestry[i] = None, 0, ""
            else:
                p = weights[rng.randrange(len(weights))]
                parent[i], depth[i] = p, depth[p] + 1
                ancestry[i] = f"{ancestry[p]}/{p}" if ancestry[p] else str(p)
            installs[i] = int(rng.paretovariate(1.2)) - 1
            weights.extend([i] * (1 + min(installs[i], 30)))
        forks = {i: 0 for i in parent}
        for p in parent.values():
            if p is not None:
                forks[p] += 1
        with cur.copy(
            "COPY subagent (id, title, summary, story, category, tags, author_id, visibility, "
            "status, parent_id, parent_version_id, root_id, depth, ancestry, fork_request_text, "
            "latest_version_id, dedupe_key, install_count, fork_count, created_at, updated_at) "
            "FROM STDIN"
        ) as copy:
            for i in parent:
                copy.write_row(
                    (
                        i,
                        f"Water Tracker branch {i - first}",
                        "Three litres a day, every way people wanted it.",
                        "I drink a lot of water.",
                        "hydration",
                        json.dumps(["water"]),
                        rng.randint(1, users),
                        "public",
                        "active",
                        parent[i],
                        None,  # set below, once the versions exist
                        first,
                        depth[i],
                        ancestry[i],
                        "make it mine" if parent[i] else None,
                        i,
                        f"lineage:{i}",
                        installs[i],
                        forks[i],
                        now - timedelta(minutes=first + LINEAGE_SIZE - i),
                        now,
                    )
                )
        with cur.copy(
            "COPY subagent_version (id, subagent_id, number, sha256, manifest, changelog, status, "
            "size_bytes, file_count, created_at) FROM STDIN"
        ) as copy:
            for i in parent:
                sha, _, size, manifest = blobs[i % 2]
                copy.write_row((i, i, 1, sha, json.dumps(manifest), "", "active", size, 2, now))
        # Each of the lineage's forks was made from its parent's only version (same id here).
        cur.execute(
            "UPDATE subagent SET parent_version_id = parent_id WHERE id >= %s AND parent_id IS "
            "NOT NULL",
            (first,),
        )
        total = n + LINEAGE_SIZE
        for table in ("subagent", "subagent_version"):
            cur.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "  # noqa: S608
                f"(SELECT max(id) FROM {table}))"
            )

        # Ratings, daily stats and events of every used sub-agent, generated by the database
        # itself (INSERT … SELECT): at a million sub-agents that is ~1.5M ratings, ~8M daily
        # rows and ~5M events, which row by row from Python took most of an hour. One seeded
        # serial plan keeps the figures the same from run to run. Every reference is made
        # from existing rows, so the foreign-key triggers (three lookups a rating) are off.
        cur.execute("SET max_parallel_workers_per_gather = 0")
        cur.execute("SET session_replication_role = replica")
        cur.execute("SELECT setseed(%s)", (rng.random() * 2 - 1,))
        cur.execute(
            "CREATE TEMP TABLE used AS SELECT id, install_count AS installs FROM subagent "
            "WHERE install_count > 0 ORDER BY id"
        )
        # Up to 13 different raters each (a stride through the people, never repeating below
        # 13 steps); stars ~ N(3.8, 1) by Box-Muller, clamped to 1..5; 30% with a comment.
        cur.execute(
            "INSERT INTO feedback (user_id, subagent_id, version_id, scale, rating, comment, tags, "
            "created_at, updated_at, updated_day) "
            "SELECT 1 + (u.id::bigint * 7919 + g * 104729) %% %(users)s, u.id, u.id, 'stars', "
            "greatest(1, least(5, round(3.8 + sqrt(-2 * ln(1 - random())) "
            "* cos(2 * pi() * random())))), "
            "CASE WHEN random() < 0.3 THEN 'Does what I need.' END, '[]', %(now)s, %(now)s, "
            "%(today)s FROM used u, generate_series(0, least(u.installs, 12)) g "
            "ON CONFLICT DO NOTHING",
            {"users": users, "now": now, "today": today},
        )
        ratings = cur.rowcount
        cur.execute(
            "INSERT INTO daily_stats (subagent_id, day, opens, active_users, sessions, "
            "time_spent_ms, installs, uninstalls, errors, ratings, stars_1, stars_2, stars_3, "
            "stars_4, stars_5, thumbs_up, thumbs_down) "
            "SELECT id, day, active * 2, active, active, active::bigint * 60000, "
            "floor(random() * 3)::int, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 FROM ("
            "  SELECT u.id, %(today)s::date - back AS day, "
            "  floor(random() * (u.installs + 1))::int AS active "
            "  FROM used u, generate_series(0, 29) back"
            ") d WHERE active > 0",
            {"today": today},
        )
        daily = cur.rowcount
        cur.execute(
            "INSERT INTO usage_event (event_id, client_id, user_id, subagent_id, version_id, kind, "
            "occurred_at, occurred_day, properties, received_at) "
            "SELECT gen_random_uuid(), 1, user_id, id, id, 'open', at, "
            "(at AT TIME ZONE 'UTC')::date, '{}', %(now)s FROM ("
            "  SELECT u.id, 1 + floor(random() * %(users)s)::int AS user_id, "
            "  %(now)s - make_interval(days => back, mins => floor(random() * 601)::int) AS at "
            "  FROM used u, generate_series(0, 6) back, generate_series(1, least(u.installs, 3)) k"
            ") e",
            {"users": users, "now": now},
        )
        events = cur.rowcount
        cur.execute("SET session_replication_role = DEFAULT")
        conn.commit()
        conn.autocommit = True
        cur.execute("VACUUM ANALYZE")
        # Creators of the dashboard bench: those with the most installs.
        cur.execute(
            "SELECT u.id, u.handle FROM user_account u JOIN subagent s ON s.author_id = u.id "
            "GROUP BY u.id ORDER BY sum(s.install_count) DESC LIMIT 8"
        )
        creators = cur.fetchall()
    return {
        "lineage_root": first,
        "lineage_depth": max(depth.values()),
        "subagents_total": total,
        "ratings": ratings,
        "daily_stats": daily,
        "events": events,
        "creators": creators,
    }


def session_cookie(port: int, token: str) -> str:
    """Sign in through the web form (with its CSRF token) and return the session cookie. The
    first request waits for the workers to import the app: slow on a busy machine."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=180)
    connection.request("GET", "/signin")
    response = connection.getresponse()
    body = response.read().decode()
    cookie = response.getheader("Set-Cookie").split(";")[0]
    csrf = re.search(r'name="csrf" value="([^"]+)"', body).group(1)
    connection.request(
        "POST",
        "/signin",
        body=urlencode({"csrf": csrf, "token": token, "next": "/"}),
        headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie},
    )
    response = connection.getresponse()
    response.read()
    assert response.status == 302, response.status
    return response.getheader("Set-Cookie").split(";")[0]


def _p50(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def tree_in_chromium(port: int, root_id: int, rounds: int) -> dict:
    from playwright.sync_api import sync_playwright

    ready, more, whole, nodes_first = [], [], [], 0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS
        )
        for _ in range(rounds):
            page = browser.new_page(viewport={"width": 390, "height": 844})
            started = time.perf_counter()
            page.goto(f"http://127.0.0.1:{port}/s/{root_id}/tree")
            page.wait_for_selector("#tree[data-ready='1'] svg.tree g.node")
            # Usable: drawn, and a click on a node is handled (navigation starts).
            ready.append((time.perf_counter() - started) * 1000)
            nodes_first = page.locator("svg.tree g.node").count()
            before = nodes_first
            clicked = time.perf_counter()
            page.locator("svg.tree g.more").first.click()
            page.wait_for_function(
                "n => document.querySelectorAll('svg.tree g.node').length > n", arg=before
            )
            more.append((time.perf_counter() - clicked) * 1000)
            clicked = time.perf_counter()
            page.locator("#tree-all").click()
            page.wait_for_selector("#tree[data-whole='1']", timeout=60_000)
            whole.append((time.perf_counter() - clicked) * 1000)
            drawn = page.locator("svg.tree g.node").count()
            with page.expect_navigation():
                page.locator("svg.tree g.node a").nth(drawn // 2).click()
            page.close()
        browser.close()
    return {
        "first_view_nodes": nodes_first,
        "whole_tree_nodes": drawn,
        "ready_ms_median": round(statistics.median(ready), 1),
        "ready_ms_max": round(max(ready), 1),
        "show_more_ms_median": round(statistics.median(more), 1),
        "whole_tree_ms_median": round(statistics.median(whole), 1),
        "whole_tree_ms_max": round(max(whole), 1),
    }


def drawn_ids(rng: random.Random, total: int, count: int, popularity: str) -> list[int]:
    """``count`` sub-agent ids to ask for (and to fork, with ``--writes``), repeats included:
    uniform over the catalog, or Zipf's law (s = 1) over 10,000 of them, the usual shape of
    popularity in app stores: the most asked-for id about once in ten requests."""
    if popularity == "uniform":
        return [rng.randint(1, total) for _ in range(count)]
    pool = rng.sample(range(1, total + 1), min(10_000, total))
    return rng.choices(pool, weights=[1 / rank for rank in range(1, len(pool) + 1)], k=count)


class Forker:
    """Forks a sub-agent drawn from ``parents`` every 1/``rate`` seconds on a thread of its
    own (a fork of a sub-agent it may not see is refused and counted as such)."""

    def __init__(self, port: int, token: str, parents: list[int], rate: float, seed: int):
        self.port, self.token, self.parents, self.rate = port, token, parents, rate
        self.rng = random.Random(seed)
        self.made = self.refused = 0
        self.seconds = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-forker", daemon=True)

    def __enter__(self) -> Forker:
        if self.rate > 0:
            self._thread.start()
        return self

    def __exit__(self, *_exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        started = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        due = time.perf_counter()
        while not self._stop.is_set():
            parent = self.rng.choice(self.parents)
            number = self.made + self.refused
            body = json.dumps(
                {
                    "title": f"Bench fork {number}",
                    "fork_request": "make it mine",
                    "bundle": {
                        "manifest": {"name": "Fork", "entry": "index.html", "scopes": []},
                        "files": {"index.html": f"<!doctype html><title>{number}</title>"},
                    },
                }
            )
            headers = {
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
            }
            try:
                connection.request("POST", f"/api/v1/subagents/{parent}/forks", body, headers)
                response = connection.getresponse()
                response.read()
                if response.status == 201:
                    self.made += 1
                else:
                    self.refused += 1
            except (OSError, http.client.HTTPException):
                self.refused += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            due += 1 / self.rate
            self._stop.wait(max(0.0, due - time.perf_counter()))
        connection.close()
        self.seconds = time.perf_counter() - started

    def figures(self) -> dict:
        return {
            "rate_asked": self.rate,
            "made": self.made,
            "refused": self.refused,
            "made_per_second": round(self.made / self.seconds, 2) if self.seconds else 0.0,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smaller run, under a minute")
    parser.add_argument("--subagents", type=int, default=None)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=None, help="per page")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument(
        "--threads",
        type=int,
        default=8,
        help="threads per worker (fewer lower the server's times by moving the wait in front of "
        "the app: judge them by the client's columns)",
    )
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium part")
    parser.add_argument(
        "--read-cache",
        type=int,
        default=0,
        metavar="SECONDS",
        help="serve with the read cache on for this long (anonymous pages and the API from it; "
        "a hit sends no Server-Timing, so server times are the misses'); default off, each "
        "page's own cost",
    )
    parser.add_argument(
        "--writes",
        type=float,
        default=0.0,
        metavar="W",
        help="fork random sub-agents at W a second throughout (what the read cache survives)",
    )
    parser.add_argument(
        "--popularity",
        choices=("uniform", "zipf"),
        default="uniform",
        help="how the sub-agents asked for are drawn: uniform (each page's own cost) or by "
        "Zipf's law (what the read cache meets in the field)",
    )
    interleave.add_arguments(parser)
    interleave.add_paced_arguments(parser)
    args = parser.parse_args()
    url = database_url_or_rerun_with_servers()
    n = args.subagents or (20_000 if args.quick else 100_000)
    seconds = args.seconds or (2.0 if args.quick else 8.0)
    slice_seconds = interleave.slice_seconds(args)
    rounds = interleave.rounds_for(seconds, slice_seconds)

    started = time.perf_counter()
    forest = load_forest(url, n, args.seed)
    extra = enrich(url, forest, args.seed)
    load_seconds = time.perf_counter() - started

    from market.identity.models import User
    from market.identity.tokens import issue_token
    from market.platform.db import make_engine, session_scope

    engine = make_engine(url)
    tokens = []
    with session_scope(engine) as session:
        for user_id, handle in extra["creators"]:
            tokens.append((handle, issue_token(session, session.get(User, user_id), name="bench")))
        # The writer forks as an account of its own: the creators' dashboards stay as loaded.
        forker = User(handle="bench-forker", display_name="Bench Forker", email="f@example.com")
        session.add(forker)
        session.flush()
        forker_token = issue_token(session, forker, name="bench")
    engine.dispose()

    rng = random.Random(args.seed)
    total = extra["subagents_total"]
    ids = drawn_ids(rng, total, 1000, args.popularity)
    forks = [i for i in ids if i > forest["roots"]][:300]
    words = sorted({w for topics in TOPICS.values() for w in topics})
    lineage_root = extra["lineage_root"]
    anonymous: dict = {}
    port = free_port()
    server = start_gunicorn(
        url,
        port,
        workers=args.workers,
        threads=args.threads,
        cache_seconds=args.read_cache,
        startup_seconds=startup_allowance(total),
    )
    try:
        cookies = [(handle, session_cookie(port, token)) for handle, token in tokens]
        pages = {
            "trivial (health)": [("/api/v1/health", anonymous)],
            "api browse": [
                (f"/api/v1/subagents?category={c}&sort={s}&limit=24", anonymous)
                for c in CATEGORIES
                for s in ("new", "installs")
            ],
            "api detail": [(f"/api/v1/subagents/{i}", anonymous) for i in ids],
            "browse page": [
                (f"/?category={c}&sort={s}", anonymous)
                for c in CATEGORIES
                for s in ("new", "installs", "top")
            ]
            + [("/", anonymous)],
            "search page": [(f"/?q={w}", anonymous) for w in words],
            "sub-agent page": [(f"/s/{i}", anonymous) for i in ids],
            "tree page": [(f"/s/{i}/tree", anonymous) for i in ids[:200]]
            + [(f"/s/{r}/tree", anonymous) for r in forest["root_ids"]]
            + [(f"/s/{lineage_root}/tree", anonymous)] * 20,
            "tree more (json)": [(f"/s/{r}/tree/children", anonymous) for r in forest["root_ids"]]
            + [(f"/s/{lineage_root}/tree/children", anonymous)],
            "diff page": [(f"/s/{i}/diff", anonymous) for i in forks],
            "dashboard": [
                (f"/creators/{handle}", {"Cookie": cookie}) for handle, cookie in cookies
            ],
            "my installs": [("/me/installs", {"Cookie": cookie}) for _, cookie in cookies],
        }
        workloads = {
            name: [loadgen.Request(path, headers=headers or None) for path, headers in requests]
            for name, requests in pages.items()
        }
        baseline, *measured = workloads
        forker = Forker(port, forker_token, ids, args.writes, args.seed)
        with (
            forker,
            interleave.SlicedClients("127.0.0.1", port, workloads, clients=args.clients) as pool,
        ):
            runs = interleave.interleave(
                pool.run_slice,
                baseline,
                measured,
                rounds=rounds,
                slice_seconds=slice_seconds,
                threshold=args.noise_threshold,
            )
            paced = interleave.paced_latencies(
                port, workloads, runs, args, default_seconds=4.0 if args.quick else 12.0
            )
        tree = (
            None
            if args.no_browser
            else tree_in_chromium(port, lineage_root, 3 if args.quick else 5)
        )
    finally:
        stop_gunicorn(server)

    twins = {
        "browse page": "api browse",
        "search page": "api browse",
        "sub-agent page": "api detail",
    }
    results = {name: run.figures() for name, run in runs.items()}
    for name, twin in twins.items():
        # Round by round: the page's median server time over its API twin's median latency
        # in the same round (a few seconds apart), then the median of the rounds.
        own = [_p50(s.server_ms or s.latencies_ms) for s in runs[name].slices]
        theirs = [_p50(s.latencies_ms) for s in runs[twin].slices]
        ratios = interleave.paired_ratios(own, theirs)
        judged = interleave.judge(ratios, (), args.noise_threshold) if ratios else None
        results[name]["ratio_to_api_twin"] = round(judged.median, 3) if judged else None
        results[name]["ratio_to_api_twin_spread"] = round(judged.spread, 3) if judged else None
    print(
        f"\npages bench: {total:,} sub-agents ({forest['roots']:,} roots + a {LINEAGE_SIZE:,}-node "
        f"lineage of depth {extra['lineage_depth']}), {extra['ratings']:,} ratings, "
        f"{extra['daily_stats']:,} daily stats, {extra['events']:,} events; PostgreSQL, gunicorn "
        f"2x8 gthread, read cache {f'{args.read_cache}s' if args.read_cache else 'off'}, "
        f"ids drawn {args.popularity}, "
        f"{args.clients} clients, "
        + (
            f"forks at {args.writes:g}/s asked ({forker.made} made, {forker.refused} refused), "
            if args.writes
            else ""
        )
        + f"{interleave.describe(rounds, slice_seconds, len(runs) - 1)}; loaded in "
        f"{load_seconds:.0f}s\n"
    )
    interleave.print_table(runs)
    if args.read_cache:
        shares = ", ".join(
            f"{name} {results[name].get('cache_hit_share', 0):.0%}" for name in list(runs)[1:]
        )
        print(f"\nanswers from the read cache: {shares}")
    if paced:
        interleave.print_paced(paced, args.paced_share)
        for name, figures in paced.items():
            results[name]["paced"] = figures
    print(
        "\nserver time (Server-Timing) of each page over its JSON API twin's latency, median of "
        "the rounds (spread = interquartile range over the median):"
    )
    for name, twin in twins.items():
        r, nan = results[name], float("nan")
        spread = r["ratio_to_api_twin_spread"]
        print(
            f"  {name:<16} srv p50 {r['server_p50_ms'] or nan:>6.1f} ms  srv p99 "
            f"{r['server_p99_ms'] or nan:>6.1f} ms  vs {twin}: "
            f"{r['ratio_to_api_twin'] or nan:.2f}x (spread {nan if spread is None else spread:.0%})"
        )
    if tree:
        print(
            f"\ntree view in headless Chromium, {LINEAGE_SIZE:,}-node lineage: first view "
            f"({tree['first_view_nodes']} nodes) usable in {tree['ready_ms_median']} ms median "
            f"(max {tree['ready_ms_max']}); show more {tree['show_more_ms_median']} ms; all "
            f"{tree['whole_tree_nodes']:,} nodes drawn in {tree['whole_tree_ms_median']} ms median "
            f"(max {tree['whole_tree_ms_max']})"
        )
    print(
        json.dumps(
            {
                "bench": "pages",
                "read_cache_seconds": args.read_cache,
                "popularity": args.popularity,
                "writes": forker.figures(),
                "subagents": total,
                "clients": args.clients,
                "workers": args.workers,
                "threads": args.threads,
                "seconds": seconds,
                "slice_seconds": slice_seconds,
                "rounds": rounds,
                "noise_threshold": args.noise_threshold,
                "noisy": any(run.throughput and run.throughput.noisy for run in runs.values()),
                "pages": results,
                "tree_in_chromium": tree,
            }
        )
    )


if __name__ == "__main__":
    main()
