"""from_exported: what an exported program's graph shows, for the ways programs are made (dynamic shapes,
strict=False, run_decompositions, a module called twice, keyword inputs, buffers and lifted constants)."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.export import Dim

from torchvista_dash import Trace, from_exported, trace_model
from torchvista_dash.model.graph import Graph, tensor_shape_text


class _Net(nn.Module):
    """A linear layer and an activation each called twice, a buffer, a plain tensor attribute (lifted as a
    constant) and a keyword input."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = nn.ReLU()
        self.register_buffer("shift", torch.ones(8))
        self.scale = torch.full((8,), 0.5)

    def forward(self, x: torch.Tensor, *, gate: torch.Tensor) -> torch.Tensor:
        x = self.act(self.fc(x))
        x = self.act(self.fc(x)) + self.shift
        return x * self.scale * gate


def _inputs(batch: int = 4) -> tuple[tuple[torch.Tensor], dict[str, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    return (torch.randn(batch, 8, generator=g),), {"gate": torch.randn(batch, 8, generator=g)}


def _graph(**export_kwargs: object) -> Graph:
    torch.manual_seed(0)
    args, kwargs = _inputs()
    return from_exported(torch.export.export(_Net().eval(), args, kwargs, **export_kwargs)).graph  # type: ignore[arg-type]


def _ops(g: Graph, name: str) -> list[str | None]:
    return [n.parent for n in g.nodes if n.kind == "op" and n.name == name]


def test_a_module_called_twice_is_two_calls_and_its_weight_never_joins_them() -> None:
    g = _graph()
    assert [c.id for c in g.module_calls] == ["mod:(root)", "mod:fc", "mod:act", "mod:fc#1", "mod:act#1"]
    assert _ops(g, "linear") == ["mod:fc", "mod:fc#1"]
    weights = [n for n in g.nodes if n.kind == "parameter" and n.name == "fc.weight"]
    assert [n.parent for n in weights] == ["mod:fc", "mod:fc#1"]  # one node per call, as in a live trace
    fc = g.call_by_id["mod:fc"]
    assert (fc.cls, fc.builtin, fc.num_params) == ("Linear", True, 72)
    assert [(p.name, p.shape, p.trainable) for p in fc.params] == [
        ("weight", (8, 8), True),
        ("bias", (8,), True),
    ]


def test_inputs_outputs_buffers_and_constants_come_from_the_signature() -> None:
    g = _graph()
    assert [(n.name, n.outputs[0].shape) for n in g.nodes if n.kind == "input"] == [
        ("x", (4, 8)),
        ("gate", (4, 8)),
    ]
    assert [n.name for n in g.nodes if n.kind == "output"] == ["output"]
    shift = next(n for n in g.nodes if n.name == "shift")
    assert (shift.kind, shift.parent) == ("parameter", "mod:(root)")
    assert [p for p in g.call_by_id["mod:(root)"].params if p.is_buffer][0].name == "shift"
    const = next(n for n in g.nodes if n.kind == "constant")
    assert dict(const.args)["name"] == "scale" and const.outputs[0].shape == (8,)


def test_ops_are_named_as_users_know_them_with_the_full_target_and_schema_names_in_details() -> None:
    g = _graph()
    linear = next(n for n in g.nodes if n.name == "linear")
    args = dict(linear.args)
    assert args["target"] == "aten.linear.default"
    assert args["input"] == "Tensor[4×8 float32]" and args["weight"] == "Tensor[8×8 float32]"
    assert linear.params == ("fc.weight", "fc.bias")
    # where the user called the module (this file's forward), not torch's own code inside nn.Linear
    assert linear.source is not None and linear.source.startswith("tests/frontends/test_export_program.py:")


def test_flops_come_from_the_live_tracers_formulas() -> None:
    torch.manual_seed(0)
    model = _Net().eval()
    args, kwargs = _inputs()
    live = trace_model(model, args, kwargs).graph
    exported = from_exported(torch.export.export(model, args, kwargs)).graph
    assert [n.flops for n in exported.nodes if n.name == "linear"] == [2 * 4 * 8 * 8] * 2
    assert sum(n.flops for n in exported.nodes) == sum(n.flops for n in live.nodes)
    assert exported.measured == ("flops",)
    assert (
        sum(n.flops for n in from_exported(torch.export.export(model, args, kwargs), flops=False).graph.nodes)
        == 0
    )


def test_dynamic_shapes_show_their_symbols_on_every_edge() -> None:
    batch = Dim("batch", min=2)
    g = _graph(dynamic_shapes={"x": {0: batch}, "gate": {0: batch}})
    x = next(n for n in g.nodes if n.kind == "input" and n.name == "x")
    sym = x.outputs[0].dims
    assert sym is not None and sym[1] == "8" and sym[0].startswith("s")
    assert x.outputs[0].shape == (4, 8)  # the example's sizes: costs and folding count with them
    for e in g.edges:
        if e.meta.shape == (4, 8):
            assert tensor_shape_text(e.meta) == f"{sym[0]}×8"
    vg = Trace(g).view(depth=None)
    assert any(e.label == f"{sym[0]}×8" for e in vg.edges)
    again = Graph.from_json(g.to_json())  # the symbols survive a save
    assert again.nodes[x_index(g)].outputs[0].dims == sym


def x_index(g: Graph) -> int:
    return next(i for i, n in enumerate(g.nodes) if n.kind == "input")


def test_strict_and_non_strict_programs_draw_the_same_modules() -> None:
    strict = _graph(strict=True)
    loose = _graph(strict=False)
    assert [c.id for c in loose.module_calls] == [c.id for c in strict.module_calls]
    assert [n.name for n in loose.nodes if n.kind == "op"] == [n.name for n in strict.nodes if n.kind == "op"]


def test_a_decomposed_core_aten_program_keeps_its_modules() -> None:
    torch.manual_seed(0)
    args, kwargs = _inputs()
    ep = torch.export.export(_Net().eval(), args, kwargs).run_decompositions()
    g = from_exported(ep).graph
    assert [c.id for c in g.module_calls] == ["mod:(root)", "mod:fc", "mod:act", "mod:fc#1", "mod:act#1"]
    names = {n.name for n in g.nodes if n.kind == "op"}
    assert "linear" not in names and ({"addmm", "mm"} & names)  # core aten: linear is decomposed
    assert {n.parent for n in g.nodes if n.name in ("addmm", "mm")} == {"mod:fc", "mod:fc#1"}
    assert sum(n.flops for n in g.nodes) == sum(n.flops for n in _graph().nodes)


def test_the_same_program_gives_the_same_bytes() -> None:
    assert _graph().to_bytes() == _graph().to_bytes()


def test_from_exported_refuses_what_is_not_a_program() -> None:
    with pytest.raises(TypeError, match="from_exported needs a torch.export.ExportedProgram"):
        from_exported(_Net())


@torch.library.custom_op("tvdtest::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@_twice.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class _Custom(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.tvdtest.twice(self.fc(x))


def test_an_op_no_one_has_seen_draws_with_its_namespace_and_no_flops(tmp_path: object) -> None:
    """A custom op (registered in this process, unknown to the FLOP formulas) is an op like any other, saved
    and loaded too."""
    from pathlib import Path

    from torchvista_dash import load_trace

    ep = torch.export.export(_Custom().eval(), (torch.randn(2, 4),))
    path = Path(str(tmp_path)) / "custom.pt2"
    torch.export.save(ep, path)
    for g in (from_exported(ep).graph, load_trace(path).graph):
        op = next(n for n in g.nodes if n.name == "twice")
        assert dict(op.args)["target"] == "tvdtest.twice.default" and op.flops == 0
        assert op.parent == "mod:(root)" and op.outputs[0].shape == (2, 4)
