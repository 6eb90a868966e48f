"""``check_fits``: a checkpoint of another model (names or shapes) is refused before anything starts (issue 14
M8's ``--resume-from`` half), for classifiers and for language models of non-default sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from raycomp.base.errors import CheckpointError
from raycomp.config import ExperimentConfig
from raycomp.config.recipe import build_model_for
from raycomp.core import State
from raycomp.launch.checkpoint_fit import check_fits
from raycomp.loop.checkpoint import atomic_save
from raycomp.loop.checkpoint_format import checkpoint_payload


def config(tmp_path: Path, **changes) -> ExperimentConfig:
    return ExperimentConfig.from_dict({"storage_path": str(tmp_path), "scaling": {"num_workers": 0}, **changes})


def saved(config: ExperimentConfig, path: Path) -> Path:
    atomic_save(checkpoint_payload(State(build_model_for(config), "1ep")), path)
    return path


def test_a_checkpoint_of_the_same_model_fits(tmp_path):
    cnn = config(tmp_path)
    check_fits(cnn, saved(cnn, tmp_path / "cnn.pt"))


def test_another_number_of_classes_is_refused_naming_the_parameter(tmp_path):
    path = saved(config(tmp_path, model={"name": "cnn", "num_classes": 4}), tmp_path / "four.pt")
    with pytest.raises(CheckpointError, match=r"four\.pt does not fit model cnn \(num_classes 10\): .*checkpoint \[4"):
        check_fits(config(tmp_path), path)


def test_another_architecture_lists_the_first_mismatches(tmp_path):
    path = saved(config(tmp_path), tmp_path / "cnn.pt")
    with pytest.raises(CheckpointError, match=r"does not fit model resnet20 .*not in the checkpoint.*and \d+ more"):
        check_fits(config(tmp_path, model={"name": "resnet20"}), path)


def test_a_language_model_of_non_default_sizes_fits_its_own_config_only(tmp_path):
    small = {"name": "gpt", "d_model": 32, "n_layers": 1, "n_heads": 2}
    text = {"name": "stdlib_text", "seq_len": 16}
    gpt_small = config(tmp_path, model=small, data=text)
    path = saved(gpt_small, tmp_path / "gpt.pt")
    check_fits(gpt_small, path)
    with pytest.raises(CheckpointError, match=r"wte\.weight: checkpoint \[256, 32\], model \[256, 64\]"):
        check_fits(config(tmp_path, model={**small, "d_model": 64}, data=text), path)
