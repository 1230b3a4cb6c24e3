"""Repeated chains of ops inside one module, found so that each is laid out as a piece of its own.

A module whose forward is a Python loop (an eager mixture-of-experts block: for each routed expert, index
the tokens, gate, up, act, mul, down, scale, add into the output) holds hundreds of ops as direct children:
one dot run over its 1,700 boxes and 2,600 edges takes seconds, per layer, where a piece per repetition and
the module's own piece of one box per repetition take a fraction of one (bench/bench_layout_scale.py
--moe-only). Its ops come in the loop's order, so the loop's body is a *tandem repeat* of the children's
names: a stretch where the name sequence repeats with one period. Each repetition becomes a *group*: a
layout-only cluster (no border, no title, not in the Layout), laid out like a module of its own. Groups of
one loop body share their piece layout when their sizes agree.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

GROUP_PREFIX = "group:"  # ids of groups: "group:<module call id>:<k>" (never a visible id)
MIN_CHILDREN = 64  # a module with fewer direct children is laid out in one piece however it repeats
MIN_REPEATS = 4  # a stretch repeating fewer times is no loop worth cutting
MIN_PERIOD = 3  # children per repetition: a repeat of one or two boxes is a stack, not a chain
MAX_PERIOD = 256


def find_periods(tokens: Sequence[int]) -> list[tuple[int, int, int]]:
    """Disjoint tandem repeats of ``tokens``: (start, period, repetitions), each the stretch covering the
    most tokens among what is left (the shortest period of equal cover: a repeat of 16 repeats with 32 too),
    searched again before and after it."""
    codes = np.asarray(tokens, dtype=np.int64)
    out: list[tuple[int, int, int]] = []
    todo = [(0, len(codes))]
    while todo:
        lo, hi = todo.pop()
        best = _best_repeat(codes[lo:hi])
        if best is None:
            continue
        start, period, reps = best
        out.append((lo + start, period, reps))
        todo.append((lo, lo + start))
        todo.append((lo + start + period * reps, hi))
    return sorted(out)


def _best_repeat(codes: np.ndarray) -> tuple[int, int, int] | None:
    n = len(codes)
    best: tuple[int, int, int] | None = None
    cover = 0
    for period in range(MIN_PERIOD, min(MAX_PERIOD, n // MIN_REPEATS) + 1):
        same = codes[:-period] == codes[period:]
        if not same.any():
            continue
        # maximal runs of True: tokens i..i+r-1 each equal to the one a period later
        edges = np.flatnonzero(np.diff(np.concatenate(([0], same.astype(np.int8), [0]))))
        starts, ends = edges[0::2], edges[1::2]
        reps = (ends - starts + period) // period
        k = int(np.argmax(reps))
        if reps[k] >= MIN_REPEATS and reps[k] * period > cover:
            cover = int(reps[k] * period)
            best = (int(starts[k]), period, int(reps[k]))
    return best


def best_phase(start: int, period: int, reps: int, pairs: Sequence[tuple[int, int]]) -> int:
    """Where a repetition begins within the first period (0..period-1): the shift that cuts fewest of the
    ``pairs`` (edges between positions) between repetitions, the loop's own boundary (an iteration starts
    with the ops that read the loop's inputs and ends with the one that writes its result)."""
    end = start + period * reps
    inside = np.array([(a, b) for a, b in pairs if start <= a < end and start <= b < end], dtype=np.int64)
    if not len(inside):
        return 0
    cost = []
    for shift in range(period):
        blocks = (inside - start - shift) // period
        whole = (inside - start - shift >= 0) & (blocks < reps - (1 if shift else 0))
        own = np.where(whole, blocks, -1 - inside)  # outside a whole block: each its own
        cost.append(int(np.count_nonzero(own[:, 0] != own[:, 1])))
    return int(np.argmin(cost))


def group_children(
    children: Sequence[str], token: Callable[[str], object], pairs: Sequence[tuple[int, int]]
) -> list[list[str]]:
    """The groups of one module's direct ``children`` (in forward order; ``token`` says which are alike,
    ``pairs`` are the edges between them by position): one list of members per repetition of each loop."""
    if len(children) < MIN_CHILDREN:
        return []
    codes: dict[object, int] = {}
    tokens = [codes.setdefault(token(c), len(codes)) for c in children]
    out: list[list[str]] = []
    for start, period, reps in find_periods(tokens):
        shift = best_phase(start, period, reps, pairs)
        first = start + shift
        whole = reps - (1 if shift else 0)
        for r in range(whole):
            out.append(list(children[first + r * period : first + (r + 1) * period]))
    return out
