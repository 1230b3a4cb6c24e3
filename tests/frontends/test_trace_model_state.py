"""What tracing restores on the model, and what it reports instead of restoring (issue 10, items 13 and 19).

Restored: module ``__dict__`` entries (attributes set, added, deleted), parameter/buffer/submodule tables,
a swapped ``.data``, buffer values with the buffer objects kept (inference-mode ones too). Reported, not
restored: values written into a parameter in place (that would need a copy of every weight).
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from torchvista_dash import trace_model


def _model_facts(m: nn.Module) -> dict[str, object]:
    return {
        "dicts": [(q, {k: id(v) for k, v in vars(mod).items()}) for q, mod in m.named_modules()],
        "params": {k: (id(p), p.detach().clone()) for k, p in m.named_parameters()},
        "buffers": {k: (id(b), b.detach().clone()) for k, b in m.named_buffers()},
        "modules": {q: id(mod) for q, mod in m.named_modules()},
        "state_keys": list(m.state_dict()),
    }


def _assert_same(before: dict[str, object], after: dict[str, object]) -> None:
    assert after["dicts"] == before["dicts"]
    assert after["modules"] == before["modules"]
    assert after["state_keys"] == before["state_keys"]
    for key in ("params", "buffers"):
        b, a = before[key], after[key]
        assert isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
        for k in b:
            assert a[k][0] == b[k][0] and torch.equal(a[k][1], b[k][1]), k


class Mutating(nn.Module):
    """Changes its own attributes, buffers and submodules in forward, as some models do on a first call."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)
        self.flag = True
        self.calls = 0
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1  # attribute changed
        self.cache = x.detach()  # attribute added (a tensor)
        del self.flag  # attribute deleted
        if not hasattr(self, "pos"):  # buffer registered on the first call (item 19)
            self.register_buffer("pos", torch.arange(4.0), persistent=False)
        self.extra = nn.Identity()  # submodule added
        self.head = nn.Linear(4, 2)  # submodule replaced
        self.fc.weight.data = torch.zeros(4, 4)  # the whole tensor swapped: restorable cheaply
        self.scale.mul_(3)  # buffer written in place
        del self.fc.bias  # a parameter deleted
        self.fc.register_parameter("bias", None)
        return self.head(self.extra(x * self.scale + self.pos))


def test_attributes_buffers_submodules_added_or_deleted_in_forward_are_restored() -> None:
    model = Mutating()
    before = _model_facts(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to report: everything was restored
        t = trace_model(model, torch.rand(2, 4))
    assert t.error is None
    _assert_same(before, _model_facts(model))
    assert model.calls == 0 and model.flag is True and not hasattr(model, "cache")
    assert "pos" not in dict(model.named_buffers()) and "pos" not in model._non_persistent_buffers_set
    # the first-call path runs again on the next trace: the same graph
    a = trace_model(model, torch.ones(2, 4)).graph.to_json()
    assert a == trace_model(model, torch.ones(2, 4)).graph.to_json()
    # and the model still works as before
    assert model(torch.rand(2, 4)).shape == (2, 2)


class WritesWeights(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(3, 3)
        self.k = nn.Linear(3, 3)
        self.untouched = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.l.weight.data.fill_(7)  # through .data: the parameter's version counter does not move
        self.k.bias.add_(1)  # directly: the version counter moves
        return self.untouched(self.k(self.l(x)))


def test_in_place_parameter_writes_are_reported_by_name_and_not_copied() -> None:
    model = WritesWeights()
    untouched = model.untouched.weight.detach().clone()
    with pytest.warns(UserWarning, match=r"wrote into parameter\(s\) k\.bias, l\.weight in place") as rec:
        t = trace_model(model, torch.rand(1, 3))
    assert t.error is None
    assert "untouched" not in str(rec[0].message)
    assert torch.all(model.l.weight == 7)  # as documented: the values stay
    assert torch.equal(model.untouched.weight, untouched)


def test_reading_weights_and_writing_activations_in_place_is_not_reported() -> None:
    class ReLUInPlace(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l = nn.Linear(3, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.l(x)
            y.relu_()
            return y.add_(self.l.bias)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert trace_model(ReLUInPlace(), torch.rand(2, 3)).error is None


def test_a_model_built_under_inference_mode_keeps_its_buffer_objects() -> None:
    with torch.inference_mode():
        model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)).eval()
        model.register_buffer("offset", torch.full((4,), 0.5))
    before = {k: (b, b.clone()) for k, b in model.named_buffers()}
    assert all(b.is_inference() for b, _ in before.values())
    t = trace_model(model, torch.rand(3, 4))
    assert t.error is None and t.graph.op_count >= 2
    after = dict(model.named_buffers())
    for k, (b, val) in before.items():
        assert after[k] is b and after[k].is_inference() and torch.equal(after[k], val), k
