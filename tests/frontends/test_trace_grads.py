"""trace_model(grads=loss_fn): each parameter's gradient norm from one backward pass; .grad left alone."""

from __future__ import annotations

import copy

import pytest
import torch

from torchvista_dash import load_trace, trace_model
from torchvista_dash.frontends.trace.grads import GradsError
from torchvista_dash.model.metrics import no_gradient, values_of


def _gpt2():  # type: ignore[no-untyped-def]
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=16)
    return GPT2LMHeadModel(cfg).eval(), torch.randint(0, 64, (1, 6))


class WithUnused(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.spare = torch.nn.Linear(4, 4)  # never called: no gradient reaches it
        self.frozen = torch.nn.Linear(4, 4).requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.frozen(torch.tanh(self.fc(x)))


def test_gradient_norms_match_a_backward_pass_and_grad_is_left_as_it_was(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model, ids = _gpt2()
    wte = model.transformer.wte.weight
    before = torch.full_like(wte, 3.0)
    wte.grad = before  # a gradient the user had: kept, same object, same values
    t = trace_model(model, ids, {"use_cache": False}, grads=lambda out: out.logits.sum())
    assert wte.grad is before and torch.equal(wte.grad, torch.full_like(wte, 3.0))
    assert all(p.grad is None for n, p in model.named_parameters() if n != "transformer.wte.weight")
    ref = copy.deepcopy(model)
    ref.zero_grad(set_to_none=True)
    ref(ids, use_cache=False).logits.sum().backward()
    norms = dict(t.graph.grads)
    for name, p in ref.named_parameters():
        assert norms[name] == pytest.approx(p.grad.norm().item(), rel=1e-5), name
    assert norms["lm_head.weight"] == norms["transformer.wte.weight"]  # a tied weight under both names
    assert load_trace(t.save(tmp_path / "g.json")).graph == t.graph
    v = values_of(t.graph, "grad_norm")
    assert v.call["mod:transformer.h.0"] == pytest.approx(
        sum(p.grad.norm().item() ** 2 for _, p in ref.transformer.h[0].named_parameters()) ** 0.5, rel=1e-5
    )
    fig = t.figure(color_by="grad_norm")
    assert next(tr for tr in fig.data if tr.name == "colorbar").marker.colorbar.title.text == "gradient norm"


def test_parameters_without_a_gradient_are_listed_and_marked() -> None:
    from dash import html

    from torchvista_dash.app.actions.details import details
    from torchvista_dash.app.traces import registry

    t = trace_model(WithUnused(), torch.randn(3, 4), grads=lambda out: out.sum())
    assert no_gradient(t.graph) == ["spare.weight", "spare.bias"]  # frozen ones are not trainable: absent
    assert "frozen.weight" not in dict(t.graph.grads)
    labels = next(tr for tr in t.figure(depth=0).data if tr.name == "nodes:labels")
    hover = labels.hovertext[list(labels.customdata).index("mod:(root)")]
    assert "no gradient: 2: spare.weight, spare.bias" in hover
    text = str(html.Div(details(registry.register(t), "mod:(root)")).to_plotly_json())
    assert "no gradient" in text and "spare.bias" in text and "gradient norm" in text


def test_a_loss_that_is_no_scalar_says_what_to_return() -> None:
    with pytest.raises(GradsError, match="must return a scalar tensor"):
        trace_model(WithUnused(), torch.randn(3, 4), grads=lambda out: out)
    with pytest.raises(ValueError, match="grads="):
        trace_model(WithUnused(), torch.randn(3, 4)).figure(color_by="grad_norm")


def test_values_and_grads_leave_the_model_and_torch_as_they_were() -> None:
    from support_models import BNNet, assert_same_model_state, global_state, model_state

    model = BNNet().train()  # a training-mode BatchNorm updates its running stats in every forward pass
    x = torch.randn(4, 3, 8, 8)
    before, glob = model_state(model), global_state()
    t = trace_model(model, x, values=True, grads=lambda out: out.square().mean())
    assert_same_model_state(before, model_state(model))
    assert global_state() == glob
    assert t.graph.grads and all(p.grad is None for p in model.parameters())
