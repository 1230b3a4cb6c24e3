"""What each recorded op costs: FLOPs counted in the recording pass, wall time in a separate timed run.

FLOPs come from PyTorch's own counter: ``torch.utils.flop_counter`` registers a formula per aten op
(``mm``, ``addmm``, ``bmm``, convolutions, attention kernels, ...) and its dispatch mode decides which aten
ops run (it decomposes composite ops the same way ``FlopCounterMode`` does). The recorder sees torch-function
calls (``linear``, ``matmul``); the aten ops run inside them. So the function being recorded runs with that
dispatch mode pushed, and whatever it counts is the op's. Pushing it for every op would send every aten op
through Python (about +25 % on GPT-2 small), so a function is measured the first time it meets
each combination of argument ranks; one that counted FLOPs once is measured always, the others run plainly
when they meet a combination that counted none (``matmul`` of vectors counts none, of matrices it counts).
The formulas read shapes and arguments only, so a counting call whose tensors' shapes and other arguments
were seen before gets the same count without the mode (a stack of identical layers: the first one measured).
What is learnt (which functions count, which rank combinations count none, the count of each call shape) is a
fact about torch's functions, not about one model: it is kept for the process, per device type of the traced
inputs (a kernel chosen on CPU may count differently on the meta device), so tracing again measures nothing
anew (that saves about 7 ms per trace of GPT-2 small or BERT base; bench/bench_trace.py's "first trace"
column pays it). A call with an empty tensor counts none
whatever the function, so it never marks a rank combination as counting none.
Meta tensors work: the formulas read shapes only.

Time is never taken in the recording pass (the recorder's own work would be in it): ``time_ops`` runs the
forward pass again, a few times, under a mode that only times each outermost call (synchronising on CUDA),
and gives each recorded op the median.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils import flop_counter

from torchvista_dash.frontends.trace.describe import IN_PLACE_NONE_RETURN, func_name
from torchvista_dash.model.graph import Node

_Tensor = torch.Tensor


class _Counter:
    """The part of ``FlopCounterMode`` its dispatch mode calls back: the registry and ``_count_flops``.

    Counts into one running total (the recorder reads the difference around each op) instead of per
    module: the recorder already knows which module call each op belongs to.
    """

    def __init__(self) -> None:
        self.flop_registry = dict(flop_counter.flop_registry)
        self.total = 0

    def _count_flops(self, func_packet: Any, out: Any, args: Any, kwargs: Any) -> Any:
        formula = self.flop_registry.get(func_packet)
        if formula is not None:
            self.total += int(formula(*args, **kwargs, out_val=out))
        return out


def _dispatch_mode(counter: _Counter) -> Any:
    """FlopCounterMode's own dispatch mode (same decompositions, same formulas) around our counter."""
    mode_cls = getattr(flop_counter, "_FlopCounterMode", None)
    if mode_cls is None:  # pragma: no cover - torch < 2.4 kept the dispatch logic on FlopCounterMode itself
        raise RuntimeError(
            "this torch has no torch.utils.flop_counter._FlopCounterMode; trace with flops=False "
            "or use torch >= 2.4"
        )
    return mode_cls(counter)


class _Learned:
    """What measuring taught about torch's functions on one device type (shared by every trace in the
    process)."""

    def __init__(self) -> None:
        self.counting: set[Any] = set()  # functions that counted FLOPs once: always measured
        self.none: set[tuple[Any, ...]] = set()  # (function, ranks of its tensor arguments) that counted none
        self.known: dict[tuple[Any, ...], int] = {}  # (function, argument shapes and values) -> its FLOPs
        # functions that counted none and returned a shape, a number or a bool (``size``, ``dim``, ``shape``):
        # no node carries what they count, so they are never measured again
        self.scalar: set[Any] = set()


_LEARNED: dict[str, _Learned] = {}
_BOUND = 100_000  # entries kept in ``none`` and ``known`` (then they start again)


