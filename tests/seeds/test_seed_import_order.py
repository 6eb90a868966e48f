"""The seed pages' examples import torchvision before raycomp's modules, as a user would: run them in a fresh
process that does so, since this pytest process imported raycomp's modules (and torchvision through them) first."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).with_name("test_seed_002_algorithms.py")
# pytest on the seed examples file alone, in a process that runs `first` before anything else
RUN_EXAMPLES = "{first}\nimport sys, pytest\nsys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', {examples!r}]))"


def run_examples(first: str) -> subprocess.CompletedProcess:
    code = RUN_EXAMPLES.format(first=first, examples=str(EXAMPLES))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=EXAMPLES.parents[2]
    )


@pytest.mark.spawns
def test_the_examples_run_with_torchvision_imported_before_any_raycomp_module():
    """``import raycomp`` (no torch, an import hook) then torchvision, then the examples: the CPU torch's torchvision
    is prepared by the hook, whatever imports it."""
    result = run_examples("import sys, raycomp\nimport torchvision\nassert 'raycomp.core' not in sys.modules")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.mark.spawns
def test_the_examples_run_with_torchvision_imported_before_raycomp_itself():
    alone = subprocess.run([sys.executable, "-c", "import torchvision"], capture_output=True, text=True, timeout=120)
    if "torchvision::nms does not exist" in alone.stderr:
        pytest.skip("PyPI's torchvision beside the CPU torch fails to import before raycomp (README, Set up)")
    assert alone.returncode == 0, alone.stderr[-3000:]
    result = run_examples("import torchvision")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
