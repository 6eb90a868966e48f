"""Too few seeds is said before the run and after it (issue 32 item 5): the power of the verdicts' paired t test
in closed form, checked against docs/report.md's simulated power table; the warning a sweep gets at start; and
the open verdicts that intervals from fewer than 3 seeds leave, marked uninformative."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from reportkit import hand_made_records

from raycomp.config import SweepConfig
from raycomp.results.configs import summarize_configs
from raycomp.results.seed_power import detection_power, few_seeds_warning, resolvable_speedup, uninformative
from raycomp.results.summary import summarize
from raycomp.results.verdict_text import format_verdicts
from raycomp.results.verdicts import FASTER, NO_EVIDENCE, Verdict

REPORT_MD = Path(__file__).parents[2] / "docs" / "report.md"


def power_table() -> list[tuple[float, float, dict[int, float]]]:
    """docs/report.md's power table: (time CV, speed-up, {seeds: fraction called faster})."""
    text = REPORT_MD.read_text().split("### Power table", 1)[1]
    rows = re.findall(r"^\| ([\d.]+) \| ([\d.]+)× \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", text, re.MULTILINE)
    return [(float(cv), float(s), {3: float(a), 5: float(b), 8: float(c)}) for cv, s, a, b, c in rows]


def test_the_closed_form_power_is_the_simulated_power_table():
    rows = power_table()
    assert len(rows) == 20
    for cv, speedup, by_seeds in rows:
        for seeds, simulated in by_seeds.items():
            # 2,000 simulated sweeps a cell: Monte Carlo sd up to 0.011
            assert detection_power(speedup, cv, seeds) == pytest.approx(simulated, abs=0.035), (cv, speedup, seeds)


def test_the_smallest_resolvable_speedup_grows_as_seeds_fall():
    assert detection_power(resolvable_speedup(0.05, 3), 0.05, 3) == pytest.approx(0.8, abs=1e-4)
    two, three, eight = (resolvable_speedup(0.05, n) for n in (2, 3, 8))
    assert two > 2 > three > 1.2 > eight > 1
    assert resolvable_speedup(0.05, 1) is None and detection_power(5.0, 0.05, 1) == 0.0


@pytest.mark.parametrize(
    "sweep, says",
    [
        ({"repeats": 2}, "sweep.repeats: 2 gives intervals from 2 seeds, which are uninformative"),
        ({"repeats": 1}, "sweep.repeats: 1 gives no speed-up interval"),
        ({"repeats": 2, "max_repeats": 3}, None),  # adaptive seeds reach 3 where a verdict is open
        ({"repeats": 3}, None),
        ({"repeats": 2, "baseline": False}, None),  # nothing is judged
    ],
)
def test_a_sweep_whose_seeds_cannot_resolve_a_speedup_is_warned(sweep, says):
    warning = few_seeds_warning(SweepConfig(**sweep))
    if says is None:
        assert warning is None
    else:
        assert warning.startswith(says) and "set sweep.repeats: 3 or more" in warning


def test_the_tune_cli_warns_before_the_sweep_starts(tmp_path, monkeypatch, capsys):
    from raycomp.cli import tune
    from raycomp.launch.sweep import command

    experiment = {
        "name": "two",
        "storage_path": str(tmp_path),
        "tracking": {"enabled": False},
        "data": {"num_train": 32, "num_test": 16, "batch_size": 16},
        "max_duration": "1ep",
        "scaling": {"num_workers": 0},
        "algorithms": {"selective_backprop": {"keep": 0.5, "scale_factor": 1.0}},
        "sweep": {"space": {"algorithms.selective_backprop.keep": {"choice": [0.5]}}, "repeats": 2},
    }
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump(experiment))
    started = []
    monkeypatch.setattr(command, "_sweep", lambda *args: started.append(capsys.readouterr().out) or 0)
    assert tune.main([str(path)]) == 0
    assert started and "warning: sweep.repeats: 2 gives intervals from 2 seeds, which are uninformative" in started[0]


def test_open_verdicts_from_two_seeds_are_marked_uninformative_in_the_cli():
    """With repeats: 2 the control's `no evidence` came from [0.00x, 125592x], which the page called as it should be."""

    def made(verdict: str, n: int) -> Verdict:
        return Verdict(verdict, n, tuple(range(n)), 1.0, 0.5, 2.0, None, 0, None, None, None, None, None, 0, 0)

    assert uninformative(made(NO_EVIDENCE, 2)) and not uninformative(made(NO_EVIDENCE, 3))
    assert not uninformative(made(FASTER, 2))  # an interval that cleared 1 is a test at its level all the same
    assert not uninformative(made(NO_EVIDENCE, 1))  # one seed has no interval at all: said as such

    table = format_verdicts(summarize_configs(summarize(hand_made_records(repeats=2)), "max"))
    control = next(line for line in table.splitlines() if line.startswith("control "))
    assert "UNINFORMATIVE: intervals from 2 seeds" in control
    assert "control (A/A): no evidence (from 2 seeds: uninformative, it tests nothing)" in table
    assert "warning: intervals from fewer than 3 seeds are uninformative (control, method-1)" in table
