"""Small models for tests (read-only for everyone): synthetic ones covering tracer features, and
Hugging Face models built from tiny configs (random weights, no downloads).

Each ``build_*`` returns ``(model, args, kwargs)`` ready for ``trace_model(model, args, kwargs=kwargs)``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn.modules import module as nn_module

Example = tuple[nn.Module, tuple[Any, ...], dict[str, Any]]

GLOBAL_SCALE = torch.full((8,), 0.5)  # a tensor from nowhere: becomes a constant node


# ---- synthetic models ---------------------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc(x))


class SkipNet(nn.Module):
    """A residual connection: the input reaches the add directly and through a block."""

    def __init__(self) -> None:
        super().__init__()
        self.block = Block()
        self.norm = nn.LayerNorm(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.block(x))


class ReuseNet(nn.Module):
    """One Linear called twice, and a loop calling one block N times."""

    def __init__(self, n: int = 3) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.block = Block()
        self.n = n

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc(self.fc(x))
        for _ in range(self.n):
            x = self.block(x)
        return x


class MultiIO(nn.Module):
    """Two inputs, two outputs."""

    def __init__(self) -> None:
        super().__init__()
        self.fa = nn.Linear(8, 4)
        self.fb = nn.Linear(6, 4)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        ha, hb = self.fa(a), self.fb(b)
        return ha + hb, ha * hb


@dataclass
class Pair:
    left: torch.Tensor
    right: torch.Tensor


class StructIO(nn.Module):
    """A dict and a dataclass in; a dict holding a dataclass and a list out."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, batch: dict[str, Any], pair: Pair) -> dict[str, Any]:
        h = self.fc(batch["x"]) + pair.left
        return {"h": h, "parts": [h.sum(-1), pair.right * 2], "pair": Pair(left=h, right=pair.right)}


