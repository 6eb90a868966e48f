"""The one place raycomp imports torchvision, so that its pure-Python parts import beside any torch build.

PyPI's Linux torchvision wheels carry compiled ops (``_C.so``) linked against the CUDA build of torch.
Beside the CPU build of torch (the one ``constraints.txt`` pins) that library fails to load, which
torchvision tolerates, but torchvision 0.28's ``__init__`` then registers fake kernels for
``torchvision::nms`` and ``torchvision::qnms`` unconditionally and stops with "operator
torchvision::nms does not exist". raycomp uses only transforms, datasets and models, which need none
of the compiled ops. So, only when that import fails this way, the two operators are declared (schema
only, no kernel) and the import is retried; ``torchvision.ops.nms`` then raises torchvision's own
"Couldn't load custom C++ ops". With a matching torchvision (its CPU wheel, or CUDA torch) nothing is
declared. ``import raycomp`` runs ``prepare_torchvision`` first thing, so any later import of torchvision
in the process works, by raycomp's code or another library's (torchmetrics imports it).
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

import torch

# The operators torchvision's __init__ registers fake kernels for without checking that its ops loaded.
_UNGUARDED_OPS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_declared: list[torch.library.Library] = []  # kept alive: a Library's definitions go with it


def import_torchvision(module: str = "torchvision") -> ModuleType:
    """``module`` (torchvision or one of its submodules, e.g. ``"torchvision.transforms.v2"``), imported.

    See the module docstring for the one failure of ``import torchvision`` this works around.
    """
    try:
        importlib.import_module("torchvision")
    except RuntimeError as error:
        if "operator torchvision::" not in str(error) or _declared:
            raise
        library = torch.library.Library("torchvision", "FRAGMENT")
        for schema in _UNGUARDED_OPS:
            if not _defined(schema.split("(", 1)[0]):
                library.define(schema)
        _declared.append(library)
        importlib.import_module("torchvision")
    return importlib.import_module(module)


def prepare_torchvision() -> None:
    """Imports torchvision now where the CPU build of torch could meet PyPI's CUDA-built torchvision.

    Called by ``import raycomp`` (about a second, once per process, and only with the CPU torch and a
    torchvision installed), so that torchvision imports later from anywhere, raycomp's shim or not.
    """
    if torch.version.cuda is None and importlib.util.find_spec("torchvision") is not None:
        import_torchvision()


def _defined(name: str) -> bool:
    try:
        getattr(torch.ops.torchvision, name)
    except AttributeError:
        return False
    return True
