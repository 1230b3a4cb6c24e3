"""The function mode that sees every torch call of the forward pass and queues it for the recorder.

While an op runs, only what cannot wait is read: the FLOPs (around the call), the calling frame (frames move
on) and a snapshot of list arguments (they may change). The op itself, with its arguments and outputs, is
queued; ``Recorder.flush`` records the queue in order, in one tight loop: between two ops of a big model the
kernels have left the caches cold, so the recorder's work costs several times less there than here.
Queued ops hold their tensors, so the queue is flushed every ``MAX_EVENTS`` events or ``MAX_HELD`` bytes of
outputs, and before any call that could change a queued tensor's shape or storage (an in-place op, an
``out=`` call, a property setter such as ``.data =``): the metadata read at the flush is the op's own.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import torch
from torch.overrides import TorchFunctionMode

from torchvista_dash.frontends.trace.argnames import entry as arg_entry
from torchvista_dash.frontends.trace.describe import IN_PLACE_NONE_RETURN, func_name
from torchvista_dash.frontends.trace.structure import flat_tensors

if TYPE_CHECKING:  # pragma: no cover - typing only
    from torchvista_dash.frontends.trace.recorder import Recorder

_Tensor = torch.Tensor
_Size = torch.Size
_SEQS = (list, tuple)
_NO_KWARGS: dict[str, Any] = {}  # shared, never written: most calls have no keyword arguments
_getframe = sys._getframe
MAX_EVENTS = 256  # queued events (ops, module calls' ends and starts, sizes) before a flush
MAX_HELD = 32 << 20  # bytes of queued op outputs before a flush
# func -> (name, writes into its first argument by its name (add_, __iadd__), returns None after writing into
# it (__setitem__), its parameter names (argnames), may change a tensor's shape or storage in place so the
# queue is flushed first): found once per function, one lookup per call
_INFO: dict[Any, tuple[str, bool, bool, Any, bool]] = {}


def func_info(func: Any, keep: bool = True) -> tuple[str, bool, bool, Any, bool]:
    name = func_name(func)
    raw = getattr(func, "__name__", None) or ""
    in_place = (name[-1:] == "_" and name[:1] != "_") or name.startswith("__i")
    info = (
        name,
        in_place,
        name in IN_PLACE_NONE_RETURN,
        arg_entry(func),
        in_place or raw.startswith("__set") or raw == "__delete__",
    )
    if keep:
        try:
            _INFO[func] = info
        except TypeError:  # an unhashable callable
            pass
    return info


class RecordingMode(TorchFunctionMode):
    """Sends every torch function, Tensor method and operator call to the recorder (outermost call only)."""

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self.rec = recorder

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        # While this runs, torch has popped the mode: torch calls made inside ``func`` (F.gelu calling
        # torch's gelu, Tensor.split calling narrow) do not come back here, so only the outermost is recorded.
        if kwargs is None:
            kwargs = _NO_KWARGS
        rec = self.rec
        try:
            info = _INFO[func]
        except (KeyError, TypeError):
            info = func_info(func)
        if (info[4] or (kwargs and "out" in kwargs)) and rec.queue:
            rec.flush()  # it may change a queued tensor: record the queue as it stands
        if rec.summarize is not None and (info[4] or (kwargs and ("out" in kwargs or kwargs.get("inplace")))):
            rec.summarize.forget()  # what it writes into may be viewed by a tensor already summarised
        meter = rec.meter
        flops = 0
        try:
            if meter is None:
                out = func(*args, **kwargs)
            else:
                out = meter.run(func, args, kwargs)
                flops = meter.last  # given to the op's node (an op recorded with no node: counted nowhere)
        except Exception as exc:
            args, kwargs = _snapshot(args, kwargs)
            rec.queue.append((0, func, args, kwargs, None, exc, 0, rec.source(_getframe(1)), info, None))
            rec.flush()
            raise
        if isinstance(out, _Tensor):
            kept = out
            try:
                held = out.nbytes
            except (RuntimeError, NotImplementedError):  # a tensor without plain storage (sparse, nested)
                held = 0
        elif out is None:
            if not (info[2] and args and isinstance(args[0], _Tensor)):
                return out
            kept, held = None, 0
        elif type(out) is _Size:
            rec.queue.append((3, args, out))
            return out
        elif isinstance(out, _SEQS):
            kept = flat_tensors(out)  # what the recorder needs of it, as it is now
            if not kept:
                return out
            held = sum(t.nbytes for t in kept if t.layout is torch.strided)
        else:
            return out
        queue = rec.queue
        if list in map(type, args) or (kwargs and list in map(type, kwargs.values())):
            args, kwargs = _snapshot(args, kwargs)
        # values=True: the outputs' values now, before a later op can write into them (values.py)
        summary = None
        if rec.summarize is not None:
            if kept is None:  # written in place (``__setitem__``): its values now
                summary = rec.summarize(args[0])
            else:
                summary = rec.summarize(
                    kept, info[0], args[0] if args and isinstance(args[0], _Tensor) else None
                )
        queue.append((0, func, args, kwargs, kept, None, flops, rec.source(_getframe(1)), info, summary))
        rec.held += held
        if rec.held > MAX_HELD or len(queue) >= MAX_EVENTS:
            rec.flush()
        return out


def _snapshot(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments with each list copied: the model may change a list it passed after the call."""
    args = tuple(list(a) if type(a) is list else a for a in args)
    if kwargs:
        kwargs = {k: list(v) if type(v) is list else v for k, v in kwargs.items()}
    return args, kwargs
