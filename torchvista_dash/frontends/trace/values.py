"""Value summaries (``trace_model(..., values=True)``): a few torch reductions per tensor, in the same pass.

The function mode summarises each op's outputs right after the op runs, before anything can change them in
place (an in-place ReLU writes into its input from inside torch, where the mode does not see it). Per float
tensor: ``aminmax`` (its NaN propagates, so a finite min and max mean there is no NaN or Inf, and the common
case reads no mask), ``sum`` and ``vector_norm`` (the mean and the std), the nonzero count (skipped when the
range excludes 0) and ``take`` at a few fixed positions; a tensor holding NaN or Inf takes a slower path
that counts them and summarises its finite elements. The numbers are read back as Python numbers here and
made into ``ValueStats`` after the pass (``stats_of``). Meta and sparse tensors have no values to read.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import torch

from torchvista_dash.model.values import ValueStats, kept, sample_positions

Raw = tuple[Any, ...]  # (min, max, mean, std, nan, inf, zeros, sample)
_POSITIONS: dict[int, torch.Tensor] = {}  # numel -> the sample's flat positions (shared by every trace)
_strided = torch.strided
_isfinite = math.isfinite


def _positions(n: int) -> torch.Tensor:
    p = _POSITIONS.get(n)
    if p is None:
        if len(_POSITIONS) > 10_000:
            _POSITIONS.clear()
        p = _POSITIONS[n] = torch.tensor(sample_positions(n), dtype=torch.long)
    return p


def summarize(t: torch.Tensor) -> Raw | None:
    """The raw summary of ``t``'s values now (None: there are none to read)."""
    if t.layout is not _strided or t.device.type == "meta":
        return None
    n = t.numel()
    if n == 0:
        return (None, None, None, None, 0, 0, None, [])
    dt = t.dtype
    with torch._C.DisableTorchFunction():
        if dt.is_floating_point:
            mn, mx = torch.aminmax(t)
            lo, hi = mn.item(), mx.item()
            if not (_isfinite(lo) and _isfinite(hi)):
                return _nonfinite(t, n)
            mean, std = _mean_std(t, n, dt)
            nz = _nonzeros(t, lo, hi)
            sample = torch.take(t, _positions(n)).tolist()
            return (lo, hi, mean, std, 0, 0, 1.0 - nz / n, sample)
        if dt.is_complex:
            return None
        if dt is torch.bool:
            nz = torch.count_nonzero(t).item()
            sample = [float(v) for v in torch.take(t, _positions(n)).tolist()]
            return (float(nz == n), float(nz > 0), None, None, None, None, 1.0 - nz / n, sample)
        mn, mx = torch.aminmax(t)
        lo, hi = mn.item(), mx.item()
        nz = _nonzeros(t, lo, hi)
        sample = torch.take(t, _positions(n)).tolist()
        return (lo, hi, None, None, None, None, 1.0 - nz / n, sample)


def _mean_std(t: torch.Tensor, n: int, dt: torch.dtype) -> tuple[float, float]:
    """The mean and (population) std of a finite float tensor.

    From ``sum`` and ``vector_norm`` (the sum of squares), the two cheapest full reductions torch has on the
    CPU (``bench/bench_trace.py``; ``std_mean``'s Welford pass costs several times more, and BLAS ``dot``
    stalls when its threads wait for a busy core); half precision accumulates in float32. The variance from
    them loses precision only when the mean dwarfs the spread, and then the two-pass ``dist`` to the mean is
    taken."""
    acc = torch.float32 if dt.itemsize < 4 else dt
    mean = t.sum(dtype=acc).item() / n
    squares = torch.linalg.vector_norm(t, dtype=acc).item() ** 2
    var = squares / n - mean * mean
    if var > 1e-4 * mean * mean and math.isfinite(var):
        return mean, math.sqrt(var)
    m = torch.tensor(mean, dtype=dt)
    return mean, torch.dist(t, m).item() / math.sqrt(n)


def _nonzeros(t: torch.Tensor, lo: float, hi: float) -> int:
    """How many elements are not zero: all of them when the range excludes 0 (no pass); else counted by
    ``bool().sum()``, cheaper than ``count_nonzero`` on the CPU."""
    if lo > 0 or hi < 0:
        return t.numel()
    return int(t.bool().sum().item())


