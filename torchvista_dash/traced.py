"""``Trace``: a traced forward pass and everything a user does with it (view, draw, save, show).

Each method delegates to one pipeline stage, imported lazily so that loading a saved trace
needs neither torch nor dash. ``trace_model`` calls down into ``trace/`` (which returns plain data) and
wraps the result here: the facade sits on top, no stage calls back into it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torchvista_dash.model.graph import Graph
from torchvista_dash.model.options import DEFAULT_NODE_BUDGET, ViewOptions, split_options

if TYPE_CHECKING:  # pragma: no cover - typing only
    import networkx
    import plotly.graph_objects as go

    from torchvista_dash.layout.types import Layout
    from torchvista_dash.model.values import FirstNonfinite
    from torchvista_dash.render.paint import Paint
    from torchvista_dash.view.types import VisibleGraph


class Trace:
    """A traced forward pass: ``graph`` (pure data) plus, for a failed pass, the original ``error``."""

    def __init__(self, graph: Graph, error: BaseException | None = None, *, _checked: bool = False) -> None:
        # A graph built in memory is checked as a loaded file is (a parent cycle would hang the view);
        # the tracer's and a loaded file's graphs are already known good, and their check is not paid twice.
        if not isinstance(graph, Graph):
            raise TypeError(
                f"Trace needs a Graph, not {type(graph).__name__} (trace_model(model, inputs) or "
                f"load_trace(path) give a Trace)"
            )
        if not _checked:
            graph.validate()
        self.graph = graph
        self.error = error
        self._traceback = error.__traceback__ if error is not None else None

    def __repr__(self) -> str:
        state = "failed" if self.failed else "ok"
        return (
            f"<Trace {self.graph.model_name or 'model'}: {self.graph.op_count} ops, "
            f"{len(self.graph.module_calls)} module calls, {state}>"
        )

    @property
    def failed(self) -> bool:
        return self.graph.error is not None

    @property
    def id(self) -> str:
        """A content hash: the same graph always gets the same id (keys server registries and caches)."""
        return self.graph.content_id

    @property
    def default_expanded(self) -> frozenset[str]:
        """Calls a view opens beyond its depth when no ``expanded`` is given (a diff opens down to its
        changes)."""
        return frozenset()

    def expanded_or_default(self, expanded: Iterable[str] | None) -> Iterable[str]:
        """``expanded`` as given, or ``default_expanded`` when none is (figures, views, exports alike)."""
        return self.default_expanded if expanded is None else expanded

    def raise_if_failed(self) -> None:
        """Re-raise the model's own exception (with its traceback) if the forward pass failed."""
        if self.error is not None:
            # from the model's own traceback each time: raising one exception object again would grow its
            # traceback by this frame and the caller's on every re-raise
            raise self.error.with_traceback(self._traceback)
        if self.graph.error is not None:  # loaded from a file: only the text survives
            err = self.graph.error
            raise RuntimeError(
                f"{err.type}: {err.message}\n(traced forward pass failed; traceback:)\n{err.traceback}"
            )

    # ---- persistence -------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        return self.graph.save(path)

    def to_json(self) -> str:
        return self.graph.to_json()

    def push(self, url: str, token: str | None = None) -> str:
        """Send this trace to the server at ``url`` (started with ``--push-token``); returns the link of the
        page that shows it, on any of its workers or hosts. ``token``: default ``$TVD_PUSH_TOKEN``."""
        from torchvista_dash.app.http.push import push_trace

        return push_trace(self, url, token)

    # ---- costs -------------------------------------------------------------------------
    def stats(self, as_frame: bool = False) -> Any:
        """One row per module (qualname, cls, calls, params, param_bytes, flops, output_bytes, time_ms); the
        root ``""`` row is the model total. ``as_frame=True`` gives a pandas DataFrame (pandas must be
        installed).
        """
        from torchvista_dash.model.costs import STATS_KEYS, stats_rows

        rows = stats_rows(self.graph)
        if not as_frame:
            return rows
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "Trace.stats(as_frame=True) needs pandas (pip install pandas); "
                "stats() without it returns the same rows as a list of dicts"
            ) from None
        return pd.DataFrame(rows, columns=list(STATS_KEYS))

    # ---- values (a trace made with values=True) ------------------------------------------
    def first_nonfinite(self) -> FirstNonfinite | None:
        """Where NaN or Inf first appears: the first op (in execution order) whose output holds one while its
        inputs did not, with its module path (``.qualname``); None if every value is finite."""
        from torchvista_dash.model.values import first_nonfinite

        return first_nonfinite(self.graph)

    # ---- views and drawing -------------------------------------------------------------
    def view(
        self,
        depth: int | None = 1,
        expanded: Iterable[str] | None = None,
        *,
        fold_repeats: bool = True,
        unfolded: Iterable[str] | None = None,
        show_params: bool = False,
        node_budget: int | None = None,
    ) -> VisibleGraph:
        """What is drawn for an expand state; ``expanded`` takes ModuleCall ids or qualnames."""
        from torchvista_dash.view.build import view_of

        options = ViewOptions(
            depth=depth,
            fold_repeats=fold_repeats,
            show_params=show_params,
            node_budget=DEFAULT_NODE_BUDGET if node_budget is None else node_budget,
        )
        return view_of(self.graph, options, self.expanded_or_default(expanded), unfolded)

    def layout(self, v: VisibleGraph | None = None, rankdir: str = "TB") -> Layout:
        """Node boxes, cluster boxes and edge paths for a view (the default view if none is given)."""
        from torchvista_dash.layout import layout_view

        return layout_view(v if v is not None else self.view(), rankdir=rankdir)

    def paint(self, vg: VisibleGraph, theme: str = "light") -> Paint | None:
        """What this trace's pictures draw on top of their colours (None; a diff's trace paints its added,
        removed and changed modules). Colouring by cost is a drawing option (``color_by``), not this."""
        return None

    def figure(
        self,
        depth: int | None = 1,
        expanded: Iterable[str] | None = None,
        *,
        unfolded: Iterable[str] | None = None,
        **options: Any,
    ) -> go.Figure:
        """A plotly Figure of one view, usable anywhere Plotly is.

        ``options``: any of ``ViewOptions`` (fold_repeats, show_params, node_budget) and ``DrawOptions``
        (theme, rankdir, highlight, labels, details, color_by: colour boxes by "flops", "params", "bytes",
        "time", a value trace's "absmax", "std", "zeros" or "nonfinite", a grads trace's "grad_norm", or a
        mapping of your own from module qualnames or node ids to numbers; selected: a box whose inputs and
        outputs are lit, with reach "step"/"up"/"down"/"all" or path_to another box); ``root="layers.3.mlp"``
        draws one module as its own graph.
        """
        from torchvista_dash.pipeline import figure_of
        from torchvista_dash.view.build import view_of

        view, draw = split_options({"depth": depth, **options}, where="figure()")
        trace = self.focused(view.root)
        vg = view_of(trace.graph, view, trace.expanded_or_default(expanded), unfolded)
        return figure_of(trace.graph, vg, draw, paint=trace.paint(vg, draw.theme))

    def focused(self, root: str | None) -> Trace:
        """One module call as a trace of its own (``root``: its qualname or call id; None: this trace): its
        ops and sub-modules, the tensors that enter it as inputs and those that leave it as outputs."""
        if root is None:
            return self
        from torchvista_dash.model.focus import focus

        graph = focus(self.graph, root)
        return self if graph is self.graph else Trace(graph)

    def to_html(self, path: str | Path, **options: Any) -> Path:
        """A standalone HTML file (plotly.js embedded): zoom, pan and hover work offline."""
        from torchvista_dash.pipeline import export

        return export(self, Path(path), fmt="html", **options)

    def export(self, path: str | Path, **options: Any) -> Path:
        """Write the picture to ``path``; the extension picks the format (html, svg, png, pdf, json).

        ``options`` are those of ``figure`` (depth, expanded, unfolded, theme, rankdir, ...) and ``fmt``."""
        from torchvista_dash.pipeline import export

        return export(self, Path(path), **options)

    def to_networkx(self, depth: int | None = None) -> networkx.MultiDiGraph:
        """Every op as a node (``depth=None``), or module calls below ``depth`` collapsed into one node
        each."""
        from torchvista_dash.view.nx_export import to_networkx

        return to_networkx(self.graph, depth=depth)

    def show(self, mode: str = "inline", **options: Any) -> Any:
        """Draw the interactive graph in a notebook (``inline``), print its URL (``external``) or open a
        ``tab``.

        On a failed trace the partial graph is drawn first, then the model's exception is re-raised.
        """
        from torchvista_dash.app.server.notebook import show

        return show(self, mode=mode, **options)


