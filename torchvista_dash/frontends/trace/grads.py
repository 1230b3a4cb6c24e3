"""Gradient flow (``trace_model(..., grads=loss_fn)``): one backward pass after the recorded forward.

The model runs forward once more with autograd on (the recorded pass runs under ``no_grad``), ``loss_fn``
turns its output into a scalar, and ``torch.autograd.grad`` gives each trainable parameter's gradient
without writing any ``.grad``: the model's own gradients are left exactly as they were. The model's state
(buffers, attributes, training flags) is restored after this pass as after the recorded one. What is kept
is each gradient's norm, or None for a parameter the loss does not reach, by every name the parameter has.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from torchvista_dash.frontends.trace.state import ModelState
from torchvista_dash.model.errors import TorchvistaDashError


class GradsError(TorchvistaDashError, ValueError):
    """``grads=`` could not be computed (a loss that is no scalar, a meta-device model)."""


def grad_norms(
    model: torch.nn.Module, args: tuple[Any, ...], kw: dict[str, Any], loss_fn: Callable[[Any], Any]
) -> tuple[tuple[str, float | None], ...]:
    """(parameter name, its gradient's norm or None) for every trainable parameter, in
    ``named_parameters(remove_duplicate=False)`` order (a tied weight under each of its names)."""
    with torch._C.DisableTorchFunctionSubclass():
        named = [(q, p) for q, p in model.named_parameters(remove_duplicate=False) if p.requires_grad]
    unique: dict[int, torch.Tensor] = {}
    for _, p in named:
        unique.setdefault(id(p), p)
    if not unique:
        return ()
    if any(p.device.type == "meta" for p in unique.values()):
        raise GradsError("grads= needs real tensors: a meta-device model has no gradient values")
    state = ModelState(model)
    try:
        with torch.enable_grad():
            loss = loss_fn(model(*args, **kw))
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else ""
                raise GradsError(
                    "grads= must return a scalar tensor (e.g. lambda out: out.logits.sum()), "
                    f"not {type(loss).__name__}{shape}"
                )
            if not loss.requires_grad:
                raise GradsError("grads=: the loss does not depend on any trainable parameter")
            grads = torch.autograd.grad(loss, list(unique.values()), allow_unused=True)
    finally:
        state.restore()
    norms: dict[int, float | None] = {}
    for (pid, _), g in zip(unique.items(), grads, strict=True):
        norms[pid] = None if g is None else _finite(float(torch.linalg.vector_norm(g.detach().float())))
    return tuple((q, norms[id(p)]) for q, p in named)


def _finite(v: float) -> float | None:
    return float(f"{v:.7g}") if math.isfinite(v) else None
