"""A find's report (``python -m raycomp.report runs/<find>``, also written at a find's end): each candidate's path
through the stages, every recipe tried against time with its Pareto front, the confirmed verdict. From the files
of simulated finds (tests/findkit.py: the real decision code and find.json writer, no Ray), and one in Chromium."""

from __future__ import annotations

import json
import re

import pytest
from findkit import simulated_find

from raycomp.cli.report import main
from raycomp.report.find_data import TriedArm, pareto_front, read_find
from raycomp.report.find_figure import find_pareto_figure
from raycomp.report.text import escape


@pytest.fixture(scope="module")
def recommending(tmp_path_factory):
    """A find whose two planted methods add up: both in the recipe, confirmed faster; m0 leaves at the screen."""
    folder = tmp_path_factory.mktemp("finds") / "adds_up"
    simulated_find(folder, {"m1": 1.5, "m2": 1.4}, timing="cpu")
    return folder


def row_of(page: str, name: str) -> str:
    return page.split(f"<tr data-candidate='{name}'>", 1)[1].split("</tr>", 1)[0]


def test_the_page_holds_each_candidates_path_and_the_confirmed_verdict(recommending, capsys):
    assert main([str(recommending), "--no-mlflow"]) == 0
    assert "report: " in capsys.readouterr().out
    page = (recommending / "report" / "report.html").read_text()
    assert (recommending / "report" / "recipes_pareto.png").stat().st_size > 20_000
    document = json.loads((recommending / "find.json").read_text())
    for name, steps in document["paths"].items():
        row = row_of(page, name)
        assert all(escape(step["outcome"]) in row for step in steps), name
    for name in ("m1", "m2"):  # in the recipe: a word from every stage
        assert row_of(page, name).count("class='stage-recipe'") == 4 and "in the recipe" in row_of(page, name)
    m0 = row_of(page, "m0")
    assert "class='stage-left' data-stage='screen'" in m0 and m0.count("stage-none") == 3 and "left at Screen" in m0
    assert "left out before the race: no raycomp GPT attention found" in row_of(page, "alibi")

    verdict = document["verdict"]
    confirmed = page.split('<table id="confirmed">', 1)[1].split("</table>", 1)[0]
    assert '<span class="verdict faster">faster</span>' in confirmed
    assert f"{verdict['speedup']:.2f}×" in confirmed and f"{verdict['n']} paired seeds" in confirmed
    assert "the control arm (the baseline again), same seeds" in confirmed
    assert escape(document["headline"]) in page and "higher is better" in page
    assert "algorithms:\n  m1:" in page and "\n  m2: {}" in page  # the block to paste


def test_the_figure_draws_the_front_the_chosen_recipe_and_names_its_clock(recommending):
    report = read_find(recommending)
    axes = find_pareto_figure(report).axes[0]
    gids = {artist.get_gid() for artist in axes.get_children()}
    assert {"frontier", "control", "front", "chosen", f"point:{report.chosen}"} <= gids
    assert axes.get_xlabel() == "the training steps' CPU time (s), median over seeds"
    assert axes.get_ylabel() == "final eval/accuracy, median over seeds (higher is better)"


def test_a_find_that_recommends_nothing_says_so_with_its_evidence(tmp_path):
    folder = tmp_path / "nothing"
    simulated_find(folder, {}, count=2)
    assert main([str(folder), "--no-mlflow"]) == 0
    page = (folder / "report" / "report.html").read_text()
    assert '<p class="warn" id="answer"><b>none of the 2 methods is faster at equal accuracy on this model' in page
    assert "not judged: no candidate was shown faster in the search" in page
    assert all("left at Screen" in row_of(page, name) for name in ("m0", "m1"))


def test_the_pareto_front_keeps_what_no_other_arm_beats_in_both_time_and_metric():
    def arm(name, time, value):
        return TriedArm(name, (0, 1), value, time)

    arms = [arm("a", 10, 0.9), arm("b", 20, 0.95), arm("c", 15, 0.85), arm("d", 30, 0.95), arm("e", 10, 0.9)]
    arms.append(TriedArm("failed", (0,), None, None))
    assert [a.arm for a in pareto_front(arms, "max")] == ["a", "e", "b"]  # d: as good as b, slower
    assert [a.arm for a in pareto_front(arms, "min")] == ["a", "e", "c"]  # a loss: lower is better


