"""What a sweep holds on disk across its Tune experiments: which arms have a trial, which are missing.

A sweep is its arms (``space.sweep_arms``). Tune keeps them in one experiment folder, but a driver
killed outright leaves Tune's saved state behind its trials, and Tune refuses to add arms to a finished
experiment. So a sweep may span several Tune experiments: the first in ``storage_path/name`` and each
later one, holding only arms no earlier one had (``--extend``'s, or any a killed driver lost), in
``storage_path/name/more-<k>``. An arm is identified by what it trains (``Arm.key``), not by Tune's
trial id or by its position in the sweep, so its configuration keeps its ``config_id`` when a grid grows.
"""

from __future__ import annotations

import fnmatch
import json
import os
import pickletools
import re
import sys
from collections.abc import Iterable
from typing import Any

import pyarrow.fs
from ray import tune

from raycomp.base.keys import METHOD
from raycomp.base.layout import join_uri, opened_uri
from raycomp.config.arm import Arm

CONFIG_DIGEST = "training_config"  # the key under which each trial's Tune config holds its training config's digest

MORE = "more-"
_STATE_PREFIX = "experiment_state"
STATE_PATTERN = "experiment_state-*.json"  # Tune restores the newest by name; each of its runs writes one
# Tune's search state, pickles despite the names: a grid's (before ArmsInOrder), a searcher's wrappers, the searcher
_SEARCHER_PATTERNS = ("basic-variant-state-*.json", "search_gen_state-*.json", "searcher-state-*.pkl")
SET_ASIDE = ".damaged"


def experiment_folders(run_dir: str) -> list[str]:
    """The sweep's Tune experiment folders, oldest first: ``run_dir`` and its ``more-<k>``."""
    fs, path = filesystem_of(run_dir)
    found = fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True))
    more = sorted(
        int(info.base_name[len(MORE) :])
        for info in found
        if info.type == pyarrow.fs.FileType.Directory and re.fullmatch(rf"{MORE}\d+", info.base_name)
    )
    return [run_dir] + [join_uri(run_dir, f"{MORE}{k}") for k in more]


def has_state(folder: str) -> bool:
    """Tune saved an experiment here that ``Tuner.restore`` can continue (its tuner and a state file)."""
    if not tune.Tuner.can_restore(folder):
        return False
    fs, path = filesystem_of(folder)
    found = fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True))
    return bool(fnmatch.filter((info.base_name for info in found), STATE_PATTERN))  # not one set aside


def set_aside_damaged_state(folder: str) -> list[str]:
    """Renames Tune's newest saved state in ``folder`` to ``*.damaged`` while it cannot be read (a disk that
    filled up while Tune copied it there cuts it short), until the newest left is whole; the names set aside.

    Tune, unable to read it, starts the experiment again with an empty config: a trial with no arm, under
    the id of the experiment's first trial, whose ``params.json`` it overwrites (reliability notes, D2). With
    the damaged state aside, Tune restores the state its previous run saved, or, with none, the sweep's arms
    train in a new experiment whose trials continue the old trials from their folders (``lost_trial_folder``).
    Nothing is unpickled to check: a JSON parse, and a walk over a pickle's opcodes.
    """
    fs, path = filesystem_of(folder)
    moved: list[str] = []
    while True:
        names = [info.base_name for info in fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True))]
        states = fnmatch.filter(names, STATE_PATTERN)
        if not states:
            return moved
        newest = max(states)
        stamp = newest[len(_STATE_PREFIX) + 1 : -len(".json")]
        searchers = [max(found) for found in (fnmatch.filter(names, p) for p in _SEARCHER_PATTERNS) if found]
        problem = _unreadable(fs, f"{path}/{newest}", json.loads) or next(
            (problem for name in searchers if (problem := _unreadable(fs, f"{path}/{name}", _pickle_opcodes))), None
        )
        if problem is None:
            return moved
        for name in [newest, *(name for name in searchers if stamp in name)]:
            fs.move(f"{path}/{name}", f"{path}/{name}{SET_ASIDE}")
            moved.append(name)
        print(
            f"raycomp: Tune's saved state {folder}/{newest} cannot be read ({problem}); set aside as "
            f"{newest}{SET_ASIDE}: the sweep goes on from its trials' own folders",
            file=sys.stderr,
            flush=True,
        )


def _unreadable(fs: pyarrow.fs.FileSystem, path: str, parse: Any) -> str | None:
    """Why the file at ``path`` cannot be read by ``parse`` (None: it can)."""
    try:
        with fs.open_input_stream(path) as stream:
            parse(stream.read())
    except (OSError, ValueError, EOFError) as error:
        return f"{type(error).__name__}: {error}"[:200]
    return None


