"""The torch call that rejected its arguments before dispatch (``conv2d`` given a list).

torch checks a call's arguments against its signatures before it looks for ``__torch_function__``
handlers, so such a call never reaches the recorder's function mode. It is found afterwards from the
exception's innermost frame: the failing instruction's source position gives the call expression, whose
callee must resolve to a torch function or a ``Tensor`` method; its arguments are read from the frame's
variables (names and literals only: nothing is evaluated, so no user code runs again).
"""

from __future__ import annotations

import ast
import builtins
import linecache
import types
from typing import Any

import torch

_MISSING = object()


class RejectedCall:
    """The failing call as the recorder records ops: a callable's ``__name__`` plus its arguments."""

    def __init__(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], frame: types.FrameType
    ) -> None:
        self.__name__ = name
        self.args = args
        self.kwargs = kwargs
        self.frame = frame


def rejected_call(error: BaseException) -> RejectedCall | None:
    """The torch call that raised ``error`` (a TypeError from torch's argument parser), or None."""
    if not isinstance(error, TypeError) or error.__traceback__ is None:
        return None
    tb = error.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    frame = tb.tb_frame
    call = _call_at(frame.f_code, tb.tb_lasti)
    if call is None:
        return None
    scope = _Scope(frame)
    name, self_arg = _callee(call.func, scope)
    if name is None:
        return None
    args = [self_arg] if self_arg is not _MISSING else []
    for a in call.args:
        if isinstance(a, ast.Starred):
            return None  # *args: the positions are unknown
        args.append(scope.value(a))
    kwargs = {k.arg: scope.value(k.value) for k in call.keywords if k.arg is not None}
    return RejectedCall(name, tuple(args), kwargs, frame)


def _call_at(code: types.CodeType, lasti: int) -> ast.Call | None:
    """The call expression whose instruction is at ``lasti`` in ``code`` (Python 3.11+ keeps columns)."""
    positions = getattr(code, "co_positions", None)
    if positions is None or lasti < 0:
        return None
    try:
        line, end_line, col, end_col = list(positions())[lasti // 2]
    except IndexError:
        return None
    if line is None or end_line is None or col is None or end_col is None or end_line - line > 50:
        return None
    lines = [ln.encode() for ln in linecache.getlines(code.co_filename)[line - 1 : end_line]]
    if len(lines) != end_line - line + 1:
        return None
    if len(lines) == 1:
        text = lines[0][col:end_col]
    else:
        text = lines[0][col:] + b"".join(lines[1:-1]) + lines[-1][:end_col]
    try:
        tree = ast.parse(b"(" + text + b")", mode="eval")
    except (SyntaxError, ValueError):
        return None
    return tree.body if isinstance(tree.body, ast.Call) else None


class _Scope:
    """Reads names from the failing frame; never runs user code."""

    def __init__(self, frame: types.FrameType) -> None:
        self.locals = frame.f_locals
        self.globals = frame.f_globals

    def lookup(self, name: str) -> Any:
        for ns in (self.locals, self.globals, vars(builtins)):
            if name in ns:
                return ns[name]
        return _MISSING

    def value(self, node: ast.expr) -> Any:
        """A Name's value or a literal; anything else is reported as an unknown argument."""
        if isinstance(node, ast.Name):
            v = self.lookup(node.id)
            return None if v is _MISSING else v
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None


def _callee(func: ast.expr, scope: _Scope) -> tuple[str | None, Any]:
    """(op name, the tensor a method was called on or _MISSING) if ``func`` is a torch function or method."""
    if isinstance(func, ast.Name):
        return (func.id if _is_torch(scope.lookup(func.id)) else None), _MISSING
    if not isinstance(func, ast.Attribute):
        return None, _MISSING
    owner = _module_path(func.value, scope)
    if isinstance(owner, torch.Tensor):
        return (func.attr if hasattr(torch.Tensor, func.attr) else None), owner
    if isinstance(owner, types.ModuleType):
        return (func.attr if _is_torch(getattr(owner, func.attr, None)) else None), _MISSING
    return None, _MISSING


def _module_path(node: ast.expr, scope: _Scope) -> Any:
    """``F``, ``torch.nn.functional``, or a local tensor ``x``: names and attributes of modules only."""
    if isinstance(node, ast.Name):
        return scope.lookup(node.id)
    if isinstance(node, ast.Attribute):
        owner = _module_path(node.value, scope)
        if isinstance(owner, types.ModuleType):
            return getattr(owner, node.attr, _MISSING)
    return _MISSING


def _is_torch(obj: Any) -> bool:
    mod = getattr(obj, "__module__", None) or ""
    return callable(obj) and (mod == "torch" or mod.startswith("torch."))