class FlopMeter:
    """Runs one torch function and says how many FLOPs its aten ops did (``last``).

    ``device`` names the device type(s) of the traced inputs: what was learnt on one is not used on another.
    """

    def __init__(self, device: str = "cpu") -> None:
        self.counter = _Counter()
        self.mode = _dispatch_mode(self.counter)
        learned = _LEARNED.get(device)
        if learned is None:
            learned = _LEARNED[device] = _Learned()
        self.counting = learned.counting
        self.none = learned.none
        self.known = learned.known
        self.scalar = learned.scalar
        self.last = 0  # the FLOPs of the last call ``run`` made (the recorder gives them to its node)

    def run(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        key: tuple[Any, ...] | None = None
        exact: tuple[Any, ...] | None = None
        known = False  # what it counts is known: it runs plainly (outside the try: a TypeError it raises is
        try:  # the model's, and must not run it a second time under the counter)
            if func in self.counting:
                # the formulas read shapes and arguments only: the same call shape counts the same, so it is
                # counted once (12 identical decoder layers: the first one measured)
                exact = _call_key(func, args, kwargs)
                if exact is not None and exact in self.known:
                    self.last = self.known[exact]
                    known = True
            elif func in self.scalar:
                self.last = 0
                known = True
            else:
                # ``func`` and the ranks of its first tensor arguments (-1: a parameter or other subclass,
                # whose ``dim()`` could run a Python ``__torch_function__``): ``matmul`` of two vectors counts
                # none, of two matrices it counts. Written out here: it runs for every op not known to count.
                ranks = [func]
                for a in args[:3]:
                    if type(a) is _Tensor:
                        ranks.append(a.dim())
                    elif isinstance(a, _Tensor):
                        ranks.append(-1)
                key = tuple(ranks)
                if key in self.none:
                    self.last = 0
                    known = True
        except TypeError:  # an unhashable callable or argument: measure it every time
            key = exact = None
        if known:
            return func(*args, **kwargs)
        c = self.counter
        before = c.total
        out: Any = None
        try:
            with self.mode:
                out = func(*args, **kwargs)
        finally:
            self.last = c.total - before
            if key is not None:
                if self.last > 0:
                    self.counting.add(func)
                elif type(out) in _SCALAR_OUT:
                    self.scalar.add(func)
                elif not _has_empty(args):
                    if len(self.none) >= _BOUND:
                        self.none.clear()
                    self.none.add(key)
            if exact is not None:
                if len(self.known) >= _BOUND:
                    self.known.clear()
                self.known[exact] = self.last
        return out

    def count(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        """The FLOPs of ``func(*args, **kwargs)``, for a source that only needs the number (a saved program's
        ops on meta tensors): a call whose count is already known is not run at all."""
        try:
            exact = _call_key(func, args, kwargs)
            if exact is not None and exact in self.known:
                return self.known[exact]
            if func in self.scalar:
                return 0
            if func not in self.counting:
                ranks = (func, *(a.dim() for a in args[:3] if type(a) is _Tensor))
                if ranks in self.none:
                    return 0
        except TypeError:  # unhashable: measured
            pass
        self.run(func, args, kwargs)
        return self.last


def _has_empty(args: tuple[Any, ...]) -> bool:
    """Does a tensor argument hold no element (a batch of 0: any function counts none on it)?"""
    with torch._C.DisableTorchFunctionSubclass():
        return any(a.numel() == 0 for a in args if isinstance(a, _Tensor)) or any(
            isinstance(x, _Tensor) and x.numel() == 0 for a in args if isinstance(a, (list, tuple)) for x in a
        )


_PLAIN = (int, float, bool, str, type(None), torch.dtype, torch.device, torch.memory_format, torch.layout)
_PLAIN_TYPES = frozenset(_PLAIN)  # exactly these types (a subclass goes the long way, through isinstance)
_SCALAR_OUT = frozenset({torch.Size, int, float, bool})
# Tensor types whose .shape/.dtype/.device run no Python ``__torch_function__`` (Parameter's is torch's
# disabled one)
_DIRECT = frozenset({_Tensor, torch.nn.Parameter})


def _call_key(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """What a FLOP formula can depend on: each tensor's shape, dtype and device, every other argument's value;
    None when an argument is neither (then the call is measured)."""
    if not kwargs:  # the common case (addmm(bias, x, w)): the same key as ``_key_parts``, in one loop
        parts: list[Any] = [func]
        for a in args:
            t = type(a)
            if t in _DIRECT:
                parts.append((a.shape, a.dtype, a.device))
            elif t in _PLAIN_TYPES:
                parts.append(a)
            else:
                break
        else:
            return tuple(parts)
    key = _key_parts(func, args, kwargs)
    if key is _SUBCLASS:  # a tensor subclass with its own __torch_function__: read with it off
        with torch._C.DisableTorchFunctionSubclass():
            key = _key_parts(func, args, kwargs, True)
    return key


def _key_parts(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], any_type: bool = False) -> Any:
    parts: list[Any] = [func]
    for a in args:
        p = _key_part(a, any_type)
        if p is _NO_KEY or p is _SUBCLASS:
            return None if p is _NO_KEY else p
        parts.append(p)
    for k in sorted(kwargs):
        p = _key_part(kwargs[k], any_type)
        if p is _NO_KEY or p is _SUBCLASS:
            return None if p is _NO_KEY else p
        parts.append((k, p))
    return tuple(parts)


_NO_KEY = object()
_SUBCLASS = object()


def _key_part(a: Any, any_type: bool = False) -> Any:
    if isinstance(a, _Tensor):
        if not any_type and type(a) not in _DIRECT:
            return _SUBCLASS
        return (a.shape, a.dtype, a.device)  # a torch.Size hashes and compares as its tuple
    if isinstance(a, _PLAIN):
        return a
    if isinstance(a, (tuple, list)) and len(a) <= 16:
        parts = tuple(_key_part(x, any_type) for x in a)
        if any(p is _SUBCLASS for p in parts):
            return _SUBCLASS
        return _NO_KEY if any(p is _NO_KEY for p in parts) else (type(a).__name__, parts)
    return _NO_KEY


# ---- timing: a separate run
# ---------------------------------------------------------------------------------
def _records(func: Any, args: tuple[Any, ...], out: Any) -> bool:
    """Would the recorder make a node of this call? (The same test as ``RecordingMode``.)"""
    if isinstance(out, _Tensor):
        return True
    if out is None:
        return bool(args) and isinstance(args[0], _Tensor) and func_name(func) in IN_PLACE_NONE_RETURN
    if isinstance(out, (list, tuple)):
        return _has_tensor(out)
    return False


def _has_tensor(obj: Any) -> bool:
    if isinstance(obj, _Tensor):
        return True
    return isinstance(obj, (list, tuple)) and any(_has_tensor(x) for x in obj)


class _TimingMode(TorchFunctionMode):
    """Times every outermost torch call the recorder would record: (name, seconds) in call order."""

    def __init__(self, sync: bool) -> None:
        super().__init__()
        self.sync = sync
        self.times: list[tuple[str, float]] = []

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        sync = self.sync
        if sync:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = func(*args, **kwargs)
        if sync:
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        if _records(func, args, out):
            self.times.append((func_name(func), dt))
        return out


def time_ops(
    model: torch.nn.Module, args: tuple[Any, ...], kw: dict[str, Any], nodes: list[Node], repeat: int = 5
) -> str | None:
    """Give each recorded op node (in ``nodes``, replaced in place) its median time over ``repeat`` runs.

    Returns None, or why no time was given: the timed runs must make the same ops as the recorded one (a
    model whose ops depend on randomness or on state cannot be matched op for op, and gets no times).
    """
    if repeat < 1:
        raise ValueError(f"timing needs at least one repeat, got {repeat}")
    sync = torch.cuda.is_available() and any(_on_cuda(a) for a in (*args, *kw.values()))
    runs: list[list[float]] = []
    matched: list[int] = []
    with torch.no_grad():
        model(*args, **kw)  # warm-up: first-call costs (allocator, lazy init) are not the op's
        for _ in range(repeat):
            mode = _TimingMode(sync)
            with mode:
                model(*args, **kw)
            matched = _match(nodes, [name for name, _ in mode.times])
            if len(matched) != len(mode.times):
                return (
                    f"the timed run made {len(mode.times)} ops that do not match the recorded ones "
                    "one for one: "
                    "the forward pass is not repeatable, so no op times were recorded"
                )
            runs.append([dt for _, dt in mode.times])
    for k, i in enumerate(matched):
        ms = statistics.median(r[k] for r in runs) * 1000.0
        nodes[i] = dataclasses.replace(nodes[i], time_ms=round(ms, 4))
    return None


def _match(nodes: list[Node], names: list[str]) -> list[int]:
    """Indices of the recorded op nodes the timed calls ``names`` belong to, in order; shorter on a mismatch.

    The recorder's ``identity`` nodes (a module that ran no op) have no call in the timed run: skipped.
    """
    out: list[int] = []
    k = 0
    for i, n in enumerate(nodes):
        if n.kind != "op":
            continue
        if k < len(names) and n.name == names[k]:
            out.append(i)
            k += 1
        elif n.name != "identity":
            return out[:0]
    return out if k == len(names) else out[:0]


def _on_cuda(a: Any) -> bool:
    return isinstance(a, _Tensor) and a.is_cuda
