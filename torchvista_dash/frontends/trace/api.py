"""``trace_graph``: run one forward pass under the recorder and return ``(Graph, exception)``.

Data flows one way: this returns plain data and the model's exception (or None); the ``Trace`` facade
(``traced.py``) wraps it, warns and re-raises. Nothing here imports the facade or the package root.
"""

from __future__ import annotations

import dataclasses
import gc
import inspect
import os
import sys
import traceback
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.modules import module as nn_module

from torchvista_dash.frontends.trace.build import finish
from torchvista_dash.frontends.trace.cost import FlopMeter, time_ops
from torchvista_dash.frontends.trace.failed import failed_node, in_chain, record_rejected
from torchvista_dash.frontends.trace.grads import grad_norms
from torchvista_dash.frontends.trace.mode import RecordingMode
from torchvista_dash.frontends.trace.recorder import Recorder
from torchvista_dash.frontends.trace.rejected import rejected_call
from torchvista_dash.frontends.trace.state import ModelState, quiet_lazy_init
from torchvista_dash.frontends.trace.structure import bind_arg_names, check_inputs, iter_tensors
from torchvista_dash.frontends.trace.values import Summarizer
from torchvista_dash.model.graph import ErrorInfo, Graph


def trace_graph(
    model: torch.nn.Module,
    inputs: Any = (),
    kwargs: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    versions: tuple[tuple[str, str], ...] = (),
    flops: bool = True,
    timing: bool = False,
    timing_repeat: int = 5,
    values: bool = False,
    grads: Callable[[Any], Any] | None = None,
) -> tuple[Graph, BaseException | None]:
    """Trace ``model(*inputs, **kwargs)`` once, under ``torch.no_grad()``, restoring the model afterwards.

    ``inputs`` is a tensor, a tuple/list of positional arguments (tensors or nested structures), a dict of
    keyword arguments (every key a parameter of ``forward``), or a single dict/dataclass argument. If the
    forward pass raises, the partial graph is returned with the failing op and its enclosing module calls
    marked, beside the exception. ``versions`` are recorded after torch's.
    ``flops`` counts each op's FLOPs in the same pass; ``timing`` times each op in separate runs (cost.py);
    ``values`` summarises every tensor's values in the same pass (values.py); ``grads`` (a loss function of
    the output) runs one backward pass after it for each parameter's gradient norm (grads.py).
    """
    model = _unwrap(model)
    args, kw = check_inputs(inputs, kwargs, model.forward)
    gc_was_enabled = gc.isenabled()
    # the recorder allocates many small objects; a full GC pass mid-trace costs more than it saves
    gc.disable()
    try:
        graph, error = _trace(model, args, kw, name, versions, flops, values)
        if timing:
            graph = _timed(model, args, kw, graph, error, timing_repeat)
        if grads is not None:
            graph = _with_grads(model, args, kw, graph, error, grads)
        return graph, error
    finally:
        if gc_was_enabled:
            gc.enable()