def _pickle_opcodes(data: bytes) -> None:
    """Walks a pickle's opcodes to its end without running any: a pickle cut short raises ``ValueError``."""
    if not data:
        raise ValueError("empty")
    for _ in pickletools.genops(data):
        pass


def next_folder(run_dir: str) -> tuple[str, str]:
    """Where the sweep's next Tune experiment goes, as (storage_path, name) for its RunConfig."""
    folders = [folder for folder in experiment_folders(run_dir) if has_state(folder)]
    if not folders:
        return os.path.dirname(run_dir.rstrip("/")), os.path.basename(run_dir.rstrip("/"))
    return run_dir, f"{MORE}{len(experiment_folders(run_dir))}"


def result_arm(result: tune.Result) -> Arm | None:
    """A trial's arm: from its config, or from its folder's ``params.json`` (a trial that failed first). The folder
    is read on the result's own filesystem: on a bucket ``result.path`` is the path inside it, with no ``s3://``."""
    arm = (result.config or {}).get("arm") or _folder_params(result.filesystem, result.path).get("arm")
    return Arm.from_tune(arm) if isinstance(arm, dict) else None


def relabeled(arms: list[Arm], previous: Iterable[Arm]) -> list[Arm]:
    """``arms`` with each configuration the sweep trained before under its old ``config_id``, and each
    new one under an id no old configuration has: a grown grid shifts the positions ids come from."""
    known = {arm.key(with_repeat=False): arm.config_id for arm in previous}
    used = set(known.values())
    assigned: dict[str, str] = {}
    numbers = iter(range(1, 1_000_000))
    out = []
    for arm in arms:
        key = arm.key(with_repeat=False)
        config_id = known.get(key) or assigned.get(key)
        if config_id is None:
            config_id = arm.config_id
            while config_id in used:
                config_id = f"{METHOD}-{next(numbers)}"
            used.add(config_id)
            assigned[key] = config_id
        out.append(arm.replace(config_id=config_id))
    return out


def lost_trial_folder(run_dir: str, arm: Arm, trial_id: str, digest: str | None) -> str | None:
    """The folder of another trial of ``arm`` trained with the same training config (``digest``, which every
    trial's ``params.json`` records) in the sweep's experiment folders (the newest, if several).

    Tune makes a second trial of an arm only when it no longer knows the first: a driver killed outright
    can lose a trial that had started after its last saved state. Its folder (``params.json``, checkpoints,
    ``history.jsonl``) stays, and the new trial continues from it instead of training the arm again.
    """
    key = arm.key()
    found: list[tuple[float, str]] = []
    for experiment in experiment_folders(run_dir):
        fs, path = filesystem_of(experiment)
        for info in fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True)):
            if info.type != pyarrow.fs.FileType.Directory or info.base_name == trial_id:
                continue
            params = _folder_params(fs, info.path)
            other = params.get("arm")
            if digest is None or params.get(CONFIG_DIGEST) != digest or not isinstance(other, dict):
                continue  # another config's trial (or one from before the digest): never adopted
            if Arm.from_tune(other).key() == key and other.get("config_id") == arm.config_id:
                found.append((info.mtime.timestamp() if info.mtime else 0.0, join_uri(experiment, info.base_name)))
    return max(found)[1] if found else None


def missing_arms(arms: list[Arm], trained: Iterable[Arm]) -> list[Arm]:
    """The arms no trial of the sweep has trained (or is training)."""
    have = {arm.key() for arm in trained}
    return [arm for arm in arms if arm.key() not in have]


def _folder_params(fs: pyarrow.fs.FileSystem, folder: str) -> dict[str, Any]:
    """A trial folder's Tune config: its ``params.json``, else Tune's ``params.pkl`` (empty if neither can be read).

    A full disk can leave ``params.json`` cut to 0 bytes while Tune's pickle beside it is whole (L4 of the
    2026-12-01 probe): read from the pickle, the trial is still adopted on ``--resume`` instead of trained again."""
    for name, parse in (("params.json", json.loads), ("params.pkl", _unpickled)):
        try:
            with fs.open_input_stream(f"{folder}/{name}") as stream:
                params = parse(stream.read())
        except Exception:  # missing, cut short or not a config: the next file, or nothing
            continue
        if isinstance(params, dict):
            return params
    return {}


def _unpickled(data: bytes) -> Any:
    """Tune's ``params.pkl`` (cloudpickle; a file Tune wrote in the sweep's own folder, as Tune itself reads it)."""
    import ray.cloudpickle

    return ray.cloudpickle.loads(data)


def filesystem_of(path: str) -> tuple[pyarrow.fs.FileSystem, str]:
    """A folder or URI of the sweep's storage as pyarrow opens it: its filesystem and the path inside it."""
    if "://" in path:
        return pyarrow.fs.FileSystem.from_uri(opened_uri(path))
    return pyarrow.fs.LocalFileSystem(), os.path.abspath(path)
