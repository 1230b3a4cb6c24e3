"""The tracer on small synthetic models, one feature each (skip, reuse, structures, in-place, ...)."""

from __future__ import annotations

import torch
from support_models import GLOBAL_SCALE, build_synthetic

from torchvista_dash import trace_model
from torchvista_dash.model.graph import Graph


def _trace(name: str) -> Graph:
    model, args, kwargs = build_synthetic(name)
    t = trace_model(model, args, kwargs=kwargs)
    assert t.error is None and t.graph.error is None
    return t.graph


def _ops(g: Graph) -> list[str]:
    return [n.name for n in g.nodes if n.kind == "op"]


def _preds(g: Graph, node_id: str) -> list[str]:
    return [e.src for e in g.edges if e.dst == node_id]


def _by_name(g: Graph, name: str, kind: str | None = None) -> list:
    return [n for n in g.nodes if n.name == name and (kind is None or n.kind == kind)]


def test_skip_connection_input_feeds_linear_and_add() -> None:
    g = _trace("skip")
    (x,) = _by_name(g, "x", "input")
    (add,) = _by_name(g, "add")
    (lin,) = _by_name(g, "linear")
    assert x.id in _preds(g, lin.id)
    assert x.id in _preds(g, add.id)
    gelu = _by_name(g, "gelu")[0]
    assert gelu.id in _preds(g, add.id)
    assert lin.parent == "mod:block.fc" and gelu.parent == "mod:block.act"
    (out,) = [n for n in g.nodes if n.kind == "output"]
    (norm,) = _by_name(g, "layer_norm")
    assert _preds(g, out.id) == [norm.id]
    # ids are sequential in recording order, which is topological
    index = {n.id: i for i, n in enumerate(g.nodes)}
    assert all(index[e.src] < index[e.dst] for e in g.edges)
    assert [n.id for n in g.nodes] == [f"n:{i}" for i in range(len(g.nodes))]


def test_module_reuse_and_loops_give_one_call_each() -> None:
    g = _trace("reuse")
    fc_calls = [c.id for c in g.calls_by_qualname["fc"]]
    assert fc_calls == ["mod:fc", "mod:fc#1"]
    block_calls = g.calls_by_qualname["block"]
    assert [c.call_index for c in block_calls] == [0, 1, 2]
    assert [c.id for c in g.calls_by_qualname["block.fc"]] == [
        "mod:block.fc",
        "mod:block.fc#1",
        "mod:block.fc#2",
    ]
    # the nested call points at the matching call of its parent
    assert [c.parent for c in g.calls_by_qualname["block.fc"]] == ["mod:block", "mod:block#1", "mod:block#2"]
    # second call of fc consumes the first one's output; each call reads the weight from a node of its own
    # (a parameter belongs to its module, not to the first call: no edge carries it from one call to the next)
    lin = _by_name(g, "linear")
    assert lin[0].parent == "mod:fc" and lin[1].parent == "mod:fc#1"
    assert lin[0].id in _preds(g, lin[1].id)
    w0, w1 = _by_name(g, "fc.weight", "parameter")
    assert (w0.parent, w1.parent) == ("mod:fc", "mod:fc#1")
    assert (
        w0.id in _preds(g, lin[0].id) and w1.id in _preds(g, lin[1].id) and w0.id not in _preds(g, lin[1].id)
    )
    root = g.call_by_id["mod:(root)"]
    assert root.depth == 0 and g.call_by_id["mod:block.fc#2"].depth == 2
    assert g.call_by_id["mod:fc"].builtin and not root.builtin
    assert root.num_params == sum(p.numel() for p in build_synthetic("reuse")[0].parameters())


def test_multiple_inputs_and_outputs() -> None:
    g = _trace("multi_io")
    assert [n.name for n in g.nodes if n.kind == "input"] == ["a", "b"]
    outs = [n for n in g.nodes if n.kind == "output"]
    assert [n.name for n in outs] == ["output[0]", "output[1]"]
    assert [n.name for n in g.nodes if n.id in _preds(g, outs[0].id)] == ["add"]
    assert [n.name for n in g.nodes if n.id in _preds(g, outs[1].id)] == ["mul"]
    assert all(n.parent is None for n in g.nodes if n.kind in ("input", "output"))


