"""A team server, with real parts: ``serve --workers 2`` under gunicorn, two servers sharing one real
redis-server, traces pushed with a token; faults (a worker killed mid-layout, Redis down, stopped, restarted
empty) answered in the page, never with HTTP 500."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from support_app import click_id, ids_drawn, wait_drawn, wait_ids
from support_graphs import stack_graph
from support_redis import RedisServer, free_port

from bench.serving import spawn
from torchvista_dash.app.actions import links
from torchvista_dash.app.traces import shared, sharing, state
from torchvista_dash.demos import demo_trace
from torchvista_dash.traced import Trace
from torchvista_dash.view import build as view_mod

TOKEN = "team-token-1"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.close()


def _serve(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        return spawn(["-m", "torchvista_dash", "serve", *args, "--port", "0"], cwd, timeout=180)
    finally:
        os.environ.clear()
        os.environ.update(old)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)  # gunicorn's master stops its workers; serve exits as on Ctrl-C
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _push(path: Path, url: str, token: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "torchvista_dash", "push", str(path), "--server", url, "--token", token],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _layout(url: str, query: str) -> str:
    """The page's layout as its renderer asks for it (the page's query in the Referer)."""
    r = requests.get(url + "_dash-layout", headers={"Referer": url + query}, timeout=120)
    assert r.status_code == 200, (r.status_code, r.text[:300])
    return r.text


def _workers(master: int) -> list[int]:
    """gunicorn's worker processes: the master's children."""
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def _wait_workers(master: int, n: int, without: int = 0) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        alive = [p for p in _workers(master) if p != without]
        if len(alive) == n:
            return
        time.sleep(0.2)
    raise AssertionError(f"gunicorn has {_workers(master)} workers, not {n} (without {without})")


def _laying_out(master: int) -> int:
    """The worker that has a dot process running (a layout in progress)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for worker in _workers(master):
            kids = subprocess.run(
                ["ps", "-o", "comm=", "--ppid", str(worker)], capture_output=True, text=True
            )
            if "dot" in kids.stdout.split():
                return worker
        time.sleep(0.05)
    raise AssertionError("no worker started dot")


