"""The order a large sweep's report and verdict tags share: references always, then faster configurations by the
lower bound of their speed-up, then the rest by their point estimate, failed and unjudged last."""

from __future__ import annotations

from reportkit import ARMS, hand_made_records

from raycomp.results.configs import summarize_configs
from raycomp.results.ranking import first_trials, references_and_ranked
from raycomp.results.summary import summarize


def verdicts():
    return summarize_configs(summarize(hand_made_records(3, ARMS)), "max")


def test_references_come_apart_and_the_faster_configuration_ranks_first_the_unjudged_one_last():
    references, ranked = references_and_ranked(verdicts().configs)
    assert [config.config_id for config in references] == ["baseline", "frontier-0.5", "control"]
    order = [config.config_id for config in ranked]
    assert sorted(order) == [f"method-{i}" for i in range(1, 6)]
    assert order[0] == "method-1" and order[-1] == "method-4"  # stopped at every seed: no verdict


def test_first_trials_keeps_the_references_always_then_configurations_while_their_trials_fit():
    configs = verdicts().configs
    assert [config.config_id for config in first_trials(configs, 0)] == ["baseline", "frontier-0.5", "control"]
    assert [config.config_id for config in first_trials(configs, 9 + 3)][-1] == "method-1"  # 3 seeds each
    assert len(first_trials(configs, 9 + 3 + 2)) == 4  # a configuration whose trials do not all fit is left out
    assert len(first_trials(configs, 1000)) == len(configs)
