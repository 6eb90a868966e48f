"""``python -m raycomp.report --profile``: performance profiles over folders the test writes, two hand-made sweeps
whose times to the baseline's final accuracy are known (tests/reportkit.py: reports every 10 s of the baseline's
clock, ``speed`` times as fast; the final report reaches the seed's final accuracy), and a simulated find."""

from __future__ import annotations

from findkit import simulated_find
from reportkit import SB, Arm, hand_made_records, write_hand_made

from raycomp.cli.report import main
from raycomp.report.profile_inputs import read_workload, sweep_label

# On "fast_sb" SelectiveBackprop reaches the target in 20 s, the baseline in 40 s; on "lossy_sb" it ends 0.1 below
# the baseline at every seed, so never gets there. Profile by method: SelectiveBackprop rho = 1/2 from tau 1 on
# (score 3/6); the baseline 1/2 at tau 1, 1 from tau 2 (score (2 + 3)/6).
FAST = (Arm("baseline", "baseline", {}), Arm("method-1", "method", {f"{SB}.keep": 0.5}, speed=2.0))
LOSSY = (Arm("baseline", "baseline", {}), Arm("method-1", "method", {f"{SB}.keep": 0.5}, delta=(-0.1,) * 3))


def test_profiles_over_two_sweeps_have_the_known_scores_and_write_the_figure_and_tables(tmp_path, capsys):
    fast = write_hand_made(tmp_path / "fast_sb", hand_made_records(arms=FAST))
    lossy = write_hand_made(tmp_path / "lossy_sb", hand_made_records(arms=LOSSY))
    assert read_workload(fast).times() == {"baseline": 40.0, "selective_backprop": 20.0}
    out = tmp_path / "profile"
    assert main(["--profile", str(fast), str(lossy), "--out", str(out)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["baseline", "0.833", "0.50", "0.50", "0.50", "1.00", "1.00", "2", "of", "2"] in rows
    assert ["selective_backprop", "0.500", "0.50", "0.50", "0.50", "0.50", "0.50", "1", "of", "2"] in rows
    assert (out / "profile.png").stat().st_size > 10_000
    markdown = (out / "profile.md").read_text()
    assert "| method | score | ρ(1) | ρ(1.25) | ρ(1.5) | ρ(2) | ρ(4) | reached the target |" in markdown
    assert (
        "| lossy_sb | 40.00 s (1.00×) | never |" in markdown
        and "| fast_sb | 40.00 s (2.00×) | 20.00 s (1.00×) |" in markdown
    )
    page = (out / "profile.html").read_text()
    assert "Performance profiles over 2 workloads" in page and "time/train_wall_s" in page


def test_a_find_is_a_workload_and_a_recipe_is_named_as_a_find_names_it(tmp_path, capsys):
    simulated_find(tmp_path / "sim", {"m1": 1.5})
    times = read_workload(tmp_path / "sim").times()
    assert times["m1"] < times["baseline"] < float("inf")
    assert set(read_workload(tmp_path / "sim").times(by="recipe")) >= {"baseline", "m1", "m1(level=1)"}
    assert sweep_label({f"{SB}.keep": 0.5, "algorithms": ["selective_backprop", "mixup"], "lr": 0.1}) == (
        "mixup+selective_backprop(keep=0.5), lr=0.1",
        "mixup+selective_backprop",
    )
    assert main(["--profile", str(tmp_path / "sim"), str(tmp_path / "none")]) == 2
    assert "no find or sweep at" in capsys.readouterr().err
