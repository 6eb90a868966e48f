"""A continued or extended sweep's arms (no Ray): identity, stable config ids and draws, what is missing."""

from __future__ import annotations

import json

import pyarrow.fs
import pytest
import yaml
from ray import tune

from raycomp.base.errors import ConfigError
from raycomp.config import ExperimentConfig
from raycomp.config.arm import Arm
from raycomp.launch.sweep.ledger import missing_arms, relabeled, result_arm
from raycomp.launch.sweep.space import sweep_arms

SB = "algorithms.selective_backprop"


def config(grid: list[float], repeats: int = 1, num_samples: int = 1) -> ExperimentConfig:
    return ExperimentConfig.from_dict(
        {
            "name": "ledger",
            "algorithms": {"selective_backprop": {}},
            "sweep": {
                "space": {f"{SB}.keep": {"grid": grid}, f"{SB}.scale_factor": {"uniform": [0.5, 1.0]}},
                "repeats": repeats,
                "num_samples": num_samples,
            },
        }
    )


def test_a_grown_grid_keeps_old_ids_and_draws_and_misses_only_new_arms():
    old = sweep_arms(config([0.25, 0.75]))
    grown = sweep_arms(config([0.25, 0.5, 0.75], repeats=2, num_samples=1))
    by_keep = {arm.overrides[f"{SB}.keep"]: arm for arm in old if arm.variant == "method"}
    new = relabeled(grown, old)
    for arm in new:  # a configuration trained before keeps its id and its drawn scale_factor
        keep = arm.overrides[f"{SB}.keep"]
        if keep in by_keep:
            assert arm.config_id == by_keep[keep].config_id
            assert arm.overrides == by_keep[keep].overrides
    ids = {arm.overrides[f"{SB}.keep"]: arm.config_id for arm in new}
    assert len(set(ids.values())) == len(ids) == 4  # baseline (None) and three methods, no id shared
    assert ids[0.5] not in {arm.config_id for arm in old}
    missing = missing_arms(new, old)
    assert len(missing) == len(new) - len(old) == 8 - 3
    assert {arm.key() for arm in missing}.isdisjoint(arm.key() for arm in old)


def test_arm_identity_is_what_it_trains_not_its_id():
    arm = Arm("method", "method-1", {"a": 1, "b": None})
    assert arm.key() == arm.replace(config_id="method-7", overrides={"a": 1}).key()
    assert arm.key() != arm.replace(repeat=1).key()
    assert arm.key(with_repeat=False) == arm.replace(repeat=1).key(with_repeat=False)
    assert Arm.from_tune(arm.as_tune()) == arm  # through Tune's config and back


def test_an_arm_is_frozen_and_knows_its_variants():
    import dataclasses

    arm = Arm("baseline")
    assert arm.config_id == "baseline" and arm.repeat == 0 and arm.budget is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        arm.repeat = 1  # type: ignore[misc]
    with pytest.raises(ValueError, match="variant is one of"):
        Arm("other")


def test_a_drawn_value_that_breaks_a_rule_between_keys_is_refused_before_the_sweep(tmp_path, capsys):
    """Overlapping random ranges pass the config's bound checks; seed 0 then draws start 0.79 above end 0.64."""
    from raycomp.cli.tune import main
    from raycomp.launch.sweep.space import check_arms

    space = {f"{SB}.start": {"uniform": [0.0, 0.8]}, f"{SB}.end": {"uniform": [0.6, 1.0]}}
    data = {
        "name": "drawn",
        "storage_path": str(tmp_path),
        "scaling": {"num_workers": 0},
        "algorithms": {"selective_backprop": {"start": 0.1, "end": 0.9}},
        "sweep": {"space": space, "num_samples": 6},
    }
    refused = rf"sweep configuration method-1 \({SB}\.start=0\.7919, {SB}\.end=0\.6389\): .*start < end"
    with pytest.raises(ConfigError, match=refused):
        check_arms(ExperimentConfig.from_dict(data))
    path = tmp_path / "drawn.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))  # draws follow the space's order
    assert main([str(path)]) == 2
    assert "sweep configuration method-1" in capsys.readouterr().err
    assert not (tmp_path / "mlflow.db").exists()  # refused before the sweep's MLflow run or Ray started
    disjoint = {f"{SB}.start": {"uniform": [0.0, 0.5]}, f"{SB}.end": {"uniform": [0.6, 1.0]}}
    check_arms(ExperimentConfig.from_dict({**data, "sweep": {"space": disjoint, "num_samples": 6}}))


