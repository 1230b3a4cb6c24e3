"""Property: whatever a trace file holds, load → view → layout → figure either works or raises
``TraceFormatError``; never another exception, never a hang (issue 10).

Our own mutator (no extra dependency), seeded so every run tries the same cases: it parses a valid trace,
changes it the way a careless tool or an attacker would (a value swapped for a hostile one, a reference
pointed at another record, a key deleted, a record duplicated, records reordered, a call re-parented with
its depth made consistent so it gets past the loader, the text cut or spliced with tokens JSON parsers choke
on) and sends the result through the whole pipeline with the real ``dot``. Each case
runs under a SIGALRM deadline. The suite runs a few seconds' worth of cases; ``TVD_FUZZ_CASES=5000``
(and ``TVD_FUZZ_SEED``) run a longer search.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from support_graphs import failed_graph, nested_graph, parallel_graph, stack_graph, twice_graph

from torchvista_dash import Trace
from torchvista_dash.model.graph import Graph, TraceFormatError

CASE_SECONDS = 20.0  # per case: far above a normal case (~0.1 s), far below a hang
SUITE_SECONDS = 4.0  # the default run's budget (cases stop being started after it)
CASES = int(os.environ.get("TVD_FUZZ_CASES", "0")) or None
SEED = int(os.environ.get("TVD_FUZZ_SEED", "10"))

BASES: dict[str, Callable[[], Graph]] = {
    "stack": lambda: stack_graph(4),
    "nested": lambda: nested_graph(2, 2),
    "failed": failed_graph,
    "twice": twice_graph,
    "parallel": parallel_graph,
}
HOSTILE: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2,
    10**9,
    2**63 - 1,
    2**63,
    2**64,
    1.5,
    1e300,
    -0.0,
    "",
    "x" * 12_000,
    "\x00",
    "a\x1b[31m\nb",
    "n:0",
    "mod:(root)",
    "input",
    "op",
    "output",
    [],
    {},
    [[]],
    [None],
    [1, 2],
    ["a", "b"],
    {"shape": [1], "dtype": "f", "device": "c", "nbytes": 1},
    [["k", "v"]],
    {"torch": "2"},
]
RAW_TOKENS = [
    "Infinity",
    "-Infinity",
    "NaN",
    "1e400",
    "9" * 5000,
    '"\\ud800"',
    "[" * 5000 + "]" * 5000,
    '"\\u0000"',
    "{}",
    "[]",
    "null",
    '"' + "y" * 20_000 + '"',
]


SCALAR = re.compile(r'(": )(-?\d+|null|true|false|"(?:[^"\\]|\\.)*")')


class CaseHung(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise CaseHung


def _paths(obj: Any, path: tuple = ()) -> Iterator[tuple]:
    """Every location in a JSON document (dict keys and list indices), the root excluded."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield path + (k,)
            yield from _paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield path + (i,)
            yield from _paths(v, path + (i,))


def _get(obj: Any, path: tuple) -> Any:
    for k in path:
        obj = obj[k]
    return obj


def _ids(data: dict) -> list[str]:
    out = []
    for key, field in (("nodes", "id"), ("module_calls", "id")):
        out += [r[field] for r in _records(data, key) if isinstance(r.get(field), str)]
    return out or ["n:0"]


def _records(data: dict, key: str) -> list[dict]:
    items = data.get(key)
    return [r for r in items if isinstance(r, dict)] if isinstance(items, list) else []


def _structural(rng: random.Random, data: dict) -> None:
    """A change that keeps every field's type: what gets past the field checks to view and layout."""
    calls, nodes, edges = (_records(data, k) for k in ("module_calls", "nodes", "edges"))
    call_ids = [c.get("id") for c in calls] + [None]
    node_ids = [n.get("id") for n in nodes] or ["n:0"]
    op = rng.randrange(7)
    if op == 0 and calls:
        rng.choice(calls)["parent"] = rng.choice(call_ids)  # re-parented (or made top-level) call
    elif op == 1 and nodes:
        rng.choice(nodes)["parent"] = rng.choice(call_ids)
    elif op == 2 and edges:
        rng.choice(edges)[rng.choice(["src", "dst"])] = rng.choice(node_ids)  # loops, back edges, into inputs
    elif op == 3 and nodes:
        rng.choice(nodes)["kind"] = rng.choice(["input", "output", "op", "constant", "parameter"])
    elif op == 4:
        for key in ("nodes", "module_calls", "edges"):
            if isinstance(data.get(key), list):
                rng.shuffle(data[key])
    elif op == 5 and edges:
        e = rng.choice(edges)
        e["tensor"] = rng.choice(edges).get("tensor")  # two tensors merged into one name
    elif op == 6 and isinstance(data.get("error"), dict):
        data["error"]["node"] = rng.choice(node_ids + [None])
    elif calls:
        rng.choice(calls)["call_index"] = rng.randrange(4)


