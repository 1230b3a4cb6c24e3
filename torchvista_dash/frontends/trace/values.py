"""Value summaries (``trace_model(..., values=True)``): a few torch reductions per tensor, in the same pass.

The function mode summarises each op's outputs right after the op runs, before anything can change them in
place (an in-place ReLU writes into its input from inside torch, where the mode does not see it). Per float
tensor: ``aminmax`` (its NaN propagates, so a finite min and max mean there is no NaN or Inf, and the common
case reads no mask), ``mean``, ``dist`` to the mean (the std, in one pass), ``count_nonzero`` and ``take``
at a few fixed positions; a tensor holding NaN or Inf takes a slower path that counts them and summarises
its finite elements. The numbers are read back as Python numbers here and made into ``ValueStats`` after the
pass (``stats_of``). Meta and sparse tensors have no values to read: None.
"""

from __future__ import annotations

import math
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
            nz = torch.count_nonzero(t).item()
            sample = torch.take(t, _positions(n)).tolist()
            return (lo, hi, mean, std, 0, 0, 1.0 - nz / n, sample)
        if dt.is_complex:
            return None
        if dt is torch.bool:
            nz = torch.count_nonzero(t).item()
            sample = [float(v) for v in torch.take(t, _positions(n)).tolist()]
            return (float(nz == n), float(nz > 0), None, None, None, None, 1.0 - nz / n, sample)
        mn, mx = torch.aminmax(t)
        nz = torch.count_nonzero(t).item()
        sample = torch.take(t, _positions(n)).tolist()
        return (mn.item(), mx.item(), None, None, None, None, 1.0 - nz / n, sample)


def _mean_std(t: torch.Tensor, n: int, dt: torch.dtype) -> tuple[float, float]:
    """The mean and (population) std of a finite float tensor.

    A contiguous float32/float64 tensor takes two BLAS dot products (with ones: the sum; with itself: the
    sum of squares), the fastest reductions torch has on the CPU; the variance from them loses precision
    only when the mean dwarfs the spread, and then the two-pass form is taken. Other tensors (strided views,
    half precision: accumulated in float32) take ``mean`` and ``dist`` to it."""
    if dt in _BLAS and t.is_contiguous():
        flat = t.view(-1)
        total = torch.dot(flat, _ones(n, dt)).item()
        squares = torch.dot(flat, flat).item()
        mean = total / n
        var = squares / n - mean * mean
        if var > 1e-4 * mean * mean and math.isfinite(var):
            return mean, math.sqrt(var)
    if dt.itemsize < 4:
        m = t.mean(dtype=torch.float32)
        return m.item(), torch.dist(t, m.to(dt)).item() / math.sqrt(n)
    m = t.mean()
    return m.item(), torch.dist(t, m).item() / math.sqrt(n)


_BLAS = (torch.float32, torch.float64)
_ONES: dict[tuple[int, torch.dtype], torch.Tensor] = {}


def _ones(n: int, dt: torch.dtype) -> torch.Tensor:
    o = _ONES.get((n, dt))
    if o is None:
        if len(_ONES) > 64:  # a few sizes recur in a model; bounded memory beyond that
            _ONES.clear()
        o = _ONES[(n, dt)] = torch.ones(n, dtype=dt)
    return o


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


def summarize_all(out: Any) -> tuple[Raw | None, ...]:
    """``summarize`` of each tensor of an op's output as the mode keeps it: one tensor, or a list of them."""
    if isinstance(out, torch.Tensor):
        return (summarize(out),)
    return tuple(summarize(t) for t in out)


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
