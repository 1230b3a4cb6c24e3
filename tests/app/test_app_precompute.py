"""The background precompute: bounded, deduplicated, newest first, stale work dropped, finished keys
forgotten; and under a long run of real clicks the queue and the caches stay bounded and drain when the clicks
stop."""

from __future__ import annotations

import threading
import time

from test_app_state import page_for

from torchvista_dash.app.actions import viewstep
from torchvista_dash.app.traces import registry, state
from torchvista_dash.app.traces.page_state import PageState
from torchvista_dash.app.traces.precompute import MAX_JOBS, Precomputer
from torchvista_dash.layout import GraphvizError


def _blocked(p: Precomputer) -> threading.Event:
    """Occupy the worker with a job that runs until the returned event is set."""
    release, started = threading.Event(), threading.Event()
    p.submit("blocker", lambda: (started.set(), release.wait(30)))
    assert started.wait(10)
    return release


def test_the_queue_is_bounded_deduplicated_and_runs_the_newest_first() -> None:
    p = Precomputer(max_jobs=5, max_age_s=60, delay_s=0.0)
    release = _blocked(p)
    ran: list[int] = []
    for k in range(20):
        p.submit(k, lambda k=k: ran.append(k))
    p.submit(19, lambda: ran.append(-1))  # already queued: not queued twice
    assert p.pending() == 5 + 1  # five queued, the blocker running
    assert p.stats["dropped_full"] == 15 and p.stats["duplicates"] == 1
    release.set()
    assert p.wait_idle(10)
    assert ran == [19, 18, 17, 16, 15]  # the latest click's neighbours first; the oldest were dropped
    p.submit(19, lambda: ran.append(19))  # finished keys are forgotten: it can run again
    assert p.wait_idle(10) and ran[-1] == 19


def test_stale_jobs_are_dropped_unrun_and_the_worker_waits_for_quiet() -> None:
    p = Precomputer(max_jobs=10, max_age_s=0.2, delay_s=0.0)
    release = _blocked(p)
    ran: list[str] = []
    p.submit("old", lambda: ran.append("old"))
    time.sleep(0.4)
    release.set()
    assert p.wait_idle(10) and ran == [] and p.stats["dropped_stale"] == 1
    quiet = Precomputer(delay_s=0.3)
    started = time.monotonic()
    done = threading.Event()
    quiet.submit("a", done.set)
    assert done.wait(10) and time.monotonic() - started >= 0.3  # not before the answer could go out


def test_the_worker_waits_while_a_watched_app_answers_a_request_and_a_moment_after() -> None:
    # the page fetching the pictures of the answer that queued the work: the work would take a core from it
    import flask

    app = flask.Flask("someone_elses_dash_app")
    entered, release = threading.Event(), threading.Event()
    app.add_url_rule("/picture", "picture", lambda: (entered.set(), release.wait(30), "svg")[2])
    p = Precomputer(delay_s=0.2)
    p.watch_requests(app)
    p.watch_requests(app)  # once per app, however often it is asked
    fetch = threading.Thread(target=lambda: app.test_client().get("/picture"), daemon=True)
    fetch.start()
    assert entered.wait(10)
    done = threading.Event()
    p.submit("neighbour", done.set)
    assert not done.wait(0.6)  # past delay_s, but a request is still being answered
    ended = time.monotonic()
    release.set()
    fetch.join(10)
    assert done.wait(10) and time.monotonic() - ended >= 0.2  # and the quiet time after it
    assert p.wait_idle(10) and p.stats["run"] == 1


def test_many_clicks_keep_the_queue_and_caches_bounded(dot_binary: str) -> None:
    data = page_for("gpt")
    tid = data.trace
    entry = registry.entry(tid)
    peak = failed = 0
    deadline = time.monotonic() + 120
    clicks = 0
    while clicks < 300 and time.monotonic() < deadline:
        vg = state.visible(tid, data.spec)  # click some box or cluster drawn now
        targets = sorted(
            [n.id for n in vg.nodes if n.kind in ("module", "folded")] + [c.id for c in vg.clusters]
        )
        vid = targets[(clicks * 7) % len(targets)]
        try:
            new = viewstep.answer("graph", vid, data, None).store
        except (
            GraphvizError
        ):  # a pooled dot that died mid-batch (layout/dotpool, rare): the page would say so
            failed += 1
            continue
        if isinstance(new, dict):
            data = PageState.from_store(new)
        clicks += 1
        peak = max(peak, state.precomputer.pending())
    assert clicks >= 30 and failed <= clicks // 50
    assert peak <= MAX_JOBS + 1  # it used to grow by up to 12 jobs per click
    assert len(entry.figures) <= registry.FIGURES and len(entry.views) <= registry.VIEWS
    assert state.precomputer.wait_idle(90)  # and it drains soon after the clicks stop
