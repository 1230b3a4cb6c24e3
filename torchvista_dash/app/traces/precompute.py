"""Laying out, in the background, the views one click away, so a click usually finds its figure cached.

The work is speculative, so it is bounded and yields: one worker thread; at most ``MAX_JOBS`` jobs queued
(the newest click's neighbours first, the oldest dropped when full); a job already queued is not queued
twice; jobs older than ``MAX_AGE_S`` are dropped unrun (the user has moved on); a job whose figure got
cached meanwhile is skipped; finished keys are forgotten, so an evicted view can be precomputed again. The
worker starts only when the server is quiet: ``DELAY_S`` without a new submission and without a request of
any watched Flask app, none in flight (``watch_requests(server)``, called by ``install(app)``). The work
holds the GIL while it builds figures, and on a small machine it takes a core from the browser: started while
a page still fetches its pictures, it slows that page's first load (bench/bench_vs_torchvista.py measures the
80-layer Llama's cold load). Its Graphviz runs queue behind every interactive one
(``layout.graphviz.run.background``).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable

import flask

from torchvista_dash.layout.graphviz.run import background

MAX_JOBS = 48  # about four clicks' worth of neighbours
MAX_AGE_S = 20.0  # a neighbour of a view shown this long ago is not worth a dot run any more
DELAY_S = 0.5  # quiet time after the last submission or request before the worker starts


class Precomputer:
    """A bounded, deduplicating, newest-first queue of background jobs and the one thread that runs them."""

    def __init__(
        self, max_jobs: int = MAX_JOBS, max_age_s: float = MAX_AGE_S, delay_s: float = DELAY_S
    ) -> None:
        self.max_jobs, self.max_age_s, self.delay_s = max_jobs, max_age_s, delay_s
        self._jobs: OrderedDict[Hashable, tuple[float, Callable[[], None]]] = OrderedDict()
        self._cv = threading.Condition()
        self._busy_at = 0.0  # the last submission, or the end of the last request
        self._in_flight = 0  # requests being answered now (watch_requests)
        self._thread: threading.Thread | None = None
        self._running: Hashable | None = None
        self._watched: weakref.WeakSet[flask.Flask] = weakref.WeakSet()
        self.stats = {
            "queued": 0,
            "duplicates": 0,
            "dropped_full": 0,
            "dropped_stale": 0,
            "run": 0,
            "failed": 0,
        }

    def submit(self, key: Hashable, work: Callable[[], None]) -> None:
        """Queue ``work`` under ``key`` (newest first); a key queued or running already is not queued
        again."""
        now = time.monotonic()
        with self._cv:
            self._busy_at = now
            if key in self._jobs or key == self._running:
                self.stats["duplicates"] += 1
                if key in self._jobs:
                    self._jobs[key] = (now, self._jobs[key][1])
                    self._jobs.move_to_end(key)
                return
            self._jobs[key] = (now, work)
            self.stats["queued"] += 1
            while len(self._jobs) > self.max_jobs:
                self._jobs.popitem(last=False)
                self.stats["dropped_full"] += 1
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="tvd-precompute", daemon=True)
                self._thread.start()
            self._cv.notify()

    def watch_requests(self, server: flask.Flask) -> None:
        """Hold the worker while ``server`` answers a request, and ``delay_s`` after (once per server)."""
        if server in self._watched:
            return
        self._watched.add(server)
        flask.request_started.connect(self._request_began, sender=server, weak=False)
        # sent even when the request failed
        flask.request_tearing_down.connect(self._request_ended, sender=server, weak=False)

    def _request_began(self, _sender: object, **_extra: object) -> None:
        with self._cv:
            self._in_flight += 1

    def _request_ended(self, _sender: object, **_extra: object) -> None:
        with self._cv:
            self._in_flight = max(0, self._in_flight - 1)
            self._busy_at = max(self._busy_at, time.monotonic())
            self._cv.notify()

    def pending(self) -> int:
        """Jobs queued or running now."""
        with self._cv:
            return len(self._jobs) + (self._running is not None)

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is queued or running (tests, benchmarks); False if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.pending() == 0:
                return True
            time.sleep(0.02)
        return self.pending() == 0

    def _next(self) -> tuple[Hashable, Callable[[], None]]:
        with self._cv:
            while True:
                now = time.monotonic()
                while self._jobs and now - next(iter(self._jobs.values()))[0] > self.max_age_s:
                    self._jobs.popitem(last=False)  # the oldest first: drop all that went stale
                    self.stats["dropped_stale"] += 1
                quiet = self._busy_at + self.delay_s - now
                if self._jobs and quiet <= 0 and not self._in_flight:
                    key, (_, work) = self._jobs.popitem(last=True)
                    self._running = key
                    return key, work
                self._cv.wait(timeout=max(quiet, self.delay_s) if self._jobs else None)

    def _loop(self) -> None:
        while True:
            _, work = self._next()
            try:
                with background():
                    work()
                self.stats["run"] += 1
            except Exception:  # a precompute failure must never break the app; the click will report it
                self.stats["failed"] += 1
            finally:
                with self._cv:
                    self._running = None