class KwargsNet(nn.Module):
    """Keyword-only inputs (``mask``) and a non-tensor keyword (``scale``)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(
        self, x: torch.Tensor, *, mask: torch.Tensor | None = None, scale: float = 1.0
    ) -> torch.Tensor:
        y = self.fc(x) * scale
        if mask is not None:
            y = y.masked_fill(mask, 0.0)
        return y


class ConstNet(nn.Module):
    """A module-level global tensor and a plain tensor attribute (not a buffer): both are constants."""

    def __init__(self) -> None:
        super().__init__()
        self.offset = torch.ones(8)  # plain attribute, not registered
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x) * GLOBAL_SCALE + self.offset


class DirectParamNet(nn.Module):
    """Parameters used directly (x @ self.w + self.b), .T, __getitem__ and __setitem__."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 4))
        self.b = nn.Parameter(torch.zeros(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x @ self.w + self.b  # (2, 4)
        z = y.T  # (4, 2)
        first = z[0]  # (2,)
        y[:, 0] = first  # in-place write into y
        return y


class InPlaceNet(nn.Module):
    """In-place ops: relu_, add_, +=; each becomes the new producer of its tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        y.relu_()
        y.add_(1.0)
        y += x
        return y


class CatInner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)  # (2, 4)
        return torch.cat([h, x], dim=0)  # (2, 4) with (2, 8) on dim 0: raises


class CatOuter(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pre = nn.Linear(8, 8)
        self.inner = CatInner()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(self.pre(x))


class FailingNet(nn.Module):
    """A torch.cat with mismatched shapes two modules deep: the forward pass raises."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Linear(8, 8)
        self.outer = CatOuter()
        self.head = nn.Linear(8, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.outer(self.stem(x)))


class BNNet(nn.Module):
    """Conv + BatchNorm (train mode updates running stats even under no_grad) + dropout."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(torch.relu(self.bn(self.conv(x)))).mean(dim=(2, 3))


class MLP(nn.Module):
    def __init__(self, dims: tuple[int, ...] = (8, 16, 4)) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            *[m for a, b in zip(dims, dims[1:], strict=False) for m in (nn.Linear(a, b), nn.ReLU())]
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class ResidualLayer(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.nn.functional.gelu(self.fc(self.norm(x)))


class Tower(nn.Module):
    """``n`` residual layers: every op open, a column of about 4 boxes and 3 clusters per layer."""

    def __init__(self, n: int = 16) -> None:
        super().__init__()
        self.layers = nn.ModuleList(ResidualLayer() for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def _x(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


SYNTHETIC: dict[str, Any] = {
    "skip": lambda: (SkipNet(), (_x(2, 8),), {}),
    "reuse": lambda: (ReuseNet(), (_x(2, 8),), {}),
    "multi_io": lambda: (MultiIO(), (_x(2, 8), _x(2, 6)), {}),
    "struct_io": lambda: (StructIO(), ({"x": _x(2, 8)}, Pair(_x(2, 8), _x(2, 3))), {}),
    "kwargs": lambda: (KwargsNet(), (_x(2, 8),), {"mask": _x(2, 8) > 0, "scale": 2.0}),
    "const": lambda: (ConstNet(), (_x(2, 8),), {}),
    "direct_param": lambda: (DirectParamNet(), (_x(2, 8),), {}),
    "in_place": lambda: (InPlaceNet(), (_x(2, 8),), {}),
    "bn_train": lambda: (BNNet().train(), (_x(2, 3, 6, 6),), {}),
    "mlp": lambda: (MLP(), (_x(2, 8),), {}),
}


def build_synthetic(name: str) -> Example:
    torch.manual_seed(0)
    return SYNTHETIC[name]()


# ---- Hugging Face models from tiny configs ---------------------------------------------------------
def _ids(batch: int, seq: int, vocab: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(seed))


def build_gpt2(n_layer: int = 2, n_embd: int = 64, seq: int = 8) -> Example:
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    m = GPT2Model(GPT2Config(n_layer=n_layer, n_embd=n_embd, n_head=2, vocab_size=128, n_positions=64)).eval()
    return m, (_ids(1, seq, 128),), {"use_cache": False}


def build_bert(seq: int = 8) -> Example:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=128,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=64,
    )
    m = BertModel(cfg).eval()
    return m, (_ids(1, seq, 128),), {"attention_mask": torch.ones(1, seq, dtype=torch.long)}


def build_t5(seq: int = 8) -> Example:
    from transformers import T5Config, T5Model

    torch.manual_seed(0)
    cfg = T5Config(
        vocab_size=128,
        d_model=64,
        d_kv=16,
        d_ff=128,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        decoder_start_token_id=0,
    )
    m = T5Model(cfg).eval()
    return m, (_ids(1, seq, 128),), {"decoder_input_ids": _ids(1, 4, 128, seed=1), "use_cache": False}


def build_llama(seq: int = 8) -> Example:
    from transformers import LlamaConfig, LlamaModel

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    m = LlamaModel(cfg).eval()
    return m, (_ids(1, seq, 128),), {"use_cache": False}


def build_vit() -> Example:
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    cfg = ViTConfig(
        image_size=32,
        patch_size=8,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
    )
    m = ViTModel(cfg).eval()
    return m, (_x(1, 3, 32, 32),), {}


def build_whisper() -> Example:
    """A small Whisper, the KV cache left on (its default): the cache is one output of eight tensors."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    cfg = WhisperConfig(
        vocab_size=128,
        d_model=32,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        num_mel_bins=16,
        max_source_positions=16,
        max_target_positions=32,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=1,
    )
    m = WhisperForConditionalGeneration(cfg).eval()
    return m, (), {"input_features": _x(1, 16, 32), "decoder_input_ids": _ids(1, 4, 128)}


def build_clip() -> Example:
    """A small CLIPModel: a text and a vision tower side by side."""
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(0)
    cfg = CLIPConfig(
        text_config={
            "vocab_size": 128,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "max_position_embeddings": 16,
            "bos_token_id": 0,
            "eos_token_id": 2,
            "pad_token_id": 1,
        },
        vision_config={
            "image_size": 32,
            "patch_size": 8,
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
        },
        projection_dim=16,
    )
    m = CLIPModel(cfg).eval()
    return (
        m,
        (),
        {
            "input_ids": _ids(1, 8, 128),
            "pixel_values": _x(1, 3, 32, 32),
            "attention_mask": torch.ones(1, 8, dtype=torch.long),
        },
    )


class TransformerModel(nn.Module):
    """nn.Transformer with embeddings and a head (sequence-to-sequence)."""

    def __init__(self, vocab: int = 64, d: int = 32) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.transformer = nn.Transformer(
            d_model=d,
            nhead=2,
            num_encoder_layers=2,
            num_decoder_layers=2,
            dim_feedforward=64,
            dropout=0.0,
            batch_first=True,
        )
        self.head = nn.Linear(d, vocab)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        return self.head(self.transformer(self.embed(src), self.embed(tgt)))


class LSTMModel(nn.Module):
    """Embedding → 2-layer LSTM → Linear on the last step."""

    def __init__(self, vocab: int = 64, d: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, 24, num_layers=2, batch_first=True)
        self.head = nn.Linear(24, 3)

    def forward(self, ids: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        out, (h, c) = self.lstm(self.embed(ids))
        return self.head(out[:, -1]), (h, c)


def build_nn_transformer() -> Example:
    torch.manual_seed(0)
    return TransformerModel().eval(), (_ids(2, 6, 64), _ids(2, 5, 64, seed=1)), {}


def build_lstm() -> Example:
    torch.manual_seed(0)
    return LSTMModel().eval(), (_ids(2, 7, 64),), {}


REAL_MODELS: dict[str, Any] = {
    "gpt2": build_gpt2,
    "bert": build_bert,
    "t5": build_t5,
    "llama": build_llama,
    "vit": build_vit,
    "nn_transformer": build_nn_transformer,
    "lstm": build_lstm,
}


# ---- state helpers: what tracing must leave exactly as it found it -----------------------------------
def global_state() -> dict[str, Any]:
    """Everything global the tracer touches."""
    return {
        "hooks": [
            dict(getattr(nn_module, n))
            for n in (
                "_global_forward_hooks",
                "_global_forward_pre_hooks",
                "_global_forward_hooks_always_called",
                "_global_backward_hooks",
                "_global_backward_pre_hooks",
            )
        ],
        "modes": torch._C._len_torch_function_stack(),
        "mode_enabled": torch._C._is_torch_function_mode_enabled(),
        "grad": torch.is_grad_enabled(),
        "profile": sys.getprofile(),
    }


def model_state(model: torch.nn.Module) -> dict[str, Any]:
    return {
        "training": [m.training for m in model.modules()],
        "params": {k: (id(p), p.requires_grad, p.detach().clone()) for k, p in model.named_parameters()},
        "buffers": {k: (id(b), b.detach().clone()) for k, b in model.named_buffers()},
        "hooks": [
            (dict(m._forward_hooks), dict(m._forward_pre_hooks), dict(m._backward_hooks))
            for m in model.modules()
        ],
    }


def assert_same_model_state(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert before["training"] == after["training"]
    assert before["hooks"] == after["hooks"]
    assert before["params"].keys() == after["params"].keys()
    for k, (pid, rg, val) in before["params"].items():
        pid2, rg2, val2 = after["params"][k]
        assert (pid, rg) == (pid2, rg2) and torch.equal(val, val2), k
    assert before["buffers"].keys() == after["buffers"].keys()
    for k, (bid, val) in before["buffers"].items():
        bid2, val2 = after["buffers"][k]
        assert bid == bid2 and torch.equal(val, val2), k


class DivLayer(nn.Module):
    """A residual MLP layer; with ``broken`` set it divides by a norm that is zero (NaN and Inf follow)."""

    def __init__(self, width: int, broken: bool = False) -> None:
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.broken = broken

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.fc(x))
        if self.broken:
            scale = h.sum(dim=-1, keepdim=True) * 0.0  # a norm that came out zero
            h = h / scale
        return x + h


class NaNTower(nn.Module):
    """12 layers; layer 7 divides by zero, so its output and everything after it holds NaN/Inf."""

    def __init__(self, width: int = 16, layers: int = 12, broken: int = 7) -> None:
        super().__init__()
        self.layers = nn.ModuleList(DivLayer(width, i == broken) for i in range(layers))
        self.head = nn.Linear(width, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return self.head(x)