def test_the_page_reads_in_a_browser(recommending, tmp_path):
    from test_page_renders import BROWSER, rendered_text

    if BROWSER is None:
        pytest.skip("Chromium is not installed (apt-get install -y chromium): the page's rendering is not checked")
    main([str(recommending), "--no-mlflow", "--out", str(tmp_path)])
    words = rendered_text(tmp_path / "report.html")
    assert "Recipe search: adds_up" in words and "Each candidate's path through the stages" in words
    assert re.search(r"recommended: m1(\(level=\d\))?\+m2 \(on fresh seeds: faster", words), words[:400]
    assert "eval/accuracy against time: every recipe tried (higher is better)" in words
    assert "left out before the race: no raycomp GPT attention found" in words


def test_a_hand_edited_find_json_is_one_error_naming_the_key(recommending, tmp_path):
    """L2 of the 2026-12-01 probe: any wrong type in find.json was a ValueError traceback from the figure."""
    import json
    import shutil

    from raycomp.base.errors import RaycompError

    edited = shutil.copytree(recommending, tmp_path / "edited")
    path = edited / "find.json"
    document = json.loads(path.read_text())
    document["tried"][0]["time_median_s"] = "slow"
    path.write_text(json.dumps(document))
    with pytest.raises(RaycompError, match=r"is not a find\.json raycomp wrote: .*tried\[0\]\.time_median_s: must be"):
        read_find(edited)


def test_a_find_on_a_proxy_shows_each_recipes_speed_up_there_against_the_full_runs(tmp_path, capsys):
    """Issue 57 item 3: m1 is 1.5x on the proxy and 0.8x at full length, m2 1.3x on both: the page draws the proxy's
    miss and its hold on one plot, and says which is which; the proxy's own arms stay off the time axis."""
    from raycomp.report.find_proxy import proxy_held_figure

    folder = tmp_path / "on_proxy"
    answer = simulated_find(folder, {"m1": 0.8, "m2": 1.3}, proxy=0.25, proxy_speedups={"m1": 1.5, "m2": 1.3})
    assert main([str(folder), "--no-mlflow"]) == 0
    capsys.readouterr()
    page = (folder / "report" / "report.html").read_text()
    assert "Did the proxy hold? (the search raced on 0.25dur of the run)" in page
    table = page.split('<table id="proxy-held">', 1)[1].split("</table>", 1)[0]
    held = {key: h for key, _, _, h in answer.proxy_held()}
    assert (False in held.values()) == ("did not hold" in table) and (True in held.values()) == (">held<" in table)
    report = read_find(folder)
    assert not any(arm.arm.endswith("@proxy") for arm in report.tried)
    axes = proxy_held_figure(report).axes[0]
    gids = {artist.get_gid() for artist in axes.get_children()}
    assert "diagonal" in gids
    (left, right), (bottom, top) = axes.get_xlim(), axes.get_ylim()  # every interval whole on the plot
    for row in report.proxy_held:
        assert left <= row.proxy.speedup_ci_low and row.proxy.speedup_ci_high <= right
        if row.full is not None and row.full.speedup_ci_low is not None:
            assert bottom <= row.full.speedup_ci_low and row.full.speedup_ci_high <= top
    assert {f"{'held' if h else 'missed'}:{key}" for key, h in held.items() if h is not None} <= gids
    assert (folder / "report" / "proxy_held.png").stat().st_size > 10_000


def test_a_method_of_a_recipe_that_held_is_said_covered_on_the_page_not_missing(tmp_path, capsys):
    """Issue 57 item 3: after a proxy, a survivor that is in the recipe Confirm found faster is not run alone (the
    recipe held): the CLI, find.json and the page say so, rather than a bare "not run at full length"."""
    from raycomp.find.text import proxy_lines

    folder = tmp_path / "covered"
    answer = simulated_find(folder, {"m1": 1.3, "m2": 1.25}, proxy=0.25)  # effects that add up: m1+m2 is the recipe
    assert answer.recommended is not None and {"m1", "m2"} <= set(answer.recommended.names)
    assert answer.covered and not set(answer.covered) & (set(answer.alone) | set(answer.at_full))
    assert "not run alone at full length: the recipe it is in held" in "\n".join(proxy_lines(answer))
    rows = json.loads((folder / "find.json").read_text())["proxy"]["recipes"]
    assert {row["recipe"] for row in rows if row["covered"]} == set(answer.covered)
    assert main([str(folder), "--no-mlflow"]) == 0
    capsys.readouterr()
    table = (folder / "report" / "report.html").read_text().split('<table id="proxy-held">', 1)[1].split("</table>")[0]
    assert table.count("not run alone: the recipe it is in held") == len(answer.covered)
