"""Tiny language-model pieces for the transformer-method tests: a small GPT, token batches, a Trainer."""

from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from raycomp import Trainer
from raycomp.core import Algorithm
from raycomp.models import LanguageModel
from raycomp.models.gpt import GPT, GPTConfig

TINY = GPTConfig(seq_len=16, d_model=32, n_layers=2, n_heads=4)
# An experiment's model and data a transformer surgery finds its targets in (it refuses the default cnn's).
LANGUAGE_MODEL_YAML = (
    "model: {name: gpt, d_model: 32, n_layers: 1, n_heads: 2}\ndata: {name: stdlib_text, seq_len: 32}\n"
)


def tiny_lm(seed: int = 0, config: GPTConfig = TINY) -> LanguageModel:
    torch.manual_seed(seed)
    return LanguageModel(GPT(config))


def token_dataset(n: int = 32, length: int = 16, seed: int = 0) -> TensorDataset:
    """Sequences of a learnable pattern (runs counting up by a per-sequence step), target = next token."""
    generator = torch.Generator().manual_seed(seed)
    starts = torch.randint(0, 256, (n, 1), generator=generator)
    steps = torch.randint(1, 4, (n, 1), generator=generator)
    stream = (starts + steps * torch.arange(length + 1)) % 256
    return TensorDataset(stream[:, :-1], stream[:, 1:])


def token_loader(n: int = 32, length: int = 16, batch_size: int = 16, seed: int = 0) -> DataLoader:
    dataset = token_dataset(n, length, seed)
    return DataLoader(dataset, batch_size, sampler=DistributedSampler(dataset, num_replicas=1, rank=0, seed=seed))


def lm_trainer(
    tmp_path: Path | None, algorithms: list[Algorithm], seed: int = 0, model: LanguageModel | None = None, **kwargs
) -> Trainer:
    """2 epochs of 2 batches; AdamW built *before* any surgery (as a user passing optimizers would)."""
    model = model if model is not None else tiny_lm(seed)
    kwargs.setdefault("save_folder", None if tmp_path is None else tmp_path / "ckpt")
    kwargs.setdefault("max_duration", "2ep")
    return Trainer(
        model,
        token_loader(),
        eval_dataloader=token_loader(n=16),
        algorithms=algorithms,
        optimizers=torch.optim.AdamW(model.parameters(), lr=3e-3),
        device="cpu",
        seed=seed,
        progress_bar=False,
        **kwargs,
    )


def weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    wa, wb = weights(a), weights(b)
    return wa.keys() == wb.keys() and all(torch.equal(v, wb[k]) for k, v in wa.items())