def _nonfinite(t: torch.Tensor, n: int) -> Raw:
    """A float tensor holding NaN or Inf: their counts, and the summary of its finite elements."""
    finite = torch.isfinite(t)
    n_finite = int(finite.sum().item())
    nan = int(torch.isnan(t).sum().item())
    nz = torch.count_nonzero(t).item()  # NaN and Inf are not zero
    sample = torch.take(t, _positions(n)).tolist()
    if not n_finite:
        return (None, None, None, None, nan, n - nan, 1.0 - nz / n, sample)
    f = t[finite].float()
    lo, hi = torch.aminmax(f)
    mean = f.mean()
    std = torch.dist(f, mean).item() / math.sqrt(n_finite)
    return (lo.item(), hi.item(), mean.item(), std, nan, n - n_finite - nan, 1.0 - nz / n, sample)


# ops whose output holds exactly their input's elements: in the same flattened order (the whole summary is the
# input's), or rearranged (the same statistics; the sample is read again at the output's positions)
SAME_ORDER = frozenset(
    {"view", "reshape", "flatten", "unflatten", "contiguous", "unsqueeze", "squeeze", "detach", "clone"}
    | {"view_as", "reshape_as"}
)
REORDERED = frozenset({"transpose", "permute", "t", "swapaxes", "swapdims", "movedim"})
# ops that may hand their input back unchanged (a dropout in eval mode): reused only when they do
HANDED_BACK = frozenset({"dropout", "alpha_dropout", "feature_alpha_dropout", "to", "type", "float"})


class Summarizer:
    """The summaries of one pass, remembered per tensor: an op that only rearranges its input's elements
    (``view``, ``transpose``, a ``dropout`` in eval mode handing its input back) reuses its input's instead of
    reading every element again (in GPT-2 small such ops make 40 % of the activations' elements)."""

    def __init__(self, weights: dict[int, str] | None = None) -> None:
        self.known: dict[int, tuple[Any, Raw]] = {}  # id(tensor) -> (weak reference, its raw summary)
        # id -> name of the model's parameters and buffers: an op handing one back (``w.to(w.dtype)``) is not
        # summarised (weights are not activations, and an embedding table is millions of elements)
        self.weights = weights or {}

    def __call__(self, out: Any, name: str | None = None, first: Any = None) -> tuple[Raw | None, ...]:
        """The raw summary of each tensor of an op's output (one tensor, or a list of them); ``name`` and
        ``first`` (the op's name and first argument) let a rearranging op reuse its input's."""
        if isinstance(out, torch.Tensor):
            return (self.one(out, name, first),)
        return tuple(self.one(t) for t in out)

    def one(self, t: torch.Tensor, name: str | None = None, first: Any = None) -> Raw | None:
        if id(t) in self.weights:
            return None
        raw = None
        if first is not None and (
            name in SAME_ORDER or name in REORDERED or (t is first and name in HANDED_BACK)
        ):
            k = self.known.get(id(first))
            if k is not None and k[0]() is first and t.numel() == first.numel() and t.dtype == first.dtype:
                raw = k[1]
                if name in REORDERED and raw[7]:
                    raw = (*raw[:7], _safe_sample(t))
        if raw is None:
            raw = _safe(t)
        if raw is not None:
            self.known[id(t)] = (_ref(t), raw)
        return raw

    def forget(self) -> None:
        """An op writes in place: any remembered tensor may share its storage, so none is reused."""
        self.known.clear()


_ref = weakref.ref


def _safe_sample(t: torch.Tensor) -> list[Any]:
    try:
        with torch._C.DisableTorchFunction():
            return torch.take(t, _positions(t.numel())).tolist()
    except Exception:
        return []


def _safe(t: torch.Tensor) -> Raw | None:
    """``summarize``, or None for a tensor whose values cannot be read (a fake or functional tensor, a
    subclass that refuses reductions): summarising never breaks the model's forward pass."""
    try:
        return summarize(t)
    except Exception:
        return None


def stats_of(raw: Raw | None) -> ValueStats | None:
    """The ValueStats of a raw summary, its numbers kept to the saved precision."""
    if raw is None:
        return None
    lo, hi, mean, std, nan, inf, zeros, sample = raw
    return ValueStats(
        min=kept(lo),
        max=kept(hi),
        mean=kept(mean),
        std=kept(std),
        nan=nan,
        inf=inf,
        zeros=kept(zeros),
        sample=tuple(kept(float(v)) for v in sample),
    )
