"""A sweep's results on its MLflow runs: files attached to a run, the verdicts as the parent's ``configs.json``
table and tags, and each trial's configuration verdict as tags on its child run. Logs to runs that
``runs.py`` opened; creates and ends none.

Tags cost one request per run (MLflow has no batch across runs): a sweep of more
than ``MAX_TAGGED_TRIALS`` trials tags the runs of its references and of the configurations ranked first
(``results.ranking``, the report's order) up to that many, and says so; ``configs.json`` has every verdict.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mlflow import MlflowClient

from raycomp.base import keys
from raycomp.base.errors import one_line
from raycomp.results.configs import CONFIG_COLUMNS, SweepVerdicts
from raycomp.results.ranking import first_trials
from raycomp.results.summary import TrialSummary
from raycomp.tracking.client import BatchedClient
from raycomp.tracking.ref import RunRef
from raycomp.tracking.search import all_runs, tag_filter

VERDICTS_TABLE = "configs.json"
MAX_TAGGED_TRIALS = 1000  # ~17 s of a sweep's end on a local server (docs/benchmarks.md "At scale")


def log_files(ref: RunRef, paths: Iterable[str | Path], artifact_folder: str | None = None) -> bool:
    """Attaches files to the run (in ``artifact_folder``); False if the store refused one (already printed)."""
    client = BatchedClient(ref)
    return all([client.log_artifact(path, artifact_folder) for path in paths])


def log_verdicts(
    parent: RunRef, verdicts: SweepVerdicts, trials: Sequence[TrialSummary], max_tagged: int = MAX_TAGGED_TRIALS
) -> bool:
    """The sweep's per-configuration verdicts: a ``configs.json`` table and tags on the parent run, and
    each trial's configuration verdict as tags on its child run (found by trial id): the references' trials and
    the first-ranked configurations', ``max_tagged`` in all (the references always). False if the store
    refused something (already printed); never raises."""
    left = {config.config_id for config in verdicts.configs}
    left -= {config.config_id for config in first_trials(verdicts.configs, max_tagged)}
    tagged = [trial for trial in trials if (trial.config_id or trial.trial_id) not in left]
    if len(tagged) < len(trials):
        print(
            f"raycomp: verdict tags on the runs of the {len(tagged)} trials ranked first; the other "
            f"{len(trials) - len(tagged)} trials' verdicts are in {VERDICTS_TABLE} on the sweep's run",
            flush=True,
        )
    table, parent_tags, trial_tags = _verdict_records(verdicts, tagged)
    client = BatchedClient(parent)
    done = client.log_table(*table, VERDICTS_TABLE) and client.set_tags(parent_tags)
    try:
        children = _children(client.client, parent)
    except Exception as error:
        print(f"raycomp: could not find the trial runs of {parent.run_id}: {one_line(error)}", file=sys.stderr)
        return False
    for trial_id, tags in trial_tags.items():
        if trial_id in children:
            child = RunRef(parent.tracking_uri, parent.experiment_id, children[trial_id])
            done = BatchedClient(child).set_tags(tags) and done
    return done


def _verdict_records(
    verdicts: SweepVerdicts, trials: Sequence[TrialSummary]
) -> tuple[tuple[list[str], list[list[Any]]], dict[str, str], dict[str, dict[str, str]]]:
    """The verdicts as MLflow takes them: the parent's table and tags, each trial's tags by trial id."""
    rows = [config.row() for config in verdicts.configs]
    columns = list(CONFIG_COLUMNS)
    table = (columns, [[row[column] for column in columns] for row in rows])
    parent_tags = {
        keys.CONTROL_VERDICT_TAG: str(verdicts.control),
        keys.NOISE_FLOOR_TAG: str(verdicts.noise_floor),
        keys.BEST_CONFIG_TAG: str(verdicts.best),
    }
    by_config = {row["config_id"]: row for row in rows}
    trial_tags = {}
    shown = {config.config_id: _verdict_words(config) for config in verdicts.configs}
    for trial in trials:
        row = by_config.get(trial.config_id or trial.trial_id, {})
        label = configuration_label(str(trial.config_id), row.get("arguments") or {})
        tags = {keys.CONFIG_ID_TAG: str(trial.config_id), keys.CONFIGURATION_TAG: label}
        tags[keys.VERDICT_TAG] = shown.get(trial.config_id or trial.trial_id, "None")
        speedups = ("speedup", "speedup_ci_low", "speedup_ci_high")
        tags |= {keys.SPEEDUP_TAG_PREFIX + key: _rounded(row.get(key)) for key in speedups}
        if trial.error_line or trial.error:
            tags[keys.ERROR_TAG] = str(trial.error_line or trial.error)
        trial_tags[trial.trial_id] = tags
    return table, parent_tags, trial_tags


def configuration_label(config_id: str, arguments: dict[str, Any]) -> str:
    """A configuration by what it runs, values rounded as the CLI shows them: ``method-2: selective_backprop(
    start=0.121, keep=0.362)``; a reference by its name. MLflow's grouped view heads each group with it."""
    methods: dict[str, list[str]] = {}
    for path, value in arguments.items():
        parts = path.split(".")
        name, argument = (parts[1], ".".join(parts[2:])) if parts[0] == "algorithms" and len(parts) > 2 else ("", path)
        methods.setdefault(name, []).append(f"{argument}={_rounded(value)}")
    if not methods:
        return config_id
    shown = [f"{name}({', '.join(values)})" if name else ", ".join(values) for name, values in methods.items()]
    return f"{config_id}: {' + '.join(shown)}"


def _verdict_words(config: Any) -> str:
    """The verdict as the tables say it, "uninformative" carried (too few seeds to rule anything out)."""
    from raycomp.results.seed_power import uninformative

    words = str(config.shown_verdict)
    if config.verdict is not None and uninformative(config.verdict):
        words += f" (uninformative: {config.verdict.n} seeds)"
    return words


def _rounded(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _children(client: MlflowClient, parent: RunRef) -> dict[str, str]:
    """The parent's trial runs, trial id -> run id."""
    runs = all_runs(client, [parent.experiment_id], tag_filter({keys.PARENT_TAG: parent.run_id}))
    return {run.data.tags.get(keys.TRIAL_TAG, ""): run.info.run_id for run in runs}