def trace_model(
    model: Any,
    inputs: Any = (),
    kwargs: dict[str, Any] | None = None,
    *,
    name: str | None = None,
    flops: bool = True,
    timing: bool = False,
    values: bool = False,
    grads: Callable[[Any], Any] | None = None,
) -> Trace:
    """Trace ``model(*inputs, **kwargs)`` once, under ``torch.no_grad()``, and restore the model afterwards.

    ``inputs`` is a tensor, a tuple/list of positional arguments (tensors or nested structures), a dict of
    keyword arguments (every key names a parameter of the forward: a tokenizer's output, as for
    ``model(**batch)``), or a single dict/dataclass argument (``(batch,)`` always passes it as one). If the
    forward pass raises, the partial graph is returned with the failing op
    and its enclosing module calls marked, ``Trace.error`` holds the exception, and a warning is issued.
    ``flops`` records each op's FLOPs (PyTorch's FlopCounterMode formulas) in the same pass; ``timing=True``
    also times each op in separate runs (median of 5) for ``stats()`` and ``figure(color_by="time")``.
    ``values=True`` records a summary of every tensor's values (min, max, mean, std, NaN and Inf counts,
    fraction of zeros, a few elements) in the same pass: shown in hover and details, and what
    ``first_nonfinite()``, ``compare`` and ``color_by="absmax"/"std"/"zeros"/"nonfinite"`` read.
    ``grads=lambda out: out.logits.sum()`` runs one backward pass after the recorded forward and keeps each
    parameter's gradient norm (``color_by="grad_norm"``; parameters the loss does not reach are listed in
    hover and details); the model's own ``.grad`` are left as they were.
    """
    from torchvista_dash import __version__
    from torchvista_dash.frontends.trace import trace_graph, user_stacklevel

    graph, error = trace_graph(
        model,
        inputs,
        kwargs,
        name=name,
        versions=(("torchvista_dash", __version__),),
        flops=flops,
        timing=timing,
        values=values,
        grads=grads,
    )
    if error is not None:
        hint = ""
        if "meta tensors" in str(error):
            hint = (
                " — the model reads tensor values (.item(), `if tensor:`), which meta tensors do not have; "
                "avoid that code path (Hugging Face: attn_implementation='eager' and pass an attention_mask) "
                "or trace with real tensors"
            )
        warnings.warn(
            f"the forward pass of {graph.model_name} raised {type(error).__name__}: {error}{hint}; "
            "returning the "
            f"partial trace (Trace.error holds the exception, Trace.raise_if_failed() re-raises it)",
            stacklevel=user_stacklevel(),
        )
    return Trace(graph, error, _checked=True)


