"""A sweep of hundreds of configurations gets a page and a printed table one can read: the references and the 30
configurations ranked first in full, the rest counted by verdict; the headline and the counts still cover the whole
sweep."""

from __future__ import annotations

import warnings

from reportkit import ARMS, Arm, hand_made_records, method_card, trial_rows

from raycomp.report.write import write_sweep_report
from raycomp.results.configs import summarize_configs
from raycomp.results.ranking import MAX_SHOWN
from raycomp.results.summary import summarize
from raycomp.results.trial_text import format_trials
from raycomp.results.verdict_text import few_seeds_note, format_verdicts, uninformative_configs

SB = "algorithms.selective_backprop"


def many_arms(count: int) -> tuple[Arm, ...]:
    """The hand-made references and ``count`` method configurations: every fifth 1.5x faster (the faster the
    higher its number), the others neutral or slower."""
    references = tuple(arm for arm in ARMS if arm.variant != "method")
    methods = tuple(
        Arm(f"m{i:04d}", "method", {f"{SB}.keep": round(0.1 + i / (2 * count), 6)}, speed=speed(i))
        for i in range(count)
    )
    return references + methods


def speed(i: int) -> float:
    return 1.5 + i / 10_000 if i % 5 == 0 else (1.0 if i % 5 in (1, 2) else 0.8)


def test_a_sweep_of_400_configurations_draws_the_first_30_and_counts_the_rest(tmp_path):
    count = 400
    summaries = summarize(hand_made_records(3, many_arms(count)))
    verdicts = summarize_configs(summaries, "max")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "tight_layout not applied" and its kin: a figure nobody reads
        html = write_sweep_report(summaries, verdicts, "big", "eval/accuracy", "max", tmp_path, None)[-1].read_text()

    card = method_card(html)
    methods = sorted(config for config in card if config.startswith("m"))
    faster = sorted((f"m{i:04d}" for i in range(count) if i % 5 == 0), reverse=True)
    assert methods == sorted(faster[:MAX_SHOWN])  # the fastest first, by the lower bound of their speed-up
    assert {"baseline", "frontier-0.5", "control"} <= set(card)
    assert verdicts.best == faster[0] and "best" in card[faster[0]]["text"]
    rest = count - MAX_SHOWN
    assert f"the other {rest} ({3 * rest} trials) are not: " in html
    assert f"{count // 5 - MAX_SHOWN} faster" in html and "no evidence" in html
    assert len(trial_rows(html)) == 3 * (MAX_SHOWN + 3)  # the trial table: the drawn configurations' trials
    assert f"<b>Trials:</b> {3 * (count + 3)} " in html  # the counts: the whole sweep
    assert f"in {count + 3} configurations" in html


def test_a_sweep_of_30_configurations_is_drawn_whole(tmp_path):
    summaries = summarize(hand_made_records(3, many_arms(MAX_SHOWN)))
    verdicts = summarize_configs(summaries, "max")
    html = write_sweep_report(summaries, verdicts, "whole", "eval/accuracy", "max", tmp_path, None)[-1].read_text()
    assert len(method_card(html)) == MAX_SHOWN + 3 and 'id="not-shown"' not in html


def test_the_printed_verdicts_of_400_configurations_are_the_first_30_and_a_count_of_the_rest():
    """What the CLI prints at a sweep's end (launch/sweep/command.py): at 10,000 configurations it printed a row
    each, and the few-seeds warning named every one of them."""
    count = 400
    verdicts = summarize_configs(summarize(hand_made_records(2, many_arms(count))), "max")
    printed = format_verdicts(verdicts, limit=MAX_SHOWN).splitlines()
    (end,) = [index for index, line in enumerate(printed) if line.startswith("... ")]
    rows, rest = [line.split()[0] for line in printed[2:end]], printed[end]  # under the rule and the header
    faster = {f"m{i:04d}" for i in range(0, count, 5)}
    assert rows[:3] == ["baseline", "frontier-0.5", "control"] and len(rows) == MAX_SHOWN + 3
    assert set(rows[3:]) <= faster
    assert rest.startswith(f"... {count - MAX_SHOWN} more configurations ({2 * (count - MAX_SHOWN)} trials)")
    assert "no evidence" in rest or "slower" in rest
    weak, note = len(uninformative_configs(verdicts)), few_seeds_note(verdicts)
    assert weak > 100 and note is not None and f" and {weak - 10} more)" in note and len(note) < 400
    assert len(format_verdicts(verdicts).splitlines()) > count  # without a limit, every configuration
    trials = format_trials(summarize(hand_made_records(2, many_arms(count))), verdicts, "eval/accuracy").splitlines()
    assert len(trials) == 1 + 2 * (MAX_SHOWN + 3) + 1  # the header, two seeds a configuration shown, the count
    assert trials[-1] == f"... {2 * (count - MAX_SHOWN)} more trials, of the configurations ranked below"
