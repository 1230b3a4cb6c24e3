"""Load benchmark: N simulated users clicking through a served GPT-2 small trace, against Dash's floor under
the same load, in one run.

Command (from the repository root):
    .venv/bin/python bench/bench_load.py [--users 10,30] [--seconds 60] [--think 1.0] [--warmup 5]

- The server is the real CLI in its own process (``python -m torchvista_dash serve gpt2.json --port 0``;
  GPT-2 small, ``GPT2Model(GPT2Config())``, random weights, 16 tokens), started fresh for each N, so its
  RSS (``/proc/<pid>/status``) is the server's alone.
- Each user is a thread with its own HTTP session that replays what a browser sends (bench/dash_client.py):
  the page's layout, then, per click, the graph callback and the details callback, with ``--think`` seconds
  (±40 %, seeded per user) between clicks. A user opens a random collapsed module (or folded run) drawn in
  its current figure, or, with six or more open, closes a random open one: a person exploring the model.
- Per-user state checks (no cross-talk): every store carries the user's own nonce; the returned store must
  hold it, must be this user's previous state plus the toggled module (or minus it, when closing), and the
  returned figure must draw the clicked id. Any failure, HTTP error or timeout is counted as an error.
- "New views" is the share of measured clicks whose view no user had reached before in that phase: each is a
  layout and a figure to compute (unless the background precompute got there first); the rest are cache hits,
  ideally.
- Latency is the graph callback's round trip (click → new figure received), p50/p95/p99 over the measured
  clicks (after ``--warmup`` clicks per user). RSS is sampled every 250 clicks after warm-up; "RSS per 1,000
  clicks" is the least-squares slope over those samples.
- Dash's floor: the same users, think time and duration against a Dash app whose callback returns a new
  two-point figure per click (bench_dash_floor.py's app), served the same way. Ratios are ours / floor.
Everything is bounded in time: each phase ends after ``--seconds``, each request after 60 s.
Writes bench/results/load.md and prints it.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.dash_client import DashClient, find_store, graph_id, id_key  # noqa: E402
from bench.serving import spawn  # noqa: E402

AIO = "main"
MAX_OPEN = 6
RSS_EVERY = 250


# ---- servers in their own processes (bench/serving.py) ----------------------------------------
def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def worker_pids(pid: int) -> list[int]:
    """gunicorn's workers (the master's child processes), or [pid] for a single-process server."""
    try:
        kids = [int(k) for k in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        kids = []
    named = [k for k in kids if "gunicorn" in _cmdline(k) or "torchvista_dash" in _cmdline(k)]
    return named or [pid]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def server_rss(pid: int) -> list[float]:
    """Each worker's RSS (MB): what each of them holds, the thing that must reach a plateau."""
    return [rss_mb(w) for w in worker_pids(pid)]


def serve_floor() -> None:
    """The floor app (run as ``bench_load.py --serve-floor``): one dcc.Graph, a new two-point figure per
    click."""
    import logging

    import dash
    import plotly.graph_objects as go
    from dash import dcc, html
    from werkzeug.serving import make_server

    app = dash.Dash("dash_floor_load")

    def figure(k: int) -> go.Figure:
        return go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="markers", customdata=[k, k]))

    app.layout = html.Div([dcc.Graph(id="g", figure=figure(0))])

    @app.callback(dash.Output("g", "figure"), dash.Input("g", "clickData"), prevent_initial_call=True)
    def flip(click: dict) -> go.Figure:
        return figure(1 - int(click["points"][0]["customdata"]))

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    srv = make_server("127.0.0.1", 0, app.server, threaded=True)
    print(f"serving on http://127.0.0.1:{srv.server_port}/", flush=True)
    srv.serve_forever()


# ---- one simulated user -------------------------------------------------------------------------
@dataclass
class Stats:
    click_ms: list[float] = field(default_factory=list)
    details_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    clicks: int = 0
    new_views: int = 0  # measured clicks whose view no user had asked for before (a layout to compute)


_seen: set[tuple[frozenset[str], frozenset[str]]] = set()
_seen_lock = threading.Lock()


def first_time(store: dict[str, Any]) -> bool:
    key = (frozenset(store["expanded"]), frozenset(store["unfolded"]) | frozenset(store.get("pinned", ())))
    with _seen_lock:
        new = key not in _seen
        _seen.add(key)
        return new


