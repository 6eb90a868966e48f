"""A trial's history: Tune's results completed from the trial's own file, each step once (outcome.py)."""

from __future__ import annotations

import pandas as pd
from ray import tune

from raycomp.base.layout import TRIAL_HISTORY
from raycomp.launch.sinks import append_result
from raycomp.launch.sweep.outcome import trial_history


def result(folder, rows):
    return tune.Result(
        metrics=rows[-1], checkpoint=None, error=None, path=str(folder), metrics_dataframe=pd.DataFrame(rows)
    )


def test_results_a_killed_driver_lost_come_from_the_trials_own_file(tmp_path):
    """The driver saved only the last result (step 8); the trial wrote steps 4 and 8, then step 8 again when
    it was resumed and evaluated once more. A kill cut the file's last line."""
    for step, accuracy in ((4, 0.25), (8, 0.5), (8, 0.5)):
        append_result(tmp_path / TRIAL_HISTORY, {"step": step, "eval/accuracy": accuracy, "variant": "baseline"})
    with (tmp_path / TRIAL_HISTORY).open("a") as file:
        file.write('{"step": 12, "eval/acc')
    tune_rows = [{"step": 8, "eval/accuracy": 0.5, "training_iteration": 1}]
    history = trial_history(result(tmp_path, tune_rows))
    assert [(row["step"], row["eval/accuracy"]) for row in history] == [(4, 0.25), (8, 0.5)]
    assert history[-1]["training_iteration"] == 1  # Tune's own columns stay where Tune has the step


def test_a_retrained_step_counts_once_with_its_latest_values(tmp_path):
    rows = [{"step": 4, "train/loss": 2.0}, {"step": 8, "train/loss": 1.5}, {"step": 8, "train/loss": 1.4}]
    for row in rows:
        append_result(tmp_path / TRIAL_HISTORY, row)
    assert [row["train/loss"] for row in trial_history(result(tmp_path, rows))] == [2.0, 1.4]


def test_without_the_trials_file_tunes_rows_are_the_history(tmp_path):
    rows = [{"step": 4, "eval/accuracy": 0.25}, {"step": 8, "eval/accuracy": 0.5}]
    assert trial_history(result(tmp_path, rows)) == rows


def test_tunes_warning_of_missing_result_files_is_dropped_and_its_other_warnings_kept(caplog):
    """In a bucket Tune keeps no result files (loggers.result_loggers): its warning about them names each trial."""
    import logging

    from raycomp.launch.sweep.outcome import quiet_missing_result_files

    quiet_missing_result_files()
    analysis = logging.getLogger("ray.tune.analysis.experiment_analysis")
    with caplog.at_level(logging.WARNING, logger=analysis.name):
        analysis.warning("Failed to fetch metrics for 2 trial(s):\n- a: FileNotFoundError()")
        analysis.warning("something else")
    assert [record.getMessage() for record in caplog.records] == ["something else"]


def test_in_a_bucket_the_history_is_tunes_result_json_and_the_kept_result_drops_tunes_copy(tmp_path):
    """A trial in a bucket writes its history as ``result.json`` (where Tune looks, so Tune's ResultGrid does not
    search for two missing files a trial); a sweep an older raycomp started has ``history.jsonl`` there. The
    results the sweep keeps drop the DataFrame Tune read from the file, which the sweep reads whole itself.
    A pyarrow filesystem that is not the local one stands in for the bucket (tests/launch/test_multinode.py has S3)."""
    import pyarrow.fs

    from raycomp.base.layout import STORED_TRIAL_HISTORY
    from raycomp.launch.sweep.outcome import kept_result, trial_records

    bucket = pyarrow.fs.SubTreeFileSystem(str(tmp_path), pyarrow.fs.LocalFileSystem())
    rows = {"new": [{"step": 4, "eval/accuracy": 0.25}], "old": [{"step": 8, "eval/accuracy": 0.5}]}
    for name, file in (("new", STORED_TRIAL_HISTORY), ("old", TRIAL_HISTORY)):
        append_result(tmp_path / name / file, {**rows[name][0], "finished": True})

    def stored(name: str) -> tune.Result:
        frame = pd.DataFrame([{"step": 4, "traces/x": 1}])  # as Tune's json_normalize flattens nested keys
        arm = {"variant": "baseline", "config_id": "baseline", "overrides": {}, "repeat": ["new", "old"].index(name)}
        metrics = {"config": {"arm": arm}, "done": True}
        return tune.Result(metrics, None, None, name, metrics_dataframe=frame, _storage_filesystem=bucket)

    kept = [kept_result(stored(name)) for name in ("new", "old")]
    assert [result.metrics_dataframe for result in kept] == [None, None]
    local = tune.Result({}, None, None, str(tmp_path), metrics_dataframe=pd.DataFrame([{"step": 1}]))
    assert kept_result(local) is local
    records = trial_records([[kept[0]], [kept[1]]])
    assert sorted(row["eval/accuracy"] for record in records for row in record.history) == [0.25, 0.5]
    assert not [key for record in records for row in record.history for key in row if "/x" in key]