def _trace(
    model: torch.nn.Module,
    args: tuple[Any, ...],
    kw: dict[str, Any],
    name: str | None,
    versions: tuple[tuple[str, str], ...],
    flops: bool,
    values: bool = False,
) -> tuple[Graph, BaseException | None]:
    named = list(model.named_modules())  # one walk of the module tree, shared by the three readers
    rec = Recorder(model, named)
    if flops:
        rec.meter = FlopMeter(_device_types(model, args, kw))
    if values:
        rec.summarize = Summarizer(rec.param_names)
    state = ModelState(model, named)
    error: BaseException | None = None
    result: Any = None
    handles = []
    written: list[str] = []
    undo_lazy = quiet_lazy_init(state.modules)
    try:
        for i, n in enumerate(bind_arg_names(model.forward, len(args))):
            for path, t in iter_tensors(args[i], n):
                rec.add_input(path, t)
        for k, v in kw.items():
            for path, t in iter_tensors(v, k):
                rec.add_input(path, t)
        handles.append(nn_module.register_module_forward_pre_hook(rec.pre_hook))
        handles.append(nn_module.register_module_forward_hook(rec.post_hook, always_call=True))
        try:
            with torch.no_grad(), RecordingMode(rec):
                result = model(*args, **kw)
        except Exception as exc:
            error = exc
        finally:
            for h in handles:
                h.remove()
            rec.flush()  # what the mode and the hooks queued last (mode.py)
        rec.read_facts()
        if error is None:
            for path, t in iter_tensors(result, "output", top=True):
                rec.add_output(path, t)
    finally:
        undo_lazy()
        written = state.restore()
    graph = _finalize(rec, name or _class_name(model), error, versions)
    if error is None and not any(n.kind == "output" for n in reversed(graph.nodes)):
        warnings.warn(_no_output_message(graph.model_name, result), stacklevel=user_stacklevel())
    del result
    written = sorted({*written, *rec.param_writes})
    if written:
        shown = ", ".join(written[:5]) + (f" and {len(written) - 5} more" if len(written) > 5 else "")
        warnings.warn(
            f"the forward pass of {graph.model_name} wrote into parameter(s) {shown} in place; "
            "their new values "
            f"stay (tracing restores attributes, buffers and submodules, but not weights, which would need a "
            f"copy of every weight): reload the weights if that was not intended",
            stacklevel=user_stacklevel(),
        )
    return graph, error


def _class_name(model: torch.nn.Module) -> str:
    if isinstance(model, torch.jit.ScriptModule):
        return getattr(model, "original_name", None) or type(model).__name__
    return type(model).__name__


def _no_output_message(model_name: str, result: Any) -> str:
    what = type(result).__name__
    if inspect.isgenerator(result):
        why = "a generator, whose body never ran"
    elif result is None:
        why = "None"
    else:
        why = f"{'an' if what[:1] in 'aeiouAEIOU' else 'a'} {what}, which holds no tensor"
    return (
        f"the forward pass of {model_name} returned {why}: the graph has no output node; return the tensors "
        f"(e.g. list(...) of a generator) for them to be drawn"
    )


def user_stacklevel() -> int:
    """The warnings stacklevel of the first frame outside this package (so a warning names user code)."""
    pkg = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep
    f = sys._getframe(1)
    level = 1
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(pkg):
        f = f.f_back
        level += 1
    return level


def _unwrap(model: Any) -> torch.nn.Module:
    """The nn.Module to trace: torch.compile'd models are traced through their original module (a TorchScript
    module is traced as it is: one opaque call, see ``Recorder.opaque_call``)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"trace_model: model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(model, torch.jit.ScriptModule):
        return model
    orig = model.__dict__.get("_orig_mod") or getattr(model, "_modules", {}).get("_orig_mod")
    if type(model).__name__ == "OptimizedModule" and isinstance(orig, torch.nn.Module):
        return orig
    return model


def _finalize(
    rec: Recorder, model_name: str, error: BaseException | None, versions: tuple[tuple[str, str], ...]
) -> Graph:
    """Freeze what was recorded into a Graph (the ops recorded raw become Nodes and Edges; calls and the error
    here)."""
    failed_calls: set[str] = set()
    err_info = None
    if error is not None:
        # the op whose exception escaped (ops that raised and were caught by the model leave no node)
        error_node = failed_node(rec, error)
        if error_node is None:  # a torch call that rejected its arguments never reached the mode
            call = rejected_call(error)
            if call is not None:
                error_node = record_rejected(rec, call, error)
        failed_calls = {cid for cid, exc in rec.failed_exits if in_chain(exc, error)}
        if error_node is not None:
            failed_calls.update(_ancestors(rec, rec.nodes[-1].parent))
        err_info = ErrorInfo(
            type=type(error).__name__,
            message=str(error),
            traceback=_user_traceback(error),
            node=error_node,
        )
    finish(rec)  # after the failed op's node: its inputs may have given parameters their nodes
    return Graph(
        nodes=tuple(rec.nodes),
        edges=tuple(rec.edges),
        module_calls=tuple(rec.build_calls(failed_calls)),
        model_name=model_name,
        error=err_info,
        versions=(("torch", torch.__version__), *versions),
        measured=(*(("flops",) if rec.meter else ()), *(("values",) if rec.summarize else ())),
    )


def _timed(
    model: torch.nn.Module,
    args: tuple[Any, ...],
    kw: dict[str, Any],
    graph: Graph,
    error: BaseException | None,
    repeat: int,
) -> Graph:
    """The graph with each op's median time from separate runs (never the recording pass itself)."""
    if any(t.device.type == "meta" for t in _tensors_of(args, kw)):
        raise ValueError(
            "timing=True needs real tensors: meta tensors run no kernels, so there is nothing to "
            "time (FLOPs are counted on the meta device all the same)"
        )
    if error is not None:
        warnings.warn("timing=True: the forward pass failed, so no op times were recorded", stacklevel=4)
        return graph
    nodes = list(graph.nodes)
    state = ModelState(model)
    try:
        problem = time_ops(model, args, kw, nodes, repeat)
    finally:
        state.restore()
    if problem is not None:
        warnings.warn(f"timing=True: {problem}", stacklevel=4)
        return graph
    return dataclasses.replace(graph, nodes=tuple(nodes), measured=(*graph.measured, "time"))