def test_redis_down_at_start_is_one_error_line_naming_it(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    proc = subprocess.run(
        [sys.executable, "-m", "torchvista_dash", "serve", "mlp", "--store", url, "--port", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and url in lines[0] and "does not answer" in lines[0]


def test_workers_share_one_store_compute_a_view_once_and_survive_a_killed_worker(
    tmp_path: Path, redis_server: RedisServer, page: Any, dot_binary: str
) -> None:
    store = shared.open_store(redis_server.url)
    proc, url = _serve(tmp_path, "mlp", "--workers", "2", "--store", redis_server.url, "--push-token", TOKEN)
    try:
        master = proc.pid
        _wait_workers(master, 2)
        new = Trace(stack_graph(7, d=24))  # a trace no worker has seen
        new.save(tmp_path / "new.json")
        refused = _push(tmp_path / "new.json", url, "wrong-token")
        assert (
            refused.returncode != 0 and "HTTP 403" in refused.stderr and "wrong push token" in refused.stderr
        )
        assert store.get(sharing.trace_key(new.id)) is None  # nothing stored
        pushed = _push(tmp_path / "new.json", url, TOKEN)
        assert pushed.returncode == 0, pushed.stderr
        link = pushed.stdout.strip()
        assert link == f"{url}?trace={new.id}"
        # 8 users open its first view at once, on 2 workers: dot lays it out once
        spec = view_mod.make_spec(new.graph, depth=1)
        key = sharing.layout_key(new.id, spec, "TB", state.NODE_BUDGET)
        pages: list[str] = []
        users = [
            threading.Thread(target=lambda: pages.append(_layout(url, f"?trace={new.id}"))) for _ in range(8)
        ]
        for u in users:
            u.start()
        for u in users:
            u.join(180)
        assert len(pages) == 8 and all('"nodes:labels"' in p and "layers.6" in p for p in pages)
        assert sharing.counts(store, key)["view"] == 1
        # a worker killed with SIGKILL in the middle of a layout: gunicorn starts another; the next ask works
        big = Trace(stack_graph(40, d=31))
        big.save(tmp_path / "big.json")
        assert _push(tmp_path / "big.json", url, TOKEN).returncode == 0
        slow = f"?trace={big.id}&depth=all&fold_repeats=false"
        asking = threading.Thread(target=lambda: _try_layout(url, slow), daemon=True)
        asking.start()
        busy = _laying_out(master)  # the worker whose dot is running
        os.kill(busy, signal.SIGKILL)
        _wait_workers(master, 2, without=busy)  # replaced
        # the user's next try works (the killed worker's lock lapsed), and so does the click after it
        page.goto(url + slow)
        wait_drawn(page, f"trace-{big.id}")
        page.goto(f"{url}?trace={new.id}")
        wait_drawn(page, f"trace-{new.id}")
        _open_first_module(page, f"trace-{new.id}")
        assert sharing.counts(store, key)["view"] == 1  # what was stored before is still there
    finally:
        _stop(proc)
        store.close()


def _try_layout(url: str, query: str) -> None:
    try:
        requests.get(url + "_dash-layout", headers={"Referer": url + query}, timeout=60)
    except requests.RequestException:
        pass  # its worker was killed under it


def _open_first_module(page: Any, aio_id: str) -> None:
    """Click the first closed module (or folded run) drawn, as a user opens it, and wait for the answer."""
    drawn = ids_drawn(page, aio_id, "nodes:labels")
    target = sorted(i for i in drawn if i.startswith(("mod:", "fold:")))[0]
    click_id(page, aio_id, target)
    wait_ids(page, aio_id, "nodes:labels", absent=(target,))


def _expected_ids(trace: Trace, page_url: str) -> set[str]:
    """The boxes the page at ``page_url`` must draw, worked out here from its address."""
    query = parse_qs(urlsplit(page_url).query)
    spec = links.spec_from_query(trace.graph, query, 1, True, False) or view_mod.make_spec(
        trace.graph, depth=1
    )
    return {n.id for n in view_mod.build_view(trace.graph, spec).nodes}


def test_two_hosts_share_links_and_answer_right_and_redis_faults_show_in_the_page(
    tmp_path: Path, redis_server: RedisServer, page: Any, dot_binary: str
) -> None:
    env = {"TVD_STORE_CHECK_S": "0.2"}  # confirm held traces in the store at once (republish when lost)
    a, url_a = _serve(tmp_path, "mlp", "--store", redis_server.url, "--push-token", TOKEN, env=env)
    b, url_b = _serve(tmp_path, "mlp", "--store", redis_server.url, "--push-token", TOKEN, env=env)
    try:
        trace = demo_trace("gpt")
        trace.save(tmp_path / "gpt.json")
        pushed = _push(tmp_path / "gpt.json", url_a, TOKEN)
        assert pushed.returncode == 0, pushed.stderr
        link = pushed.stdout.strip()
        # the link from host A opens on host B; clicks alternate between them, each answer checked
        current = link.replace(url_a, url_b)
        for step, (here, there) in enumerate([(url_b, url_a), (url_a, url_b), (url_b, url_a)]):
            page.goto(current)
            wait_drawn(page, f"trace-{trace.id}")
            drawn = set(ids_drawn(page, f"trace-{trace.id}", "nodes:labels"))
            assert drawn == _expected_ids(trace, current), step
            _open_first_module(page, f"trace-{trace.id}")
            page.wait_for_function("(u) => location.href !== u", arg=current)
            current = page.url.replace(here, there)
        # Redis stopped while serving: what a host holds keeps working; what only Redis had is a message
        other = Trace(stack_graph(5, d=40))
        other.save(tmp_path / "other.json")
        assert _push(tmp_path / "other.json", url_a, TOKEN).returncode == 0  # held by A only
        redis_server.stop()
        held = requests.get(
            url_b + "_dash-layout", headers={"Referer": link.replace(url_a, url_b)}, timeout=60
        )
        assert held.status_code == 200 and '"nodes:labels"' in held.text
        gone = requests.get(
            url_b + "_dash-layout", headers={"Referer": f"{url_b}?trace={other.id}"}, timeout=60
        )
        assert (
            gone.status_code == 200
            and "does not answer" in gone.text
            and f":{redis_server.port}" in gone.text
        )
        page.goto(f"{url_b}?trace={other.id}")
        page.wait_for_selector("text=does not answer", timeout=30_000)
        # Redis restarted empty: A publishes again what it holds, so B opens it; an id no one holds is gone
        redis_server.start()
        time.sleep(0.5)
        assert '"nodes:labels"' in _layout(url_a, f"?trace={other.id}")  # A confirms it, and republishes
        assert '"nodes:labels"' in _layout(url_b, f"?trace={other.id}")
        nobody = _layout(url_b, f"?trace={'f' * 16}")
        assert "no trace with id" in nobody and "show the trace again" in nobody
    finally:
        _stop(a)
        _stop(b)


def test_workers_without_a_store_share_a_temporary_folder_removed_on_exit(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "torchvista_dash", "serve", "mlp", "--workers", "2", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "with 2 workers, store file:///" in line, line
        folder = Path(line.split("store file://")[1].split()[0])
        url = line.split("serving on ")[1].split()[0]
        assert folder.is_dir() and '"nodes:labels"' in _layout(url, "")
        assert any((folder / "kept").iterdir())  # the served trace, kept for every worker
    finally:
        _stop(proc)
    assert not folder.exists()
