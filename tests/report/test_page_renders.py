"""The report page in a real browser: headless Chromium (Debian's chromium package) renders report.html
through scripts/screenshot_report.sh, and the screenshot shows the page with its inlined figures."""

from __future__ import annotations

import dataclasses
import html
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from reportkit import hand_made_records

from raycomp.cli.report import main

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "screenshot_report.sh"
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(
    BROWSER is None,
    reason="Chromium is not installed (apt-get install -y chromium): the page's rendering is not checked",
)


def screenshot(html: Path, png: Path) -> np.ndarray:
    done = subprocess.run(["bash", str(SCRIPT), str(html), str(png)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    from matplotlib.image import imread

    return imread(png)[..., :3]  # RGB in [0, 1]


def colored(image: np.ndarray) -> int:
    """Pixels with a clear hue: the figures' lines, markers and bars (the page's own text is grey)."""
    return int(((image.max(axis=2) - image.min(axis=2)) > 0.15).sum())


def test_the_page_renders_with_its_figures(hand_made_sweep, tmp_path):
    assert main([str(hand_made_sweep)]) == 0
    page = hand_made_sweep / "report" / "report.html"
    shot = screenshot(page, tmp_path / "report.png")
    assert shot.shape[:2] == (2400, 1200) and (tmp_path / "report.png").stat().st_size > 50_000
    assert (shot < 0.9).any(axis=2).mean() > 0.05  # not a blank page

    # The same page with its images taken out: what the figures add is what a broken image would lose.
    bare = tmp_path / "bare.html"
    bare.write_text(re.sub(r'src="data:image/png;base64,[^"]*"', 'src=""', page.read_text()))
    without = screenshot(bare, tmp_path / "bare.png")
    added = colored(shot) - colored(without)  # a broken image adds next to none; the badges above are the same
    assert added > 5_000 and added > colored(without), (colored(shot), colored(without))


def test_the_script_refuses_a_missing_page(tmp_path):
    done = subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path / "none.html"), str(tmp_path / "x.png")], capture_output=True, text=True
    )
    assert done.returncode == 2 and "no such file" in done.stderr and not (tmp_path / "x.png").exists()


def rendered_text(page: Path) -> str:
    """The page's words as Chromium parsed and laid it out (its DOM after loading), tags and entities gone."""
    with tempfile.TemporaryDirectory() as profile:
        command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
        command += [f"--user-data-dir={profile}", "--dump-dom", page.as_uri()]
        dom = subprocess.run(command, capture_output=True, text=True, timeout=120).stdout
    body = dom.split("<body>", 1)[-1]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def test_the_rendered_page_says_lower_is_better_failed_and_uninformative(tmp_path):
    """Issue 32: an error to minimise, a configuration whose trials failed, and two seeds, as a reader sees them."""
    from test_page_states import FIRST_LINE, MAE, as_error_metric, write_sweep

    records = [
        dataclasses.replace(r, status="ERROR", history=[], error=f"{FIRST_LINE} | more", error_line=FIRST_LINE)
        if r.arm.config_id == "method-1"
        else r
        for r in as_error_metric(hand_made_records(repeats=2))
    ]
    folder = write_sweep(tmp_path / "states", records, MAE, "min")
    words = rendered_text(folder / "report" / "report.html")
    assert "eval/mae: lower is better." in words
    assert "less accurate (worse in eval/mae) when the Δ interval lies wholly above +0.005" in words
    assert "eval/mae against time (lower is better)" in words and "Accuracy against time" not in words
    failed_row = words.split("method-1 keep=0.5", 1)[1].split("method-2", 1)[0]
    assert f"failed {FIRST_LINE}" in failed_row and "no evidence" not in failed_row, failed_row
    assert "uninformative: from 2 seeds its interval rules nothing out" in words and "as it should be" not in words
    assert "Too few seeds. Intervals from fewer than 3 seeds are uninformative" in words