def customdata_ids(figure: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for t in figure.get("data", []):
        for c in t.get("customdata") or []:
            c = c[0] if isinstance(c, list) and c else c
            if isinstance(c, str):
                out.add(c)
    return out


def check(
    old: dict[str, Any],
    new: dict[str, Any],
    vid: str,
    opening: bool,
    nonce: str,
    figure: dict[str, Any] | None,
) -> str | None:
    """What is wrong with the answer to this user's click, or None."""
    if new.get("bench_user") != nonce:
        return f"cross-talk: the store came back with {new.get('bench_user')!r}, not this user's {nonce!r}"
    if new.get("trace") != old.get("trace"):
        return "the store changed trace"
    before, after = set(old["expanded"]), set(new["expanded"])
    if vid.startswith("fold:"):
        if set(new["unfolded"]) == set(old["unfolded"]):
            return f"unfolding {vid} changed nothing"
    elif opening and not (before | {vid}) <= after:
        return f"opening {vid}: {sorted(before | {vid} - after)} missing from the new state"
    elif not opening and (vid in after or not after <= before):
        return f"closing {vid}: the new state is not the old one without it"
    if figure is not None and vid not in customdata_ids(figure) and not vid.startswith("fold:"):
        return f"the new figure does not draw {vid}"
    return None


def user(
    url: str,
    index: int,
    think: float,
    warmup: int,
    stop_at: float,
    measured: threading.Event,
    stats: Stats,
    rss_tick: Any,
) -> None:
    rng = random.Random(1000 + index)
    nonce = f"u{index}-{uuid.uuid4().hex[:8]}"
    try:
        client = DashClient(url)
        layout = client.layout()
        store = find_store(layout, AIO)
        figure = _find_figure(layout)
    except Exception as exc:  # noqa: BLE001 - counted
        stats.errors.append(f"page load: {type(exc).__name__}: {exc}")
        return
    if store is None or figure is None:
        stats.errors.append("page load: no ModelGraph store or figure in the layout")
        return
    store = {**store, "bench_user": nonce}
    done = 0
    while time.monotonic() < stop_at:
        time.sleep(think * rng.uniform(0.6, 1.4))
        if time.monotonic() >= stop_at:
            break
        drawn = customdata_ids(figure)
        expanded = set(store["expanded"])
        openable = sorted(
            i for i in drawn if (i.startswith("mod:") or i.startswith("fold:")) and i not in expanded
        )
        closable = sorted(i for i in expanded if i != "mod:(root)" and i in drawn)
        opening = bool(openable) and (len(expanded) < MAX_OPEN or not closable)
        if not opening and not closable:
            continue
        vid = rng.choice(openable if opening else closable)
        click = {"points": [{"customdata": vid}]}
        t0 = time.perf_counter()
        try:
            r = client.call(
                '"graph"}.figure', AIO, {"graph.clickData": click, "store.data": store}, "graph.clickData"
            )
            ms = (time.perf_counter() - t0) * 1000
            r.raise_for_status()
            out = r.json()["response"]
            if id_key(graph_id(AIO, "store")) not in out:  # the callback said what went wrong in the notes
                notes = out.get(id_key(graph_id(AIO, "notes")), {}).get("children")
                raise RuntimeError(f"no new state; the page says: {str(notes)[:300]}")
            new_store = out[id_key(graph_id(AIO, "store"))]["data"]
            new_fig = out.get(id_key(graph_id(AIO, "graph")), {}).get("figure")
            full = isinstance(new_fig, dict) and "data" in new_fig
            problem = check(store, new_store, vid, opening, nonce, new_fig if full else None)
            t1 = time.perf_counter()
            d = client.call(
                '"details"}.children',
                AIO,
                {"graph.clickData": click, "store.data": new_store},
                "graph.clickData",
            )
            d_ms = (time.perf_counter() - t1) * 1000
            d.raise_for_status()
        except Exception as exc:  # noqa: BLE001 - counted
            if measured.is_set():
                stats.errors.append(f"{vid}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        done += 1
        if problem is not None:
            stats.errors.append(problem)
        store = new_store
        new_view = first_time(store)
        if full:
            figure = new_fig
        if done > warmup and measured.is_set():
            stats.new_views += new_view
            stats.click_ms.append(ms)
            stats.details_ms.append(d_ms)
            stats.clicks += 1
            rss_tick()


def _find_figure(node: Any) -> dict[str, Any] | None:
    if isinstance(node, dict):
        props = node.get("props")
        if isinstance(props, dict) and props.get("id") == graph_id(AIO, "graph"):
            return props.get("figure")
        for v in node.values():
            f = _find_figure(v)
            if f is not None:
                return f
    elif isinstance(node, list):
        for v in node:
            f = _find_figure(v)
            if f is not None:
                return f
    return None


def floor_user(
    url: str, index: int, think: float, stop_at: float, measured: threading.Event, stats: Stats
) -> None:
    rng = random.Random(2000 + index)
    http = requests.Session()
    k = 0
    while time.monotonic() < stop_at:
        time.sleep(think * rng.uniform(0.6, 1.4))
        if time.monotonic() >= stop_at:
            break
        body = {
            "output": "g.figure",
            "outputs": {"id": "g", "property": "figure"},
            "inputs": [{"id": "g", "property": "clickData", "value": {"points": [{"customdata": k}]}}],
            "changedPropIds": ["g.clickData"],
            "state": [],
        }
        t0 = time.perf_counter()
        try:
            r = http.post(url + "_dash-update-component", json=body, timeout=60)
            ms = (time.perf_counter() - t0) * 1000
            r.raise_for_status()
            k = int(r.json()["response"]["g"]["figure"]["data"][0]["customdata"][0])
        except Exception as exc:  # noqa: BLE001 - counted
            if measured.is_set():
                stats.errors.append(f"floor: {type(exc).__name__}: {exc}")
            continue
        if measured.is_set():
            stats.click_ms.append(ms)
            stats.clicks += 1


# ---- phases -------------------------------------------------------------------------------------
def run_ours(
    trace_file: Path,
    users: int,
    seconds: float,
    think: float,
    warmup: int,
    serve_args: tuple[str, ...] = (),
    rss_every_s: float = 0.0,
) -> dict[str, Any]:
    """``users`` clicking the served trace for ``seconds``; ``serve_args``: more ``serve`` options (e.g.
    ``--workers 2 --store redis://...``); ``rss_every_s``: also sample every worker's RSS that often."""
    proc, url = spawn(
        ["-m", "torchvista_dash", "serve", str(trace_file), "--port", "0", *serve_args], trace_file.parent
    )
    _seen.clear()
    try:
        requests.get(url, timeout=60).raise_for_status()
        warm_s = warmup * (think + 0.5) + 5
        stop_at = time.monotonic() + warm_s + seconds
        measured = threading.Event()
        per_user = [Stats() for _ in range(users)]
        samples: list[tuple[int, float]] = []
        lock = threading.Lock()
        total = [0]

        def tick() -> None:
            with lock:
                total[0] += 1
                if total[0] % RSS_EVERY == 0:
                    samples.append((total[0], max(server_rss(proc.pid))))

        timeline: list[tuple[float, list[float]]] = []

        def sample_rss() -> None:
            t0 = time.monotonic()
            while time.monotonic() < stop_at:
                timeline.append((time.monotonic() - t0, server_rss(proc.pid)))
                time.sleep(rss_every_s)

        threads = [
            threading.Thread(
                target=user, args=(url, i, think, warmup, stop_at, measured, per_user[i], tick), daemon=True
            )
            for i in range(users)
        ]
        for t in threads:
            t.start()
        if rss_every_s > 0:
            threading.Thread(target=sample_rss, daemon=True).start()
        time.sleep(warm_s)
        samples.append((0, max(server_rss(proc.pid))))
        measured.set()
        for t in threads:
            t.join(timeout=seconds + 180)
        samples.append((total[0], max(server_rss(proc.pid))))
        out = summarise(per_user, samples, seconds)
        out["workers"] = len(worker_pids(proc.pid))
        out["rss_timeline"] = timeline
        return out
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def run_floor(users: int, seconds: float, think: float) -> dict[str, Any]:
    proc, url = spawn([str(Path(__file__).resolve()), "--serve-floor"], ROOT)
    try:
        measured = threading.Event()
        per_user = [Stats() for _ in range(users)]
        warm_s = 3.0
        stop_at = time.monotonic() + warm_s + seconds
        threads = [
            threading.Thread(
                target=floor_user, args=(url, i, think, stop_at, measured, per_user[i]), daemon=True
            )
            for i in range(users)
        ]
        for t in threads:
            t.start()
        time.sleep(warm_s)
        measured.set()
        for t in threads:
            t.join(timeout=seconds + 120)
        return summarise(per_user, [], seconds)
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q / 100 * (len(s) - 1))))]


