"""Running dot: the time budget read and checked when used, and the admission of runs to the cores
(a cap on concurrent runs, small before big, interactive before background). Real dot processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from torchvista_dash.layout.graphviz import run


def _dot_of(boxes: int) -> str:
    return "digraph G {" + " ".join(f"n{i} -> n{i + 1};" for i in range(boxes)) + "}"


@pytest.mark.parametrize("raw", ["abc", "nan", "inf", "-1", "0"])
def test_a_bad_timeout_setting_is_a_clear_error_when_used_not_at_import(
    raw: str, monkeypatch: pytest.MonkeyPatch, dot_binary: str
) -> None:
    env = {**os.environ, run.TIMEOUT_ENV: raw}
    proc = subprocess.run(
        [sys.executable, "-c", "import torchvista_dash, torchvista_dash.layout"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr  # importing never breaks
    monkeypatch.setenv(run.TIMEOUT_ENV, raw)
    with pytest.raises(ValueError, match=rf"\$TVD_DOT_TIMEOUT='{raw}' is not a number of seconds above 0"):
        run.run_dot(_dot_of(3))


def test_the_timeout_setting_and_argument_are_used(monkeypatch: pytest.MonkeyPatch, dot_binary: str) -> None:
    monkeypatch.setenv(run.TIMEOUT_ENV, " 12.5 ")
    assert run.timeout_seconds() == 12.5 and run.timeout_seconds(3) == 3.0
    monkeypatch.delenv(run.TIMEOUT_ENV)
    assert run.timeout_seconds() == run.DEFAULT_TIMEOUT
    for bad in (float("nan"), -2, "soon"):
        with pytest.raises(ValueError, match="timeout must be a number of seconds above 0"):
            run.run_dot(_dot_of(3), timeout=bad)  # type: ignore[arg-type]
    assert b'"objects"' in run.run_dot(_dot_of(3), timeout=30)


def test_concurrent_runs_are_capped(monkeypatch: pytest.MonkeyPatch, dot_binary: str) -> None:
    monkeypatch.setenv(run.JOBS_ENV, "2")
    slots = run.Slots()
    monkeypatch.setattr(run, "slots", slots)
    errors: list[BaseException] = []

    def one() -> None:
        try:
            run.run_dot(_dot_of(300), timeout=60)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and slots.stats["runs"] == 6
    assert slots.stats["max_busy"] == 2 and slots.stats["waited"] >= 1  # never more than two dots at once
    monkeypatch.setenv(run.JOBS_ENV, "many")
    with pytest.raises(ValueError, match="TVD_DOT_JOBS='many'"):
        run.run_dot(_dot_of(3))


def _holder(
    slots: run.Slots, size: int, order: list[str], name: str, release: threading.Event, bg: bool = False
) -> threading.Thread:
    def go() -> None:
        if bg:
            with run.background(), slots.hold(size, 30):
                order.append(name)
                release.wait(30)
        else:
            with slots.hold(size, 30):
                order.append(name)
                release.wait(30)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def _wait_for(cond, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.01)


def test_small_layouts_pass_big_ones_and_clicks_pass_background_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(run.JOBS_ENV, "2")
    slots, order, go = run.Slots(), [], threading.Event()
    big = run.HEAVY_BYTES * 2
    holders = [_holder(slots, big, order, "big-1", go)]
    _wait_for(lambda: order == ["big-1"])
    holders.append(_holder(slots, big, order, "big-2", go))  # a second big one may not take the last core
    time.sleep(0.2)
    holders.append(_holder(slots, 100, order, "small", go))  # a small one gets it at once
    _wait_for(lambda: order == ["big-1", "small"])
    go.set()
    for t in holders:
        t.join(timeout=10)
    assert order == ["big-1", "small", "big-2"]

    monkeypatch.setenv(run.JOBS_ENV, "1")
    slots, order, first, rest = run.Slots(), [], threading.Event(), threading.Event()
    holders = [_holder(slots, 100, order, "running", first)]
    _wait_for(lambda: order == ["running"])
    holders.append(_holder(slots, 100, order, "background", rest, bg=True))
    time.sleep(0.1)
    holders.append(_holder(slots, big, order, "click", rest))  # big, but a user waits for it
    time.sleep(0.1)
    first.set()
    rest.set()
    for t in holders:
        t.join(timeout=10)
    assert order == ["running", "click", "background"]


def test_a_clicks_big_layout_runs_beside_a_big_background_one_which_keeps_a_core_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(run.JOBS_ENV, "2")
    slots, order, go = run.Slots(), [], threading.Event()
    big = run.HEAVY_BYTES * 2
    holders = [_holder(slots, big, order, "neighbour", go, bg=True)]  # the precomputer's big layout
    _wait_for(lambda: order == ["neighbour"])
    holders.append(_holder(slots, 100, order, "second neighbour", go, bg=True))
    time.sleep(0.2)
    holders.append(_holder(slots, big, order, "click", go))  # a big interactive layout: the free core
    _wait_for(lambda: order == ["neighbour", "click"])
    assert slots.busy() == 2
    go.set()
    for t in holders:
        t.join(timeout=10)
    assert order == ["neighbour", "click", "second neighbour"]


def test_a_run_that_waits_too_long_for_a_core_says_graphviz_is_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(run.JOBS_ENV, "1")
    slots, order, release = run.Slots(), [], threading.Event()
    holder = _holder(slots, 100, order, "running", release)
    _wait_for(lambda: order == ["running"])
    with pytest.raises(run.GraphvizError, match="Graphviz is busy: 1 layouts are running"):
        with slots.hold(100, 0.2):
            pass
    release.set()
    holder.join(timeout=10)


def test_a_big_run_that_has_waited_long_goes_before_new_small_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(run.JOBS_ENV, "1")
    slots, order, first, rest = run.Slots(), [], threading.Event(), threading.Event()
    slots.AGE_S = 0.3
    holders = [_holder(slots, 100, order, "running", first)]
    _wait_for(lambda: order == ["running"])
    holders.append(_holder(slots, run.HEAVY_BYTES * 2, order, "big", rest))
    time.sleep(0.5)  # the big one has waited past AGE_S
    holders.append(_holder(slots, 100, order, "small", rest))
    time.sleep(0.1)
    first.set()
    rest.set()
    for t in holders:
        t.join(timeout=10)
    assert order == ["running", "big", "small"]