def test_dict_and_dataclass_in_and_out_named_by_structure() -> None:
    g = _trace("struct_io")
    assert [n.name for n in g.nodes if n.kind == "input"] == ["batch['x']", "pair.left", "pair.right"]
    assert [n.name for n in g.nodes if n.kind == "output"] == [
        "h",
        "parts[0]",
        "parts[1]",
        "pair.left",
        "pair.right",
    ]
    # an output that is an input passed straight through is wired to that input
    (right_in,) = [n for n in g.nodes if n.kind == "input" and n.name == "pair.right"]
    (right_out,) = [n for n in g.nodes if n.kind == "output" and n.name == "pair.right"]
    assert _preds(g, right_out.id) == [right_in.id]


def test_kwargs_are_inputs_and_scalars_are_details() -> None:
    g = _trace("kwargs")
    assert [n.name for n in g.nodes if n.kind == "input"] == ["x", "mask"]
    (mul,) = _by_name(g, "mul")
    assert ("other", "2.0") in mul.args
    (fill,) = _by_name(g, "masked_fill")
    (mask,) = _by_name(g, "mask", "input")
    assert mask.id in _preds(g, fill.id)
    assert dict(fill.args)["self"] == "Tensor[2×8 float32]"
    assert fill.source is not None and fill.source.startswith("tests/support_models.py:")


def test_globals_and_plain_attributes_are_constant_nodes() -> None:
    g = _trace("const")
    consts = [n for n in g.nodes if n.kind == "constant"]
    assert len(consts) == 2
    assert {n.outputs[0].shape for n in consts} == {tuple(GLOBAL_SCALE.shape)}
    (mul,) = _by_name(g, "mul")
    assert consts[0].id in _preds(g, mul.id)
    assert consts[0].parent == "mod:(root)"


def test_parameters_used_directly_getitem_setitem_and_transpose() -> None:
    g = _trace("direct_param")
    assert _ops(g) == ["matmul", "add", "T", "__getitem__", "__setitem__"]
    (mm,) = _by_name(g, "matmul")
    assert mm.params == ("w",)
    (w,) = _by_name(g, "w", "parameter")
    assert w.id in _preds(g, mm.id) and w.outputs[0].shape == (8, 4)
    (setitem,) = _by_name(g, "__setitem__")
    (getitem,) = _by_name(g, "__getitem__")
    (add,) = _by_name(g, "add")
    assert set(_preds(g, setitem.id)) == {add.id, getitem.id}
    assert setitem.outputs[0].shape == (2, 4)
    (out,) = [n for n in g.nodes if n.kind == "output"]
    assert _preds(g, out.id) == [setitem.id]  # the in-place write is the new producer of y
    assert dict(getitem.args)["key"] == "0"
    assert g.node_by_id[_preds(g, getitem.id)[0]].name == "T"


def test_in_place_ops_chain() -> None:
    g = _trace("in_place")
    assert _ops(g) == ["linear", "relu_", "add_", "add_"]
    ops = [n for n in g.nodes if n.kind == "op"]
    for a, b in zip(ops, ops[1:], strict=False):
        assert a.id in _preds(g, b.id)
    (out,) = [n for n in g.nodes if n.kind == "output"]
    assert _preds(g, out.id) == [ops[-1].id]
    (x,) = _by_name(g, "x", "input")
    assert x.id in _preds(g, ops[-1].id)


def test_edges_carry_shape_dtype_device_nbytes() -> None:
    g = _trace("bn_train")
    for e in g.edges:
        src = g.node_by_id[e.src]
        assert e.meta in src.outputs
        assert e.tensor.startswith(e.src + "/")
        n = 1
        for s in e.meta.shape:
            n *= s
        size = {"float32": 4, "int64": 8}[e.meta.dtype]  # int64: BatchNorm's num_batches_tracked += 1
        assert e.meta.nbytes == n * size and e.meta.device == "cpu"
    (mean,) = _by_name(g, "mean")
    assert mean.outputs[0].shape == (2, 4)
    bn = g.call_by_id["mod:bn"]
    assert {p.name for p in bn.params} == {
        "weight",
        "bias",
        "running_mean",
        "running_var",
        "num_batches_tracked",
    }
    assert ("eps", "1e-05") in bn.attrs and "eps=1e-05" in bn.extra_repr


