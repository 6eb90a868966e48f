"""Experiment files for the config tests: a full YAML, a sweep stub, and helpers that expect ConfigErrors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from raycomp.config import ConfigError
from raycomp.preflight.experiment import load_checked_experiment

FULL = """\
name: sb-cifar
seed: 7
model:
  name: resnet20
  num_classes: 10
data:
  name: cifar10
  root: /data/cifar
  batch_size: 64
  num_workers: 2
optimizer:
  name: sgd
  lr: 1e-1
  nesterov: true
schedule:
  name: cosine
  warmup_fraction: 0.1
max_duration: 20ep
eval:
  interval: 500ba
precision: amp_bf16
grad_accum: 2
algorithms:
  selective_backprop:
    start: 0.3
    keep: 0.5
scaling:
  num_workers: 2
  use_gpu: true
checkpoint:
  interval: 2ep
  num_to_keep: null
failure:
  max_failures: -1
storage_path: runs/sb
tracking:
  tracking_uri: file:./mlruns
sweep:
  space:
    algorithms.selective_backprop.keep: {grid: [0.3, 0.5, 0.7]}
    optimizer.lr: {loguniform: [1e-3, 1e-1]}
    data.batch_size: {randint: [32, 129]}
  num_samples: 2
  scheduler: {name: asha, grace_period: 2, max_t: 20}
  max_concurrent_trials: 4
"""


def write(tmp_path: Path, text: str, name: str = "exp.yaml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def problems(path: str, *overrides: str) -> list[str]:
    """What a command refuses the experiment for: its config, then its workload check (``raycomp.preflight``)."""
    with pytest.raises(ConfigError) as info:
        load_checked_experiment(path, overrides=list(overrides))
    assert str(info.value) == "\n".join(info.value.problems)
    return info.value.problems


def only_problem(path: str, *overrides: str) -> str:
    found = problems(path, *overrides)
    assert len(found) == 1, found
    return found[0]


SWEEP_BASE = """\
algorithms:
  selective_backprop: {}
sweep:
  space:
"""
