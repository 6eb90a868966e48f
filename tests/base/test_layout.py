"""Where a run's files go when ``storage_path`` is a bucket URI, its query (an S3-compatible endpoint's
``endpoint_override``) kept at the end of every path built from it."""

from __future__ import annotations

import pyarrow.fs

from raycomp.base.layout import RunLayout, join_uri, opened_uri
from raycomp.launch.sweep.ledger import experiment_folders

BUCKET = "s3://bucket/runs?endpoint_override=127.0.0.1:9000&scheme=http"


def test_paths_under_a_uri_with_a_query_keep_the_query_last():
    layout = RunLayout.of(BUCKET, "sb")
    assert layout.run_dir == "s3://bucket/runs/sb?endpoint_override=127.0.0.1:9000&scheme=http"
    assert layout.train_dir == "s3://bucket/runs/sb/train?endpoint_override=127.0.0.1:9000&scheme=http"
    assert join_uri("s3://bucket/runs/", "sb", "more-1") == "s3://bucket/runs/sb/more-1"
    _, path = pyarrow.fs.FileSystem.from_uri(layout.run_dir.replace("s3://", "file:///tmp/"))
    assert path == "/tmp/bucket/runs/sb"


def test_a_local_storage_path_is_a_folder(tmp_path):
    layout = RunLayout.of(str(tmp_path), "sb")
    assert layout.run_dir == str(tmp_path / "sb") and layout.train_dir == str(tmp_path / "sb" / "train")
    (tmp_path / "sb" / "more-1").mkdir(parents=True)
    assert experiment_folders(layout.run_dir) == [layout.run_dir, f"{layout.run_dir}/more-1"]


def test_an_s3_uri_is_opened_with_one_request_writes_unless_it_says_otherwise():
    """pyarrow then writes a small file with one PutObject instead of a three-request multipart upload."""
    assert opened_uri("s3://bucket/runs") == "s3://bucket/runs?allow_delayed_open=true"
    assert opened_uri(BUCKET) == f"{BUCKET}&allow_delayed_open=true"
    assert opened_uri("s3://bucket/runs?allow_delayed_open=false") == "s3://bucket/runs?allow_delayed_open=false"
    assert opened_uri("gs://bucket/runs") == "gs://bucket/runs" and opened_uri("/tmp/runs") == "/tmp/runs"
    filesystem, path = pyarrow.fs.FileSystem.from_uri(opened_uri(BUCKET))
    assert path == "bucket/runs" and filesystem.__reduce__()[1][0]["allow_delayed_open"] is True


def test_the_run_key_and_the_folders_keep_the_uri_as_written():
    layout = RunLayout.of(BUCKET, "sb")
    assert layout.run_key("sweep") == f"sweep:{BUCKET}/sb"  # as sweeps started before the option found their run
    assert "allow_delayed_open" not in layout.run_dir
