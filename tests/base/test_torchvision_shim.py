"""raycomp/base/torchvision_shim.py: torchvision imports beside the CPU build of torch, and only where it is used."""

import subprocess
import sys

import pytest

CHECK = """
import sys
import raycomp
assert "torchvision" not in sys.modules, "import raycomp imported torchvision"
import torchmetrics  # imports torchvision itself, not through raycomp's shim
from raycomp.base.torchvision_shim import import_torchvision
v2 = import_torchvision("torchvision.transforms.v2")
import torch
image = torch.rand(3, 8, 8)
assert v2.RandomHorizontalFlip(p=1.0)(image).equal(image.flip(-1))
print("ok")
"""


@pytest.mark.spawns  # a fresh interpreter: this one has imported torchvision long ago
def test_import_raycomp_leaves_torchvision_unimported_and_any_later_import_of_it_works():
    result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "ok"
