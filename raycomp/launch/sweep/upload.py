"""A sweep's results and report beside its trials in remote storage.

With ``storage_path`` a bucket the driver still writes results and the report to ``runs/<name>`` in its working
directory, which under ``ray job submit`` is a temporary copy on the head, gone with the job. So they are
copied to the sweep's folder in the bucket too, where the checkpoints and Tune's state already are.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs

from raycomp.base.layout import join_uri, opened_uri


def copy_to_storage(paths: list[Path], run_dir: str) -> list[str]:
    """Copies each file or folder in ``paths`` to ``run_dir`` (a URI), keeping its name; returns the URIs."""
    filesystem, root = pyarrow.fs.FileSystem.from_uri(opened_uri(run_dir))
    filesystem.create_dir(root, recursive=True)  # a bucket needs none; a mounted or local folder does
    copied = []
    for path in paths:
        destination = f"{root.rstrip('/')}/{path.name}"
        if path.is_dir():
            filesystem.create_dir(destination, recursive=True)
        pyarrow.fs.copy_files(str(path.resolve()), destination, destination_filesystem=filesystem)
        copied.append(join_uri(run_dir, path.name))
    return copied
