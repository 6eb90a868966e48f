"""Tune's per-trial files on the sweep's driver (raycomp.launch.sweep.loggers): loggers on local storage; in a
bucket none, and no empty staging folder a trial for Tune's experiment-state upload to copy at every checkpoint.
tests/launch/test_multinode.py runs sweeps in a bucket with it."""

from __future__ import annotations

from types import SimpleNamespace

from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback

from raycomp.launch.sweep.loggers import NoStagingFolders, result_loggers


def test_local_storage_keeps_tunes_loggers_and_a_bucket_has_none_and_drops_each_trials_staging_folder(tmp_path):
    assert [type(callback) for callback in result_loggers(str(tmp_path))] == [CSVLoggerCallback, JsonLoggerCallback]
    assert [type(callback) for callback in result_loggers("s3://bucket/runs")] == [NoStagingFolders]


def test_an_ended_trials_empty_staging_folder_is_removed_and_one_with_files_kept(tmp_path):
    empty, used = tmp_path / "run_trial_0", tmp_path / "run_trial_1"
    empty.mkdir()
    used.mkdir()
    (used / "error.txt").write_text("Traceback\n")  # Tune's record of a failed trial
    callback = NoStagingFolders()
    for folder in (empty, used, tmp_path / "run_trial_2"):  # the last one is gone already
        callback.on_trial_complete(0, [], SimpleNamespace(local_path=str(folder)))
    assert not empty.exists() and (used / "error.txt").is_file()
