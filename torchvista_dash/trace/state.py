"""Snapshot and restore everything a forward pass may change on a model.

Tracing must leave the model exactly as it was, whatever happens: training flags, parameter objects and
their ``requires_grad``, buffers (a training-mode BatchNorm updates its running stats even under no_grad)
and the module's own hook dictionaries.
"""

from __future__ import annotations

from typing import Any

import torch

_HOOK_DICTS = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks",
               "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks_with_kwargs")


class ModelState:
    """What ``restore()`` puts back: taken before the trace, applied in a ``finally``."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.modules = list(model.modules())
        self.training = [m.training for m in self.modules]
        self.params: list[tuple[torch.nn.Module, str, Any, bool]] = []
        # values are always copied back: kernels such as batch_norm update running stats without bumping
        # the tensor's version counter, so "unchanged" cannot be told cheaply
        self.buffers: list[tuple[torch.nn.Module, str, Any, Any]] = []
        self.hooks: list[tuple[dict[str, Any], str, dict[Any, Any]]] = []    # (module __dict__, attr, copy)
        with torch.no_grad(), torch._C.DisableTorchFunctionSubclass():   # no Parameter.__torch_function__
            for m in self.modules:
                for name, p in m._parameters.items():
                    self.params.append((m, name, p, bool(p is not None and p.requires_grad)))
                for name, b in m._buffers.items():
                    self.buffers.append((m, name, b, None if b is None else b.detach().clone()))
                md = m.__dict__
                for attr in _HOOK_DICTS:
                    d = md.get(attr)
                    if d is not None:
                        self.hooks.append((md, attr, dict(d) if d else {}))

    def restore(self) -> None:
        """Put every snapshotted flag, object and value back (never raises on a well-formed model)."""
        with torch.no_grad(), torch._C.DisableTorchFunctionSubclass():
            for m, flag in zip(self.modules, self.training, strict=True):
                if m.training is not flag:     # nn.Module.__setattr__ is slow; most flags never changed
                    m.training = flag
            for m, name, p, rg in self.params:
                if m._parameters.get(name) is not p:
                    m._parameters[name] = p
                if p is not None and p.requires_grad != rg:
                    p.requires_grad_(rg)
            for m, name, b, saved in self.buffers:
                if m._buffers.get(name) is not b:
                    m._buffers[name] = b
                if b is None or saved is None or b.device.type == "meta":
                    continue
                try:
                    if b.shape == saved.shape and b.dtype == saved.dtype:
                        b.copy_(saved)
                    else:
                        b.data = saved
                except RuntimeError:             # e.g. an inference-mode tensor: put the saved copy in its place
                    m._buffers[name] = saved
            for md, attr, d in self.hooks:
                cur = md.get(attr)
                if cur is not None and (cur or d) and dict(cur) != d:
                    cur.clear()
                    cur.update(d)

