"""Module calls from the module stacks FX records on each node (``meta["nn_module_stack"]``).

A node's stack is ordered outermost first: ``{key: (qualname, class path)}``, one entry per open call, the
key unique per call (torch.export writes a second call of ``l`` as ``L__self__l@1``). Walking the nodes in
order, a call opens when its key first appears under the open calls and closes when a node no longer has it:
the same tree of ``ModuleCall``s the live tracer builds, numbered the same way (``call_id_for``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from torchvista_dash.model.graph import ModuleCall, ParamInfo, call_id_for, numel

# What torch.export writes on a node made outside any module call (a size read at the top)
_EMPTY_STACK_KEY = "_empty_nn_module_stack_from_metadata_hook"
StackEntry = tuple[str, str, str]  # (key, qualname, class path)


def stack_of(meta: Mapping[str, Any]) -> list[StackEntry]:
    """The open calls of an FX node, outermost first, from its ``nn_module_stack`` (empty when it has
    none)."""
    raw = meta.get("nn_module_stack")
    if not isinstance(raw, Mapping):
        return []
    out: list[StackEntry] = []
    for key, value in raw.items():
        if key == _EMPTY_STACK_KEY or not isinstance(value, tuple) or len(value) != 2:
            continue
        qualname, cls = value
        out.append((str(key), str(qualname), cls if isinstance(cls, str) else _class_path(cls)))
    return out


def _class_path(cls: Any) -> str:
    return f"{getattr(cls, '__module__', '')}.{getattr(cls, '__qualname__', type(cls).__name__)}"


@dataclass
class CallTree:
    """The calls opened so far, in call order, and the stack of those still open."""

    root_name: str = ""
    calls: list[tuple[str, str, str, str | None, int, int]] = field(default_factory=list)
    open: list[tuple[str, str]] = field(default_factory=list)  # (stack key, call id)
    counts: dict[str, int] = field(default_factory=dict)
    classes: dict[str, str] = field(default_factory=dict)  # qualname -> class path

    def enter(self, stack: list[StackEntry]) -> str | None:
        """The innermost call a node with ``stack`` runs in (opening and closing calls to match)."""
        keep = 0
        while keep < len(self.open) and keep < len(stack) and self.open[keep][0] == stack[keep][0]:
            keep += 1
        del self.open[keep:]
        for key, qualname, cls in stack[keep:]:
            k = self.counts.get(qualname, 0)
            self.counts[qualname] = k + 1
            cid = call_id_for(qualname, k)
            parent = self.open[-1][1] if self.open else None
            self.calls.append((cid, qualname, cls, parent, k, len(self.open)))
            self.classes.setdefault(qualname, cls)
            self.open.append((key, cid))
        return self.open[-1][1] if self.open else None

    def module_calls(self, params: Mapping[str, ParamInfo], trainable: Iterable[str]) -> list[ModuleCall]:
        """The calls as ModuleCalls; ``params`` maps each parameter's or buffer's qualname to its facts, and
        ``trainable`` names the parameters a module's count includes (each once, as ``named_parameters``)."""
        own: dict[str, list[ParamInfo]] = {}
        for q, info in params.items():
            own.setdefault(q.rpartition(".")[0], []).append(info)
        subtree: dict[str, int] = {}
        for q in trainable:
            n = numel(params[q].shape)
            prefix = q
            while prefix:
                prefix = prefix.rpartition(".")[0]
                subtree[prefix] = subtree.get(prefix, 0) + n
        out = []
        for cid, qualname, cls_path, parent, k, depth in self.calls:
            mine = sorted(own.get(qualname, ()), key=lambda p: p.is_buffer)  # parameters, then buffers
            out.append(
                ModuleCall(
                    id=cid,
                    qualname=qualname,
                    cls=cls_path.rpartition(".")[2] or cls_path,
                    parent=parent,
                    call_index=k,
                    num_params=subtree.get(qualname, 0),
                    params=tuple(mine),
                    depth=depth,
                    builtin=cls_path.startswith("torch.nn."),
                )
            )
        return out
