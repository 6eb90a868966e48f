"""A round that hears nothing from its trials says so within its quiet time, with what Ray and the machine hold
(issue 59 item 4: a ``--resume`` sat 14 minutes with no output)."""

from __future__ import annotations

import time

import pytest

from raycomp.base.remedies import PYTHON, speaking
from raycomp.launch.sweep.stall import Heard, said_when_quiet


@pytest.mark.ray
def test_a_quiet_round_says_what_it_waits_for_and_a_trial_event_keeps_it_quiet(capsys, local_ray):
    with said_when_quiet(quiet_s=0.4):
        time.sleep(2.0)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("waiting:")]
    assert 1 <= len(lines) <= 5, lines  # once per quiet time (a busy machine may say it less), not once per check
    assert lines[0].startswith("waiting: no trial has started, reported or ended for 0 s; Ray has ")
    assert " CPUs free; this machine's load is " in lines[0]
    assert lines[0].endswith("Ctrl-C stops it, and --resume continues where it was")

    heard = Heard()
    with speaking(PYTHON), said_when_quiet(quiet_s=1.0):
        for _ in range(25):  # a trial reporting every 0.1 s for 2.5 s: quiet 1 s would be said twice without it
            heard.on_trial_result(0, [], None, result={})
            time.sleep(0.1)
    assert "waiting:" not in capsys.readouterr().out


def test_with_or_without_ray_it_says_the_machines_load_in_the_callers_words(capsys):
    with speaking(PYTHON), said_when_quiet(quiet_s=0.3):
        time.sleep(0.6)
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("waiting:"))
    assert "load is" in line and line.endswith("resume=True continues where it was"), line