def _with_grads(
    model: torch.nn.Module,
    args: tuple[Any, ...],
    kw: dict[str, Any],
    graph: Graph,
    error: BaseException | None,
    loss_fn: Callable[[Any], Any],
) -> Graph:
    """The graph with each parameter's gradient norm from one backward pass (none after a failed pass)."""
    if error is not None:
        warnings.warn("grads=: the forward pass failed, so no gradients were computed", stacklevel=4)
        return graph
    norms = grad_norms(model, args, kw, loss_fn)
    return dataclasses.replace(graph, grads=norms, measured=(*graph.measured, "grads"))


def _device_types(model: torch.nn.Module, args: tuple[Any, ...], kw: dict[str, Any]) -> str:
    """The device types of the inputs and the first parameter ("cpu", "cpu,meta"): what FLOP measuring learns
    is kept per these (cost.py)."""
    kinds = {t.device.type for t in _tensors_of(args, kw)}
    with torch._C.DisableTorchFunctionSubclass():
        first = next(model.parameters(), None)
        if first is not None:
            kinds.add(first.device.type)
    return ",".join(sorted(kinds)) or "cpu"


def _tensors_of(args: tuple[Any, ...], kw: dict[str, Any]) -> list[torch.Tensor]:
    return [t for i, a in enumerate((*args, *kw.values())) for _, t in iter_tensors(a, str(i))]


def _user_traceback(error: BaseException) -> str:
    """The exception's traceback without the tracer's own frames (the call into the model on top, the
    function mode around the failing op): it reads as the model's forward pass raising on its own.

    It ends where the model's code handed the op to the tracer: what ran below that depends on the tracer's
    state (the first time an op is seen, its FLOPs are measured under torch's FlopCounterMode, which adds
    frames of its own), so keeping it would make the same failing model give different trace JSON."""
    te = traceback.TracebackException(type(error), error, error.__traceback__)
    here = os.path.dirname(os.path.abspath(__file__)) + os.sep
    kept: list[traceback.FrameSummary] = []
    for f in te.stack:
        if os.path.abspath(f.filename).startswith(here):
            if kept:  # the tracer's frame around the failing op: the model's part ends here
                break
            continue  # the tracer's call into the model, on top
        kept.append(f)
    te.stack = traceback.StackSummary.from_list(kept)
    return "".join(te.format())


def _ancestors(rec: Recorder, cid: str | None) -> list[str]:
    parents = {c[0]: c[3] for c in rec.calls}
    out = []
    while cid is not None:
        out.append(cid)
        cid = parents.get(cid)
    return out