def test_size_values_are_shown_where_used() -> None:
    class ViewNet(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = x * 2
            return y.reshape(y.shape).sum(dim=x.dim() - 1)

    t = trace_model(ViewNet(), torch.ones(2, 3))
    g = t.graph
    assert _ops(g) == ["mul", "reshape", "sum"]  # .shape / .dim() are not nodes
    (reshape,) = _by_name(g, "reshape")
    (mul,) = _by_name(g, "mul")
    assert dict(reshape.args)["shape"] == f"(2, 3) (shape of {mul.id})"
    assert dict(_by_name(g, "sum")[0].args)["dim"] == "1"


def test_factories_and_split_outputs() -> None:
    class Fac(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            pos = torch.arange(x.shape[1])
            a, b = (x + pos).split(2, dim=1)
            return a * b

    g = trace_model(Fac(), torch.ones(1, 4)).graph
    assert _ops(g) == ["arange", "add", "split", "mul"]
    (split,) = _by_name(g, "split")
    assert [m.shape for m in split.outputs] == [(1, 2), (1, 2)]
    (mul,) = _by_name(g, "mul")
    tensors = sorted(e.tensor for e in g.edges if e.dst == mul.id)
    assert tensors == [f"{split.id}/0", f"{split.id}/1"]


def test_one_tensor_passed_under_two_names_is_one_input() -> None:
    class Two(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Linear(3, 3)
            self.b = torch.nn.Linear(3, 3)

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return self.a(x) + self.b(y)

    x = torch.ones(1, 3)
    g = trace_model(Two(), (x,), kwargs={"y": x}).graph
    (inp,) = [n for n in g.nodes if n.kind == "input"]
    assert inp.name == "x, y"
    lins = [n for n in g.nodes if n.name == "linear"]
    assert all(inp.id in _preds(g, n.id) for n in lins) and len(lins) == 2


def test_op_returning_a_parameter_unchanged_does_not_take_it_over() -> None:
    class Cast(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(3, 3))
            self.other = torch.nn.Linear(3, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            w = self.w.to(torch.float32)  # same dtype: torch hands back the parameter itself
            assert w is self.w
            return self.other(x @ w) + x @ self.w

    g = trace_model(Cast(), torch.ones(2, 3)).graph
    (w,) = [n for n in g.nodes if n.kind == "parameter" and n.name == "w"]
    mms = [n for n in g.nodes if n.name == "matmul"]
    assert len(mms) == 2 and all(w.id in _preds(g, m.id) for m in mms)
    (to,) = [n for n in g.nodes if n.name == "to"]
    assert _preds(g, to.id) == [w.id]


class _IdentityShortcuts(torch.nn.Module):
    """A residual block whose shortcut is nn.Identity, and a Sequential of two Identities after a Linear."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.shortcut = torch.nn.Identity()
        self.tail = torch.nn.Sequential(torch.nn.Identity(), torch.nn.Identity())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.tail(self.fc(x) + self.shortcut(x))


def test_a_call_that_runs_no_op_passes_its_tensors_through_a_node_of_its_own() -> None:
    from torchvista_dash.view import build as view

    g = trace_model(_IdentityShortcuts(), (torch.randn(2, 4),)).graph
    ids = {n.parent: n for n in _by_name(g, "identity")}
    assert set(ids) == {"mod:shortcut", "mod:tail.0", "mod:tail.1"}  # one node per call that ran no op
    (x,) = _by_name(g, "x", "input")
    (add,) = _by_name(g, "add")
    (lin,) = _by_name(g, "linear")
    assert _preds(g, ids["mod:shortcut"].id) == [x.id]  # the shortcut takes x ...
    assert set(_preds(g, add.id)) == {lin.id, ids["mod:shortcut"].id}  # ... and hands it to the add
    assert x.id in _preds(g, lin.id)  # the linear still reads x itself
    assert _preds(g, ids["mod:tail.1"].id) == [ids["mod:tail.0"].id]
    (out,) = _by_name(g, "output", "output")
    assert _preds(g, out.id) == [ids["mod:tail.1"].id]
    # collapsed, each Identity call is a box on the path, as any other module is
    vg = view.build_view(g, view.make_spec(g, depth=1))
    boxes = {n.id: n for n in vg.nodes}
    assert boxes["mod:shortcut"].label == "shortcut: Identity"
    assert {(e.src, e.dst) for e in vg.edges} >= {(x.id, "mod:shortcut"), ("mod:shortcut", add.id)}