def from_exported(program: Any, *, name: str | None = None, flops: bool = True) -> Trace:
    """The Trace of a ``torch.export.ExportedProgram``, drawn like a live trace of the same model: module
    boxes from each op's ``nn_module_stack``, shapes from ``meta["val"]`` (symbolic sizes as ``s0``),
    parameters from the graph signature, FLOPs from the same formulas (``flops=False`` skips them)."""
    from torchvista_dash import __version__
    from torchvista_dash.frontends.export import graph_of_program

    graph = graph_of_program(program, name=name, versions=(("torchvista_dash", __version__),), flops=flops)
    return Trace(graph)


def from_fx(module: Any, *, name: str | None = None, flops: bool = True) -> Trace:
    """The Trace of a ``torch.fx.GraphModule`` (``symbolic_trace``, a compiler pass): its ``call_module``
    nodes and module stacks as module boxes, shapes where the graph records them (``ShapeProp``,
    ``meta["val"]``); a graph without any says so in a note and draws without shapes."""
    from torchvista_dash import __version__
    from torchvista_dash.frontends.fx import graph_of_fx

    graph = graph_of_fx(module, name=name, versions=(("torchvista_dash", __version__),), flops=flops)
    return Trace(graph)


def load_trace(path: str | Path, *, max_bytes: int | None = None, allow_pickle: bool = False) -> Trace:
    """Load a trace saved with ``Trace.save`` (JSON only: nothing is unpickled), or a torch.export program
    saved with ``torch.export.save`` (a ``.pt2`` file, by its extension: read with ``torch.export.load``, so
    only for files you chose yourself; one holding pickled objects, which loading would run, is refused
    unless ``allow_pickle=True``); anything else is a ``TraceFormatError``. A JSON file over ``max_bytes``
    (default: ``graph.trace_size_limit()``) is refused."""
    if Path(path).suffix.lower() == ".pt2":
        from torchvista_dash.frontends.export.load import load_program

        return from_exported(load_program(path, allow_pickle=allow_pickle))
    graph = Graph.load(path, max_bytes=max_bytes)
    if graph.error is not None:
        warnings.warn(
            f"this trace's forward pass failed: {graph.error.type}: {graph.error.message}", stacklevel=2
        )
    return Trace(graph, _checked=True)
