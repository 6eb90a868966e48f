"""A bucket handed to Tune (``launch/sweep/bucket.py``): opened once from the storage path's URI, with its options,
and shared by Tune's deep copies of its spec instead of rebuilt by each (7.7 ms of CPU a copy). Sweeps on a bucket
end to end: tests/launch/test_multinode.py."""

from __future__ import annotations

import copy
import pickle

import pyarrow.fs

from raycomp.base.layout import opened_uri
from raycomp.launch.sweep.bucket import SharedS3FileSystem, tune_storage

URI = "s3://bucket/runs?endpoint_override=127.0.0.1:9&scheme=http"


def test_a_bucket_is_opened_with_its_uris_options_and_copies_share_it():
    path, filesystem = tune_storage(URI)
    tunes_own, tunes_path = pyarrow.fs.FileSystem.from_uri(opened_uri(URI))  # what Tune opens from the URI
    assert path == tunes_path == "bucket/runs"
    assert isinstance(filesystem, SharedS3FileSystem) and filesystem.equals(tunes_own)
    assert filesystem.__reduce__()[1][0]["allow_delayed_open"]  # one request a small file (layout.opened_uri)
    spec = {"config": {}, "storage": {"filesystem": filesystem}}
    assert copy.deepcopy(spec)["storage"]["filesystem"] is filesystem
    assert copy.deepcopy(tunes_own) is not tunes_own  # pyarrow's own rebuilds it: the cost this saves
    # Pickled to a trial's process, or back in a result's checkpoint: the process's own, opened once (~10 ms of CPU)
    assert pickle.loads(pickle.dumps(filesystem)) is filesystem
    assert tune_storage(URI)[1] is filesystem
    other = pickle.loads(pickle.dumps(tune_storage(URI.replace("127.0.0.1:9", "127.0.0.1:10"))[1]))
    assert other is not filesystem and other.__reduce__()[1][0]["endpoint_override"] == "127.0.0.1:10"


def test_each_checkpoint_a_trial_reports_brings_back_the_drivers_bucket_not_a_new_one():
    """A result's checkpoint names its filesystem; unpickled in the driver, each of them used to open a new one."""
    from ray.train import Checkpoint

    _, filesystem = tune_storage(URI)
    sent = [pickle.dumps(Checkpoint(f"bucket/runs/t{i}/checkpoint_000000", filesystem=filesystem)) for i in range(2)]
    first, second = map(pickle.loads, sent)
    assert first.filesystem is second.filesystem is filesystem and second.path.startswith("bucket/runs/t1/")


def test_a_folder_is_left_for_tune_to_open(tmp_path):
    assert tune_storage(str(tmp_path)) == (str(tmp_path), None)
