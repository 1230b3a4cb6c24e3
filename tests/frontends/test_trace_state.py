"""Tracing never changes the model or global torch state, whatever happens; bad arguments fail early."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest
import torch
from support_models import (
    MLP,
    BNNet,
    FailingNet,
    assert_same_model_state,
    build_synthetic,
    global_state,
    model_state,
)

from torchvista_dash import trace_model


def test_training_batchnorm_stats_flags_and_hooks_untouched() -> None:
    model, args, _ = build_synthetic("bn_train")
    model.conv.weight.requires_grad_(False)
    seen: list[int] = []
    model.bn.register_forward_hook(lambda m, a, out: seen.append(1))
    before_g, before = global_state(), model_state(model)
    with torch.no_grad():  # control: the same forward does change the running stats
        probe = BNNet().train()
        probe.load_state_dict(model.state_dict())
        probe(*args)
        assert not torch.equal(probe.bn.running_mean, model.bn.running_mean)
    t = trace_model(model, args)
    assert t.error is None and seen == [1]  # the user's own hook still ran, once
    assert_same_model_state(before, model_state(model))
    assert global_state() == before_g
    assert model.training and model.bn.training and model.bn.num_batches_tracked.item() == 0


def test_tracing_twice_gives_identical_json() -> None:
    model, args, kwargs = build_synthetic("reuse")
    a = trace_model(model, args, kwargs=kwargs).graph.to_json()
    b = trace_model(model, args, kwargs=kwargs).graph.to_json()
    assert a == b
    assert "0x" not in a  # no memory addresses anywhere


def test_state_restored_after_failure() -> None:
    model = FailingNet().train()
    x = torch.randn(2, 8)
    before_g, before = global_state(), model_state(model)
    with pytest.warns(UserWarning, match="raised RuntimeError"):
        t = trace_model(model, x)
    assert t.failed
    assert_same_model_state(before, model_state(model))
    assert global_state() == before_g
    # and a normal trace works right after
    assert not trace_model(MLP(), torch.randn(2, 8)).failed


def test_state_restored_after_keyboard_interrupt() -> None:
    class Interrupting(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)
            self.bn = torch.nn.BatchNorm1d(4)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.bn(self.fc(x))
            raise KeyboardInterrupt

    model = Interrupting().train()
    before_g, before = global_state(), model_state(model)
    with pytest.raises(KeyboardInterrupt):
        trace_model(model, torch.randn(3, 4))
    assert_same_model_state(before, model_state(model))
    assert global_state() == before_g


def test_no_references_to_user_tensors_kept() -> None:
    import weakref

    model = MLP()
    x = torch.randn(2, 8)
    ref = weakref.ref(x)
    t = trace_model(model, x)
    del x
    assert ref() is None
    assert not any(isinstance(v, torch.Tensor) for v in vars(t).values())
    assert t.graph.nodes[0].kind == "input"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_compiled_model_traced_through_original_module() -> None:
    model = MLP()
    compiled = torch.compile(model)
    g = trace_model(compiled, torch.randn(2, 8)).graph
    assert [c.qualname for c in g.module_calls] == [
        "",
        "layers",
        "layers.0",
        "layers.1",
        "layers.2",
        "layers.3",
    ]
    assert g.model_name == "MLP"


@dataclasses.dataclass
class _Box:
    x: Any


@pytest.mark.parametrize(
    ("model", "inputs", "kwargs", "match"),
    [
        ("not a module", torch.randn(2, 8), None, "must be a torch.nn.Module"),
        (MLP(), "hello", None, "inputs must be a tensor"),
        (MLP(), 3.0, None, "inputs must be a tensor"),
        (MLP(), (torch.randn(2, 8).numpy(),), None, "numpy.ndarray, not a tensor"),
        (MLP(), _Box(x=torch.randn(2, 8).numpy()), None, r"inputs\[0\]\.x is a numpy"),
        (MLP(), (torch.randn(2, 8),), ["mask"], "kwargs must be a dict"),
        (MLP(), (MLP(),), None, "is an nn.Module"),
    ],
)
def test_bad_arguments_raise_type_error_before_running(
    model: Any, inputs: Any, kwargs: Any, match: str
) -> None:
    calls: list[int] = []
    if isinstance(model, torch.nn.Module):
        model.register_forward_pre_hook(lambda m, a: calls.append(1))
    with pytest.raises(TypeError, match=match):
        trace_model(model, inputs, kwargs=kwargs)
    assert calls == []
    assert torch._C._len_torch_function_stack() == 0


def test_input_forms_tensor_tuple_list_dict() -> None:
    class Two(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
            return a if b is None else a + b

    class Dicty(torch.nn.Module):
        def forward(self, d: dict[str, torch.Tensor]) -> torch.Tensor:
            return d["p"] * 2

    x = torch.ones(2)
    assert [n.name for n in trace_model(Two(), x).graph.nodes if n.kind == "input"] == ["a"]
    assert [n.name for n in trace_model(Two(), [x, x + 1]).graph.nodes if n.kind == "input"] == ["a", "b"]
    assert [
        n.name for n in trace_model(Two(), (x,), kwargs={"b": x * 2}).graph.nodes if n.kind == "input"
    ] == ["a", "b"]
    assert [n.name for n in trace_model(Dicty(), {"p": x}).graph.nodes if n.kind == "input"] == ["d['p']"]
    # a dict whose keys are the forward's parameters is its keyword arguments (a tokenizer's output, as for
    # model(**batch)); wrapped in a tuple it is one positional argument again
    assert [n.name for n in trace_model(Two(), {"a": x, "b": x * 3}).graph.nodes if n.kind == "input"] == [
        "a",
        "b",
    ]
    assert not trace_model(Two(), {"b": x, "a": x + 1}).failed
    assert [
        n.name for n in trace_model(Dicty(), ({"d": x, "p": x + 1},)).graph.nodes if n.kind == "input"
    ] == ["d['d']", "d['p']"]
    one = trace_model(Two(), {"a": x, "c": x + 1})  # 'c' names no parameter: the dict is ``a``
    assert [n.name for n in one.graph.nodes if n.kind == "input"] == ["a['a']", "a['c']"]


def test_meta_device_model_traces_without_memory() -> None:
    with torch.device("meta"):
        model = MLP((512, 4096, 4096, 10))
    x = torch.empty(4, 512, device="meta")
    t = trace_model(model, x)
    assert not t.failed
    (out,) = [n for n in t.graph.nodes if n.kind == "output"]
    assert out.outputs[0].shape == (4, 10) and out.outputs[0].device == "meta"
    assert all(e.meta.device == "meta" for e in t.graph.edges)
    assert (
        t.graph.call_by_id["mod:(root)"].num_params == 512 * 4096 + 4096 + 4096 * 4096 + 4096 + 4096 * 10 + 10
    )


def test_warning_points_at_caller() -> None:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        trace_model(FailingNet(), torch.randn(2, 8))
    assert len(w) == 1 and w[0].filename == __file__


def test_other_threads_calling_the_model_do_not_leak_into_the_trace() -> None:
    import threading

    model = build_synthetic("reuse")[0].eval()
    x = torch.randn(2, 8)
    alone = trace_model(model, x).graph.to_json()
    stop = threading.Event()
    calls = [0]

    def worker() -> None:
        with torch.no_grad():
            while not stop.is_set():
                model(x)
                calls[0] += 1

    th = threading.Thread(target=worker)
    th.start()
    try:
        while calls[0] < 3:
            threading.Event().wait(0.001)
        together = [trace_model(model, x).graph.to_json() for _ in range(5)]
    finally:
        stop.set()
        th.join()
    assert calls[0] > 3
    assert all(j == alone for j in together)


def test_nothing_written_onto_tensors_or_parameters() -> None:
    model, args, kwargs = build_synthetic("direct_param")
    x = args[0]
    before = {k: dict(vars(p)) for k, p in model.named_parameters()}
    x_before = dict(vars(x))
    trace_model(model, args, kwargs=kwargs)
    assert {k: dict(vars(p)) for k, p in model.named_parameters()} == before
    assert dict(vars(x)) == x_before


def test_meta_value_read_fails_with_a_hint() -> None:
    class ReadsValues(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2 if bool((x > 0).all()) else x

    with pytest.warns(UserWarning, match="meta tensors do not have"):
        t = trace_model(ReadsValues(), torch.empty(2, device="meta"))
    assert t.failed
    bad = t.graph.node_by_id[t.graph.error.node]
    assert bad.name == "__bool__" and "meta tensors" in bad.error
    assert [n.name for n in t.graph.nodes if n.kind == "op"] == ["gt", "all", "__bool__"]