def summarise(per_user: list[Stats], samples: list[tuple[int, float]], seconds: float) -> dict[str, Any]:
    ms = [x for s in per_user for x in s.click_ms]
    det = [x for s in per_user for x in s.details_ms]
    errors = [e for s in per_user for e in s.errors]
    slope = float("nan")
    if len(samples) >= 2 and samples[-1][0] > samples[0][0]:
        xs, ys = [a for a, _ in samples], [b for _, b in samples]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        den = sum((x - mx) ** 2 for x in xs)
        slope = (
            sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den * 1000
            if den
            else float("nan")
        )
    new = sum(s.new_views for s in per_user)
    return {
        "cross_talk": sum("cross-talk" in e for e in errors),
        "unknown_trace": sum("no trace with id" in e for e in errors),
        "clicks": len(ms),
        "rate": len(ms) / seconds,
        "errors": errors,
        "new": new / len(ms) if ms else 0.0,
        "p50": pct(ms, 50),
        "p95": pct(ms, 95),
        "p99": pct(ms, 99),
        "details_p50": pct(det, 50),
        "rss_start": samples[0][1] if samples else float("nan"),
        "rss_end": samples[-1][1] if samples else float("nan"),
        "rss_per_1000": slope,
    }


def build_trace(folder: Path) -> Path:
    import torch
    from transformers import GPT2Config, GPT2Model

    from torchvista_dash import trace_model

    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (1, 16), generator=torch.Generator().manual_seed(0))
    path = folder / "gpt2.json"
    trace_model(GPT2Model(GPT2Config()).eval(), ids, name="GPT-2 small").save(path)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--users", default="10,30")
    ap.add_argument("--seconds", type=float, default=60.0, help="measured seconds per phase")
    ap.add_argument("--think", type=float, default=1.0, help="mean seconds between one user's clicks")
    ap.add_argument("--warmup", type=int, default=5, help="clicks per user before measuring")
    ap.add_argument(
        "--team",
        action="store_true",
        help="the team server instead: 1 worker at --users[0] users vs 2 workers sharing Redis at --users[1]",
    )
    ap.add_argument(
        "--soak", type=float, default=0.0, help="seconds of 2 workers + Redis under --users[0] users: RSS"
    )
    ap.add_argument("--serve-floor", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "load.md"))
    ns = ap.parse_args()
    if ns.serve_floor:
        serve_floor()
        return 0
    counts = [int(u) for u in ns.users.split(",") if u.strip()]
    if ns.team or ns.soak:
        return team(ns, counts)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        trace_file = build_trace(Path(tmp))
        for n in counts:
            print(f"-- {n} users: ours", flush=True)
            ours = run_ours(trace_file, n, ns.seconds, ns.think, ns.warmup)
            print(f"-- {n} users: Dash floor", flush=True)
            floor = run_floor(n, ns.seconds, ns.think)
            rows.append((n, ours, floor))
    cmd = (
        f".venv/bin/python bench/bench_load.py --users {ns.users} --seconds {ns.seconds:g} "
        f"--think {ns.think:g} "
        f"--warmup {ns.warmup}"
    )
    lines = [
        "# Load: simulated users clicking a served GPT-2 small trace",
        "",
        f"Command: `{cmd}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        "server and users on the same machine (the users' threads share its cores).",
        "",
        "| users | clicks measured (per s) | new views | errors | click p50 / p95 / p99 (ms) "
        "| Dash floor p50 / p95 (ms) "
        "| ours / floor, p50 · p95 | details p50 (ms) | server RSS after warm-up → end (MB) "
        "| RSS per 1,000 clicks (MB) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, o, f in rows:
        lines.append(
            f"| {n} | {o['clicks']} ({o['rate']:.1f}) | {o['new']:.0%} | {len(o['errors'])} "
            f"| {o['p50']:.0f} / {o['p95']:.0f} / "
            f"{o['p99']:.0f} | {f['p50']:.0f} / {f['p95']:.0f} | {o['p50'] / f['p50']:.1f}× · "
            f"{o['p95'] / f['p95']:.1f}× | {o['details_p50']:.0f} "
            f"| {o['rss_start']:.0f} → {o['rss_end']:.0f} | "
            f"{o['rss_per_1000']:+.1f} |"
        )
    errs = [e for _, o, f in rows for e in o["errors"] + f["errors"]]
    if errs:
        lines += ["", "First errors:", *[f"- {e}" for e in errs[:10]]]
    text = "\n".join(lines) + "\n"
    Path(ns.out).write_text(text)
    print(text)
    return 0


def team(ns: argparse.Namespace, counts: list[int]) -> int:
    """``--team``: one worker at counts[0] users against two gunicorn workers sharing a real redis-server at
    counts[1] users, in one run; ``--soak``: the two workers under counts[0] users for that long, each
    worker's RSS sampled every 30 s (its plateau printed)."""
    from bench.serving import RedisServer

    load = os.getloadavg()
    lines = ["# Load: the team server (gunicorn workers sharing Redis)", ""]
    cmd = f".venv/bin/python bench/bench_load.py --users {ns.users} --seconds {ns.seconds:g}"
    cmd += f" --think {ns.think:g}"
    cmd += " --team" if ns.team else f" --soak {ns.soak:g}"
    lines += [
        f"Command: `{cmd}`  ",
        f"Machine: {os.cpu_count()} cores; load average at start {load[0]:.1f} (shared with other work).",
        "",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        trace_file = build_trace(Path(tmp))
        redis = RedisServer()
        try:
            store = ("--workers", "2", "--store", redis.url)
            if ns.team:
                one_users, two_users = counts[0], counts[1] if len(counts) > 1 else 2 * counts[0]
                print(f"-- 1 worker, {one_users} users", flush=True)
                one = run_ours(trace_file, one_users, ns.seconds, ns.think, ns.warmup)
                print(f"-- 2 workers + Redis, {two_users} users", flush=True)
                two = run_ours(trace_file, two_users, ns.seconds, ns.think, ns.warmup, store)
                lines += [
                    "| server | users | clicks (per s) | new views | errors | cross-talk | unknown trace "
                    "| p50 / p95 / p99 (ms) | largest worker RSS at the end (MB) |",
                    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
                ]
                for name, n, o in (("1 worker", one_users, one), ("2 workers + Redis", two_users, two)):
                    rss = (
                        " · ".join(f"{r:.0f}" for r in o["rss_timeline"][-1][1])
                        if o["rss_timeline"]
                        else (f"{o['rss_end']:.0f}")
                    )
                    lines.append(
                        f"| {name} | {n} | {o['clicks']} ({o['rate']:.1f}) | {o['new']:.0%} "
                        f"| {len(o['errors'])} "
                        f"| {o['cross_talk']} | {o['unknown_trace']} | {o['p50']:.0f} / {o['p95']:.0f} / "
                        f"{o['p99']:.0f} | {rss} |"
                    )
                lines += [
                    "",
                    f"p95, 2 workers at {two_users} users / 1 worker at {one_users}: "
                    f"{two['p95'] / one['p95']:.2f}×",
                ]
                errs = one["errors"] + two["errors"]
            else:
                print(f"-- soak: 2 workers + Redis, {counts[0]} users, {ns.soak:g} s", flush=True)
                o = run_ours(trace_file, counts[0], ns.soak, ns.think, ns.warmup, store, rss_every_s=30.0)
                lines += [
                    f"{counts[0]} users for {ns.soak:g} s: {o['clicks']} clicks, {len(o['errors'])} errors, "
                    f"{o['cross_talk']} cross-talk, {o['unknown_trace']} unknown trace, "
                    f"p50 / p95 {o['p50']:.0f} / {o['p95']:.0f} ms.",
                    "",
                    "| time (s) | RSS of each worker (MB) |",
                    "|---:|---:|",
                    *[f"| {t:.0f} | {' · '.join(f'{r:.0f}' for r in rss)} |" for t, rss in o["rss_timeline"]],
                ]
                tail = [max(rss) for _, rss in o["rss_timeline"][len(o["rss_timeline"]) // 2 :]]
                if tail:
                    lines += [
                        "",
                        f"Plateau (second half, largest worker): {min(tail):.0f}–{max(tail):.0f} MB",
                    ]
                errs = o["errors"]
        finally:
            redis.stop()
    if errs:
        lines += ["", "First errors:", *[f"- {e}" for e in errs[:10]]]
    text = "\n".join(lines) + "\n"
    out = Path(ns.out).with_name("load_team.md" if ns.team else "load_soak.md")
    out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
