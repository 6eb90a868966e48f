"""A sweep whose saved state names a checkpoint Tune's retention deleted resumes (raycomp.launch.sweep.
retired_checkpoints). Tune deletes a trial's checkpoints beyond ``num_to_keep`` when it registers a newer one and
saves its state only later; a driver that died in between left a state naming a deleted checkpoint, and every
restore of that trial failed ("does not exist on storage anymore") although its folder held newer ones (seen in
tests/launch/test_crash_resume.py's run at ff02393). Here a real Tune experiment is left in that state by hand:
its trial failed after three checkpoints, then the one its state names is moved to the next number, as if the
trial had checkpointed once more and Tune had deleted the older one before its driver died."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray


def checkpointing_trial():
    """A trial of three checkpoints, each holding its number, then a failure on the first attempt. Restored, it
    finishes and reports the number in the checkpoint it was given. (Made here, so that Ray's workers get it by
    value: they cannot import a test module.)"""

    def trial(config):
        import json
        import tempfile
        from pathlib import Path

        from ray import tune

        restored = tune.get_checkpoint()
        if restored is not None:
            with restored.as_directory() as folder:
                tune.report({"restored_from": json.loads((Path(folder) / "step.json").read_text())})
            return
        for step in range(3):
            with tempfile.TemporaryDirectory() as folder:
                (Path(folder) / "step.json").write_text(json.dumps(step))
                tune.report({"step": step}, checkpoint=tune.Checkpoint.from_directory(folder))
        raise RuntimeError("the trial fails after its third checkpoint")

    return trial


def left_as_a_killed_driver_leaves_it(storage: Path) -> Path:
    """The experiment's folder, its trial's named checkpoint (checkpoint_000002) moved to checkpoint_000003."""
    from ray import tune

    run_config = tune.RunConfig(
        name="retired",
        storage_path=str(storage),
        verbose=0,
        checkpoint_config=tune.CheckpointConfig(num_to_keep=1),
    )
    [result] = tune.Tuner(checkpointing_trial(), run_config=run_config).fit()
    assert result.error is not None
    [trial_folder] = [path for path in (storage / "retired").iterdir() if path.is_dir()]
    assert sorted(path.name for path in trial_folder.glob("checkpoint_*")) == ["checkpoint_000002"]
    (trial_folder / "checkpoint_000002").rename(trial_folder / "checkpoint_000003")
    return storage / "retired"


def resumed(folder: Path):
    from ray import tune

    [result] = tune.Tuner.restore(str(folder), trainable=checkpointing_trial(), resume_errored=True).fit()
    return result


def test_a_trial_whose_named_checkpoint_tune_deleted_resumes_from_the_newest_it_kept(tmp_path, local_ray):
    from raycomp.launch.sweep.retired_checkpoints import stand_in_for_retired_checkpoints

    folder = left_as_a_killed_driver_leaves_it(tmp_path / "storage")
    untouched = tmp_path / "untouched"
    shutil.copytree(folder, untouched)
    [written] = stand_in_for_retired_checkpoints(str(folder))
    assert Path(written).name == "checkpoint_000002"
    assert stand_in_for_retired_checkpoints(str(folder)) == []  # once is enough
    result = resumed(folder)
    assert result.error is None and result.metrics["restored_from"] == 2
    failed = resumed(untouched)  # Tune's own restore, without the stand-in: the trial cannot resume
    assert "does not exist on storage anymore" in str(failed.error)