def _fix_depths(data: dict) -> None:
    """Recompute each call's depth from its parent chain (where the chain is sound), so a re-parented call
    reaches the view instead of being rejected for its stale depth."""
    calls = {c.get("id"): c for c in _records(data, "module_calls") if isinstance(c.get("id"), str)}
    for c in calls.values():
        d, cur, seen = 0, c.get("parent"), set()
        while isinstance(cur, str) and cur in calls and cur not in seen:
            seen.add(cur)
            d, cur = d + 1, calls[cur].get("parent")
        c["depth"] = d


def mutate(rng: random.Random, text: str) -> str:
    """One to three mutations of a valid trace's JSON text (see the module docstring)."""
    data = json.loads(text)
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.5:
            _structural(rng, data)
            continue
        paths = list(_paths(data))
        if not paths:
            break
        path = rng.choice(paths)
        parent, key = _get(data, path[:-1]), path[-1]
        op = rng.random()
        if op < 0.35:  # point a field at another record's id
            parent[key] = rng.choice(_ids(data))
        elif op < 0.65:
            parent[key] = copy.deepcopy(rng.choice(HOSTILE))
        elif op < 0.75:
            del parent[key]
        elif op < 0.85 and isinstance(parent, list):  # a duplicated record: duplicate ids, repeated edges
            parent.insert(rng.randrange(len(parent) + 1), copy.deepcopy(parent[key]))
        elif isinstance(parent[key], int) and not isinstance(parent[key], bool):
            parent[key] = parent[key] + rng.choice([-1, 1, 7, 10**6])
        else:
            parent[key] = copy.deepcopy(rng.choice(HOSTILE))
    if rng.random() < 0.7:
        _fix_depths(data)
    out = json.dumps(data)
    r = rng.random()
    if r < 0.1:  # cut short
        out = out[: rng.randrange(len(out))]
    elif r < 0.3:  # a raw token where a scalar value was
        spots = list(SCALAR.finditer(out))
        if spots:
            m = rng.choice(spots)
            out = out[: m.start(2)] + rng.choice(RAW_TOKENS) + out[m.end(2) :]
    return out


def run_pipeline(text: str, rng: random.Random) -> str:
    """'rejected' or 'drawn'; anything else escapes as the exception it is."""
    try:
        graph = Graph.from_json(text)
    except TraceFormatError as exc:
        assert str(exc)  # a message, not an empty error
        return "rejected"
    trace = Trace(graph)
    assert len(trace.id) == 16
    options = {"fold_repeats": rng.random() < 0.7, "show_params": rng.random() < 0.3}
    for depth in (1, None):
        fig = trace.figure(depth=depth, **options)
        assert fig.data is not None
    return "drawn"


def _cases() -> Iterator[tuple[int, str, str]]:
    rng = random.Random(SEED)
    bases = {name: build().to_json() for name, build in BASES.items()}
    i = 0
    while True:
        name = rng.choice(sorted(bases))
        yield i, name, mutate(rng, bases[name])
        i += 1


def test_mutated_traces_load_and_draw_or_are_trace_format_errors() -> None:
    rng = random.Random(SEED + 1)
    outcomes = {"rejected": 0, "drawn": 0}
    start = time.monotonic()
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for i, base, text in _cases():
            if CASES is None and time.monotonic() - start > SUITE_SECONDS or CASES is not None and i >= CASES:
                break
            signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
            try:
                outcomes[run_pipeline(text, rng)] += 1
            except CaseHung:
                pytest.fail(
                    f"case {i} (seed {SEED}, base {base!r}) ran over {CASE_SECONDS} s:\n{text[:3000]}"
                )
            except Exception as exc:  # noqa: BLE001 - the property under test: nothing else may escape
                pytest.fail(
                    f"case {i} (seed {SEED}, base {base!r}) raised {type(exc).__name__}: {exc}\n{text[:3000]}"
                )
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, old)
    # both outcomes must occur, or the mutator is not exercising what it claims to
    assert outcomes["rejected"] >= 5 and outcomes["drawn"] >= 2, outcomes


def test_the_alarm_stops_a_hanging_case() -> None:
    """The per-case deadline itself works (a pure-Python loop, like the parent cycle that hung ``view``)."""
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(CaseHung):
            while True:
                pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_the_deepest_nesting_the_loader_accepts_still_draws() -> None:
    """MAX_CALL_DEPTH is where loading stops; everything up to it must lay out (pydot recurses per
    cluster)."""
    from support_graphs import GraphBuilder

    from torchvista_dash.model.checks import MAX_CALL_DEPTH

    b = GraphBuilder()
    x = b.input("x", (2, 4))
    parent, qualname = b.root, ""
    for i in range(MAX_CALL_DEPTH):
        qualname = f"{qualname}.m{i}" if qualname else f"m{i}"
        parent = b.call(qualname, "Wrap", parent)
    b.output(b.op("relu", parent, (x,), (2, 4)))
    graph = Graph.from_json(b.build().to_json())
    assert max(c.depth for c in graph.module_calls) == MAX_CALL_DEPTH
    fig = Trace(graph).figure(depth=None)
    assert len([t for t in fig.data if t.name == "clusters:headers"][0].x) == MAX_CALL_DEPTH + 1
