"""The report page in a real browser: headless Chromium (Debian's chromium package) renders report.html
through scripts/screenshot_report.sh, and the screenshot shows the page with its inlined figures."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

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
    assert colored(shot) > 5_000 and colored(shot) > 3 * colored(without), (colored(shot), colored(without))


def test_the_script_refuses_a_missing_page(tmp_path):
    done = subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path / "none.html"), str(tmp_path / "x.png")], capture_output=True, text=True
    )
    assert done.returncode == 2 and "no such file" in done.stderr and not (tmp_path / "x.png").exists()
