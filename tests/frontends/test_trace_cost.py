"""FLOPs recorded while tracing equal torch's FlopCounterMode, per module; bytes, timing, the meta device."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
from support_models import ReuseNet, SkipNet
from torch.overrides import TorchFunctionMode
from torch.utils.flop_counter import FlopCounterMode

from torchvista_dash import load_trace, trace_model
from torchvista_dash.demos import DEMOS, build_demo


class _PassThrough(TorchFunctionMode):
    """A function mode that changes nothing: with one active, torch takes the same code paths as under the
    tracer (nn.TransformerEncoderLayer's fused fast path is skipped while any function mode is on)."""

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        return func(*args, **(kwargs or {}))


def _reference(
    model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[int, dict[str, int]]:
    """FlopCounterMode's total and per-module counts (keyed by our qualnames) for the same forward."""
    with torch.no_grad(), FlopCounterMode(display=False) as fc, _PassThrough():
        try:
            model(*args, **kwargs)
        except RuntimeError:  # the failing demo: counted up to the failure, like the trace
            pass
    root = type(model).__name__
    per = {}
    for k, v in fc.get_flop_counts().items():
        if k != "Global":
            per["" if k == root else k[len(root) + 1 :]] = sum(v.values())
    return fc.get_total_flops(), per


def _check_against_reference(model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = trace_model(model, args, kwargs=kwargs)
    total, per = _reference(model, args, kwargs)
    rows = {r["qualname"]: r for r in t.stats()}
    assert rows[""]["flops"] == total
    assert sum(n.flops for n in t.graph.nodes) == total
    assert per, "FlopCounterMode counted no module"
    for q, f in per.items():
        assert rows[q]["flops"] == pytest.approx(f, rel=0.01), q
    for q, r in rows.items():  # modules FlopCounterMode does not list counted none
        if q not in per:
            assert r["flops"] == 0, q
    return total


def _gpt2_small() -> tuple[torch.nn.Module, tuple[Any, ...], dict[str, Any]]:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    return GPT2Model(GPT2Config()).eval(), (torch.randint(0, 1000, (1, 32)),), {"use_cache": False}


def _bert_base() -> tuple[torch.nn.Module, tuple[Any, ...], dict[str, Any]]:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    return (
        BertModel(BertConfig()).eval(),
        (torch.randint(0, 1000, (1, 32)),),
        {"attention_mask": torch.ones(1, 32, dtype=torch.long)},
    )


@pytest.mark.parametrize("build", [_gpt2_small, _bert_base], ids=["gpt2-small", "bert-base"])
def test_flops_equal_flop_counter_mode_on_hf_models(build: Any) -> None:
    model, args, kwargs = build()
    total = _check_against_reference(model, args, kwargs)
    assert total > 5e9  # 12 layers × 768 wide × 32 tokens: ~5.4 GFLOP (2 per multiply-add)


@pytest.mark.parametrize("name", list(DEMOS))
def test_flops_equal_flop_counter_mode_on_gallery_demos(name: str) -> None:
    model, args = build_demo(name)
    _check_against_reference(model, args, {})


def test_flop_counter_mode_alone_misses_the_fused_transformer_path() -> None:
    """Why the reference runs beside a pass-through function mode: without one, nn.TransformerEncoder takes
    its fused fast path, which FlopCounterMode counts as nothing; the trace draws (and counts) the ops run."""
    model, args = build_demo("transformer")
    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        model(*args)
    t = trace_model(model, args)
    encoder = next(r for r in t.stats() if r["qualname"] == "encoder")
    assert encoder["flops"] > 0
    assert "Seq2SeqTransformer.encoder" not in fc.get_flop_counts()


def test_flops_of_a_linear_are_its_multiply_adds_and_bytes_its_output() -> None:
    model = SkipNet().eval()
    x = torch.randn(2, 8)
    t = trace_model(model, x)
    linear = next(n for n in t.graph.nodes if n.name == "linear")
    assert linear.flops == 2 * 2 * 8 * 8  # 2 rows × 8 in × 8 out, a multiply and an add each
    add = next(n for n in t.graph.nodes if n.name == "add")
    assert add.flops == 0  # the registry counts matmul-like ops only
    rows = {r["qualname"]: r for r in t.stats()}
    assert rows["block.fc"]["output_bytes"] == 2 * 8 * 4
    assert rows[""]["output_bytes"] == sum(
        m.nbytes for n in t.graph.nodes if n.kind == "op" for m in n.outputs
    )


def test_meta_device_counts_a_70b_config_without_allocating() -> None:
    from transformers import LlamaConfig, LlamaModel

    cfg = LlamaConfig(
        hidden_size=8192,
        intermediate_size=28672,
        num_hidden_layers=80,
        num_attention_heads=64,
        num_key_value_heads=8,
        vocab_size=32000,
        attn_implementation="eager",
    )
    with torch.device("meta"):
        model = LlamaModel(cfg).eval()
    ids = torch.zeros(1, 16, dtype=torch.long, device="meta")
    kwargs = {"attention_mask": torch.ones(1, 16, dtype=torch.long, device="meta"), "use_cache": False}
    t = trace_model(model, (ids,), kwargs=kwargs)
    assert not t.failed
    total, _ = _reference(model, (ids,), kwargs)
    root = t.stats()[0]
    assert root["flops"] == total
    assert root["params"] > 68e9  # about 69B parameters, none of them allocated
    assert root["param_bytes"] == 4 * root["params"]


def test_reused_module_sums_its_calls() -> None:
    t = trace_model(ReuseNet().eval(), torch.randn(3, 8))
    rows = {r["qualname"]: r for r in t.stats()}
    one_call = 2 * 3 * 8 * 8
    assert rows["fc"]["calls"] == 2 and rows["fc"]["flops"] == 2 * one_call
    assert rows["block"]["calls"] == 3 and rows["block.fc"]["flops"] == 3 * one_call
    assert rows[""]["flops"] == 5 * one_call


def test_flops_off_and_old_traces_say_none(tmp_path: Any) -> None:
    t = trace_model(SkipNet().eval(), torch.randn(2, 8), flops=False)
    assert t.graph.measured == ()
    assert t.stats()[0]["flops"] is None
    # a trace saved before costs were recorded has neither "measured" nor node flops: it loads, flops unknown
    t2 = trace_model(SkipNet().eval(), torch.randn(2, 8))
    data = t2.graph.to_dict()
    del data["measured"]
    for n in data["nodes"]:
        n.pop("flops", None)
    import json

    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    old = load_trace(path)
    assert old.stats()[0]["flops"] is None and old.stats()[0]["params"] == t2.stats()[0]["params"]


def test_costs_survive_json_and_stay_deterministic(tmp_path: Any) -> None:
    model, x = SkipNet().eval(), torch.randn(2, 8)
    a, b = trace_model(model, x), trace_model(model, x)
    assert a.to_json() == b.to_json()
    loaded = load_trace(a.save(tmp_path / "t.json"))
    assert loaded.graph == a.graph and loaded.stats() == a.stats()


def test_timing_gives_every_op_a_median_time_from_separate_runs() -> None:
    model, x = SkipNet().eval(), torch.randn(2, 8)
    untimed = trace_model(model, x)
    timed = trace_model(model, x, timing=True)
    assert untimed.stats()[0]["time_ms"] is None
    assert timed.graph.measured == ("flops", "time")
    ops = [n for n in timed.graph.nodes if n.kind == "op"]
    assert ops and all(n.time_ms is not None and n.time_ms >= 0 for n in ops)
    rows = {r["qualname"]: r for r in timed.stats()}
    assert rows[""]["time_ms"] == pytest.approx(sum(n.time_ms for n in ops), abs=1e-3)
    assert rows["block"]["time_ms"] <= rows[""]["time_ms"]
    # the recorded graph is the same apart from the times
    assert [(n.id, n.name, n.flops) for n in timed.graph.nodes] == [
        (n.id, n.name, n.flops) for n in untimed.graph.nodes
    ]


def test_timing_on_meta_tensors_is_a_clear_error() -> None:
    with torch.device("meta"):
        model = SkipNet().eval()
    with pytest.raises(ValueError, match="timing=True needs real tensors"):
        trace_model(model, torch.zeros(2, 8, device="meta"), timing=True)


def test_timing_a_non_repeatable_forward_warns_and_records_no_times() -> None:
    class Coin(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            self.calls += 1
            return x.relu() if self.calls == 1 else x.sigmoid().tanh()

    with pytest.warns(UserWarning, match="not repeatable"):
        t = trace_model(Coin(), torch.randn(3), timing=True)
    assert t.graph.measured == ("flops",) and t.stats()[0]["time_ms"] is None


def test_a_function_that_counts_only_for_some_ranks_is_measured_for_each() -> None:
    """matmul of two vectors (aten.dot: no formula) first, of two matrices (aten.mm) after: both counted
    right."""

    class VecThenMat(torch.nn.Module):
        def forward(self, v: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
            s = torch.matmul(v, v)
            return torch.matmul(m, m) + s

    args = (torch.randn(4), torch.randn(3, 3))
    t = trace_model(VecThenMat(), args)
    total, _ = _reference(VecThenMat(), args, {})
    assert total == 2 * 3 * 3 * 3
    assert [n.flops for n in t.graph.nodes if n.name == "matmul"] == [0, total]


def test_repeated_call_shapes_reuse_their_count_but_other_arguments_do_not() -> None:
    """The second conv has the same shapes but another stride: counted anew, not taken from the first."""

    class Strides(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(4, 3, 3, 3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a = torch.nn.functional.conv2d(x, self.w, stride=1)
            b = torch.nn.functional.conv2d(x, self.w, stride=2)
            c = torch.nn.functional.conv2d(x, self.w, stride=1)
            return a.sum() + b.sum() + c.sum()

    x = torch.randn(1, 3, 9, 9)
    t = trace_model(Strides(), x)
    convs = [n.flops for n in t.graph.nodes if n.name == "conv2d"]
    assert convs[0] == convs[2] > convs[1] > 0
    total, _ = _reference(Strides(), (x,), {})
    assert sum(convs) == total


def test_tracing_again_measures_nothing_anew_and_counts_the_same(monkeypatch: Any) -> None:
    """What FLOP measuring learnt is kept for the process: a second trace of the same model never pushes
    FlopCounterMode's dispatch mode, and its counts (and JSON) are the first one's."""
    from torch.utils import flop_counter

    model, args = build_demo("gpt")
    first = trace_model(model, args)
    seen: list[Any] = []
    real = flop_counter._FlopCounterMode.__torch_dispatch__

    def spy(self: Any, func: Any, *rest: Any, **kw: Any) -> Any:
        seen.append(func)
        return real(self, func, *rest, **kw)

    monkeypatch.setattr(flop_counter._FlopCounterMode, "__torch_dispatch__", spy)
    second = trace_model(model, args)
    assert seen == []
    assert second.to_json() == first.to_json()
    assert second.stats()[0]["flops"] == _reference(model, args, {})[0] > 0


def test_an_empty_batch_first_does_not_hide_later_flops() -> None:
    """A call on an empty tensor counts none whatever the function: it must not teach the meter that this
    function counts none for those ranks (a later real batch would then be counted as 0)."""

    class Mat(torch.nn.Module):
        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.linalg.multi_dot([a, b, b.T])

    empty = trace_model(Mat(), (torch.randn(0, 6), torch.randn(6, 6)))
    assert empty.stats()[0]["flops"] == 0
    args = (torch.randn(3, 6), torch.randn(6, 6))
    t = trace_model(Mat(), args)
    total, _ = _reference(Mat(), args, {})
    assert total > 0 and t.stats()[0]["flops"] == total


def test_a_function_raising_type_error_runs_once() -> None:
    # FLOP measuring must not take the model's own TypeError for an unhashable call key and run the function
    # a second time under the counter (a second run of code with side effects)
    from torch.overrides import handle_torch_function, has_torch_function

    calls: list[bool] = []

    def step(x: torch.Tensor, fail: bool) -> torch.Tensor:
        if has_torch_function((x,)):
            return handle_torch_function(step, (x,), x, fail)
        calls.append(fail)
        if fail:
            raise TypeError("the model's own TypeError")
        return x + 1

    class Twice(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return step(step(x, False), True)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = trace_model(Twice(), torch.rand(2))
    assert t.failed and "the model's own TypeError" in t.graph.error.message
    assert calls == [False, True]