def test_a_lost_trial_is_adopted_only_when_it_trained_the_same_config(tmp_path):
    """Defect 2: adoption matched by arm alone, so a sweep under another config took the old trials' results."""
    import json

    from raycomp.launch.sweep.ledger import CONFIG_DIGEST, lost_trial_folder
    from raycomp.launch.training_record import training_config_digest

    first = config([0.5])
    arm = next(arm for arm in sweep_arms(first) if arm.variant == "method")
    digest = training_config_digest(first)
    other = training_config_digest(first.with_overrides({"optimizer.lr": 0.01}))
    assert digest != other and digest == training_config_digest(config([0.5, 0.75], repeats=3))  # sweep: not
    for trial, recorded in (("old", other), ("older", None), ("same", digest)):
        folder = tmp_path / "sweep" / trial
        folder.mkdir(parents=True)
        params = {"arm": arm.as_tune()} | ({CONFIG_DIGEST: recorded} if recorded else {})
        (folder / "params.json").write_text(json.dumps(params))
    found = lost_trial_folder(str(tmp_path / "sweep"), arm, "new", digest)
    assert found is not None and found.endswith("/same")
    (tmp_path / "sweep" / "same" / "params.json").unlink()
    assert lost_trial_folder(str(tmp_path / "sweep"), arm, "new", digest) is None


def test_a_trial_whose_params_json_a_full_disk_cut_to_nothing_is_adopted_from_tunes_pickle(tmp_path):
    """L4 of the 2026-12-01 probe: a full disk cut a finished trial's ``params.json`` to 0 bytes; ``--resume``
    could not adopt it and trained its arm again. Tune's ``params.pkl`` beside it holds the same config."""
    import ray.cloudpickle

    from raycomp.launch.sweep.ledger import CONFIG_DIGEST, lost_trial_folder
    from raycomp.launch.training_record import training_config_digest

    first = config([0.5])
    arm = next(arm for arm in sweep_arms(first) if arm.variant == "method")
    digest = training_config_digest(first)
    folder = tmp_path / "sweep" / "cut"
    folder.mkdir(parents=True)
    (folder / "params.json").write_bytes(b"")
    (folder / "params.pkl").write_bytes(ray.cloudpickle.dumps({"arm": arm.as_tune(), CONFIG_DIGEST: digest}))
    found = lost_trial_folder(str(tmp_path / "sweep"), arm, "new", digest)
    assert found is not None and found.endswith("/cut")
    (folder / "params.pkl").write_bytes(b"\x80\x05cut")  # both damaged: not adopted, and no error
    assert lost_trial_folder(str(tmp_path / "sweep"), arm, "new", digest) is None


def test_local_mode_trials_are_retried_by_tune_and_worker_groups_by_their_trainer():
    """Defect 3: Tune was always given max_failures=0, so failure.max_failures did nothing in local mode."""
    from raycomp.launch.sweep.tuner import trial_retries

    local = config([0.5]).with_overrides({"failure.max_failures": 2, "scaling.num_workers": 0})
    assert trial_retries(local) == 2
    assert trial_retries(local.with_overrides({"scaling.num_workers": 2})) == 0


def test_a_trial_that_failed_first_has_its_arm_read_from_its_folder_on_the_results_own_filesystem(tmp_path):
    """A trial that never reported has no config in its result; its arm is in its folder's ``params.json``. On a
    bucket ``result.path`` is the path inside it (no ``s3://``): a folder under a filesystem of its own stands in."""
    arm = Arm("method", "method-2", {"algorithms.selective_backprop.keep": 0.25}, repeat=1)
    (tmp_path / "sweep" / "trial_1").mkdir(parents=True)
    (tmp_path / "sweep" / "trial_1" / "params.json").write_text(json.dumps({"arm": arm.as_tune()}))
    bucket = pyarrow.fs.SubTreeFileSystem(str(tmp_path), pyarrow.fs.LocalFileSystem())
    failed_first = tune.Result(
        metrics={}, checkpoint=None, error=None, path="sweep/trial_1", _storage_filesystem=bucket
    )
    assert failed_first.config is None
    assert result_arm(failed_first) == arm
