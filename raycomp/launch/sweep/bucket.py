"""A sweep's storage as raycomp hands it to Tune: a bucket opened once per process, as a filesystem Tune's copies share.

Tune deep-copies its experiment spec twice for each variant, and makes every variant of an experiment at its first
trial. The spec holds the experiment's ``StorageContext``, and a deep copy of pyarrow's ``S3FileSystem`` in it
builds a new one through its ``__reduce__``: milliseconds of CPU a copy, seconds of the driver's at the start of a
large experiment (docs/benchmarks.md, "At scale"). Unpickling builds one too,
and every result a trial reports with a checkpoint brings that checkpoint's filesystem back to the driver pickled.
A filesystem's options never change once it is made, so a copy may be the filesystem itself, and a process needs
one filesystem per set of options.
"""

from __future__ import annotations

from typing import Any

import pyarrow.fs

from raycomp.base.layout import opened_uri


class SharedS3FileSystem(pyarrow.fs.S3FileSystem):
    """An ``S3FileSystem`` whose copies are itself, and which unpickles (in a trial's process, in the driver from a
    trial's result, from Tune's saved state) to the one its process already opened with the same options."""

    def __deepcopy__(self, memo: dict[int, Any]) -> SharedS3FileSystem:
        return self

    def __copy__(self) -> SharedS3FileSystem:
        return self

    def __reduce__(self) -> tuple[Any, tuple[dict[str, Any]]]:
        _, (options,) = super().__reduce__()  # pyarrow's: its class's constructor and the options it was made with
        return shared_s3_filesystem, (options,)


_OPENED: dict[str, SharedS3FileSystem] = {}  # this process's buckets, by their options


def shared_s3_filesystem(options: dict[str, Any]) -> SharedS3FileSystem:
    """This process's filesystem with ``options``, opened at the first call (the reducer of ``SharedS3FileSystem``;
    pyarrow's filesystems are safe to share between threads)."""
    key = repr(sorted(options.items()))
    opened = _OPENED.get(key)
    if opened is None:
        opened = _OPENED.setdefault(key, SharedS3FileSystem(**options))
    return opened


def tune_storage(storage: str) -> tuple[str, pyarrow.fs.FileSystem | None]:
    """``RunConfig``'s (and ``Tuner.restore``'s) storage path and filesystem for ``storage``, a folder or a URI: an
    ``s3://`` URI opened here as a ``SharedS3FileSystem`` and the path inside it (what Tune's own ``from_uri``
    gives: the same ``Result.path``), anything else as it is, for Tune to open."""
    uri = opened_uri(storage)
    if not uri.startswith("s3://"):
        return uri, None
    filesystem, path = pyarrow.fs.FileSystem.from_uri(uri)
    _, (options,) = filesystem.__reduce__()  # the URI's options, as pickling the filesystem keeps them
    return path, shared_s3_filesystem(options)
