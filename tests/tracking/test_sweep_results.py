"""A sweep's verdicts on its MLflow runs, in a real store: the parent's configs.json has every configuration; past
``max_tagged`` trials only the references' and the first-ranked configurations' runs get verdict tags, and the
sweep says where the rest are (one request per tagged run: a sweep's end stays bounded at 10,000 trials)."""

from __future__ import annotations

import json

from mlflow import MlflowClient
from reportkit import ARMS, hand_made_records

from raycomp.base import keys
from raycomp.results.configs import summarize_configs
from raycomp.results.summary import summarize
from raycomp.tracking.ref import RunRef
from raycomp.tracking.sweep_results import VERDICTS_TABLE, log_verdicts


def sweep_runs(tmp_path, summaries):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = client.create_experiment("verdicts", artifact_location=str(tmp_path / "artifacts"))
    parent = client.create_run(experiment).info.run_id
    children = {
        trial.trial_id: client.create_run(
            experiment, tags={keys.PARENT_TAG: parent, keys.TRIAL_TAG: trial.trial_id}
        ).info.run_id
        for trial in summaries
    }
    return client, RunRef(uri, experiment, parent), children


def test_past_the_limit_the_first_ranked_configurations_runs_are_tagged_and_configs_json_has_all(tmp_path, capsys):
    summaries = summarize(hand_made_records(3, ARMS))
    verdicts = summarize_configs(summaries, "max")
    client, parent, children = sweep_runs(tmp_path, summaries)

    assert log_verdicts(parent, verdicts, summaries, max_tagged=9 + 3)  # the references' 9 trials and method-1's 3
    tagged = {
        summary.config_id
        for summary in summaries
        if keys.VERDICT_TAG in client.get_run(children[summary.trial_id]).data.tags
    }
    assert tagged == {"baseline", "frontier-0.5", "control", "method-1"}
    run = client.get_run(children[next(s.trial_id for s in summaries if s.config_id == "method-1")])
    assert run.data.tags[keys.VERDICT_TAG] == "faster"
    out = capsys.readouterr().out
    said = (
        f"verdict tags on the runs of the 12 trials ranked first; the other 12 trials' verdicts are in {VERDICTS_TABLE}"
    )
    assert said in out
    table = json.loads((tmp_path / "artifacts" / parent.run_id / "artifacts" / VERDICTS_TABLE).read_text())
    assert len(table["data"]) == len(verdicts.configs)


def test_within_the_limit_every_trial_run_is_tagged_and_nothing_is_said(tmp_path, capsys):
    summaries = summarize(hand_made_records(1, ARMS))
    client, parent, children = sweep_runs(tmp_path, summaries)
    assert log_verdicts(parent, summarize_configs(summaries, "max"), summaries)
    assert all(keys.VERDICT_TAG in client.get_run(run).data.tags for run in children.values())
    assert "verdict tags" not in capsys.readouterr().out


def test_each_trial_run_names_its_configuration_by_what_it_runs_with_rounded_values(tmp_path):
    """Issue 59 item 6: MLflow's grouped view headed groups `method-1`, `method-2` with unrounded values and lost
    "uninformative". Each trial's run now says what its configuration runs, as the CLI shows it."""
    summaries = summarize(hand_made_records(2, ARMS))
    client, parent, children = sweep_runs(tmp_path, summaries)
    assert log_verdicts(parent, summarize_configs(summaries, "max"), summaries)
    tags = {s.config_id: client.get_run(children[s.trial_id]).data.tags for s in summaries}
    assert tags["method-2"][keys.CONFIGURATION_TAG] == "method-2: selective_backprop(keep=0.25)"
    assert tags["baseline"][keys.CONFIGURATION_TAG] == "baseline"
    speedup = tags["method-1"][keys.SPEEDUP_TAG_PREFIX + "speedup"]
    assert len(speedup.replace(".", "")) <= 3, speedup  # 3 significant digits, as the tables
    open_ = [config for config, tag in tags.items() if tag[keys.VERDICT_TAG].endswith("(uninformative: 2 seeds)")]
    assert open_ and all(tags[config][keys.VERDICT_TAG].startswith("no evidence") for config in open_)
    assert tags["method-3"][keys.VERDICT_TAG] == "slower"  # resolved at 2 seeds: it stands
