"""A sweep's results and report copied beside its trials in remote storage (tests/launch/test_multinode.py runs
it against an S3 bucket); here against a ``file://`` URI, which pyarrow treats as it treats a bucket's."""

from __future__ import annotations

import pytest

from raycomp.launch.sweep.upload import copy_to_storage


def test_files_and_a_folder_are_copied_under_the_run_folder_and_named(tmp_path):
    local = tmp_path / "runs" / "sb"
    (local / "report").mkdir(parents=True)
    (local / "results.json").write_text("{}")
    (local / "report" / "report.html").write_text("<html>")
    remote = f"file://{tmp_path}/bucket/runs/sb"
    copied = copy_to_storage([local / "results.json", local / "report"], remote)
    assert copied == [f"{remote}/results.json", f"{remote}/report"]
    assert (tmp_path / "bucket" / "runs" / "sb" / "results.json").read_text() == "{}"
    assert (tmp_path / "bucket" / "runs" / "sb" / "report" / "report.html").read_text() == "<html>"


def test_storage_that_refuses_them_raises_oserror(tmp_path):
    (tmp_path / "results.json").write_text("{}")
    (tmp_path / "blocked").write_text("a file where the folder should be")
    with pytest.raises(OSError):
        copy_to_storage([tmp_path / "results.json"], f"file://{tmp_path}/blocked/sb")
