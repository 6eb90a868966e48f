"""The sweep from Python, for notebooks and scripts: the same run as ``python -m raycomp.tune``.

``sweep("experiments/sb.yaml", model=make_net, data=make_data)`` runs the experiment's sweep (repeats,
control, verdicts, results files, report, MLflow) with the model and data built by the given callables
instead of import paths: they are pickled by value and shipped to every trial (``raycomp.shipped``), so a
function defined in a notebook works. ``model_args``/``data_args`` are their ``init_args``. The experiment
is a YAML path or a mapping; ``overrides`` are ``--set`` items.

``find("experiments/find_cnn.yaml")`` runs a recipe search as ``python -m raycomp.find`` does (docs/find.md) and
returns its exit code and folder (``find.json``, ``recipe.yaml``).

The callables travel in the environment of the Ray this starts (or joins by ``address``): a Ray already
started in this process by other code never sees them; name importable callables by ``class_path`` then.

Both go through the same command as the command line (``raycomp.launch.sweep.command``), but raise where the
command line prints one line and exits; every error is a ``raycomp.base.errors.RaycompError``:

- ``ConfigError``: the experiment is wrong (one line per problem, at its key), before Ray starts;
- ``RunConflict``: the name holds a sweep already (``resume=True`` continues it, ``extend=True`` adds arms, or
  pick another name), another process holds it, or its checkpoints were trained with another config;
- ``NotFound``: ``resume=True`` or ``extend=True`` with nothing to continue under that name;
- ``TrackingUnavailable``: the MLflow store does not answer; ``StorageUnwritable``: ``storage_path`` cannot be
  written;
- ``KeyboardInterrupt``: Ctrl-C; what was saved continues with ``resume=True`` (the call is printed).

A trial that fails does not raise: the result's ``exit_code`` is 1 and results.json says which and why.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raycomp.config import ConfigError, ExperimentConfig

if TYPE_CHECKING:
    from raycomp.preflight.experiment import WorkloadFacts

PYTHON_SOURCE = "<python>"  # where an experiment given as a mapping came from, in its error lines


@dataclasses.dataclass(frozen=True)
class SweepResult:
    """What a sweep left: its exit code (0: every trial finished) and where its results are."""

    exit_code: int
    folder: Path

    @property
    def results_json(self) -> Path:
        return self.folder / "results.json"


def sweep(
    experiment: str | os.PathLike[str] | Mapping[str, Any],
    *,
    model: Callable[..., Any] | None = None,
    model_args: Mapping[str, Any] | None = None,
    data: Callable[..., Any] | None = None,
    data_args: Mapping[str, Any] | None = None,
    overrides: Sequence[str] = (),
    address: str | None = None,
    resume: bool = False,
    extend: bool = False,
    report: bool = True,
) -> SweepResult:
    """Runs ``experiment``'s sweep, as ``python -m raycomp.tune`` does; ``resume`` continues one stopped any way,
    ``extend`` adds the arms this config has and the stored sweep lacks. Raises as the module says."""
    from raycomp.base.remedies import PYTHON
    from raycomp.config.user_code import user_code_on_path
    from raycomp.launch.run_folder import nothing_to_resume
    from raycomp.launch.sweep.command import SweepOptions, run_sweep_command
    from raycomp.shipped import ship

    user_code_on_path()
    sets = list(overrides)
    names = ship({fn.__name__: fn for fn in (model, data) if fn is not None})
    for section, fn, args in (("model", model, model_args), ("data", data, data_args)):
        if fn is not None:
            default = "cnn" if section == "model" else "synthetic"  # a class_path replaces the built-in name
            sets += [
                f"{section}.class_path={names[fn.__name__]}",
                f"{section}.init_args={json.dumps(dict(args or {}))}",
                f"{section}.name={default}",
            ]
    source, config, _ = _checked(experiment, sets)
    options = SweepOptions(
        experiment=source,
        overrides=tuple(sets),
        resume=resume and not (not extend and nothing_to_resume(config.layout)),  # killed before it saved anything
        extend=extend,
        report=report,
        address=address,
        remedies=PYTHON,
        program="raycomp.api.sweep",
    )
    return SweepResult(run_sweep_command(config, options), config.layout.local_dir)


@dataclasses.dataclass(frozen=True)
class FindResult:
    """What a find left: its exit code (0: answered, recipe or not) and its folder (find.json, recipe.yaml)."""

    exit_code: int
    folder: Path

    @property
    def answer(self) -> dict[str, Any]:
        """find.json: the headline, the recommended ``algorithms`` (None when none is), each candidate's path."""
        return json.loads((self.folder / "find.json").read_text())

    @property
    def recipe_yaml(self) -> Path | None:
        path = self.folder / "recipe.yaml"
        return path if path.is_file() else None


def find(
    experiment: str | os.PathLike[str] | Mapping[str, Any],
    *,
    overrides: Sequence[str] = (),
    address: str | None = None,
    resume: bool = False,
) -> FindResult:
    """Runs ``experiment``'s find, as ``python -m raycomp.find`` does (docs/find.md): which speed-up recipe to use
    on its model. A bad config, or a find section that cannot be searched, raises ``ConfigError`` before Ray."""
    from raycomp.base.remedies import PYTHON
    from raycomp.config.user_code import user_code_on_path
    from raycomp.launch.find.command import find_problems, run_find_command
    from raycomp.launch.run_folder import nothing_to_resume
    from raycomp.launch.sweep.command import SweepOptions

    user_code_on_path()
    source, config, facts = _checked(experiment, list(overrides))
    plan, left_out, problems = find_problems(config, facts)
    if plan is None or problems:
        raise ConfigError([f"{source}: {'.'.join(map(str, path))}: {message}" for path, message in problems])
    options = SweepOptions(
        experiment=source,
        overrides=tuple(overrides),
        resume=resume and not nothing_to_resume(config.layout),
        address=address,
        remedies=PYTHON,
        program="raycomp.api.find",
    )
    return FindResult(run_find_command(config, options, plan, left_out), config.layout.local_dir)


def _checked(
    experiment: str | os.PathLike[str] | Mapping[str, Any], overrides: Sequence[str]
) -> tuple[str, ExperimentConfig, WorkloadFacts]:
    """(where the experiment came from, its config, what its workload check found); ``ConfigError`` before Ray."""
    from raycomp.preflight.experiment import check_experiment, load_checked_experiment

    if isinstance(experiment, Mapping):
        config = ExperimentConfig.from_dict(experiment, source=PYTHON_SOURCE).with_overrides(_flat(overrides))
        return PYTHON_SOURCE, config, check_experiment(config, PYTHON_SOURCE)
    source = os.fspath(experiment)
    return (source, *load_checked_experiment(source, overrides))


def _flat(items: Sequence[str]) -> dict[str, Any]:
    from raycomp.config.yaml_text import load_value

    return {key: load_value(value) for key, _, value in (item.partition("=") for item in items)}
