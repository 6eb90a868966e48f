"""The one place raycomp imports torchvision, so that its pure-Python parts import beside any torch build.

PyPI's Linux torchvision wheels carry compiled ops (``_C.so``) linked against the CUDA build of torch.
Beside the CPU build of torch (the one ``constraints.txt`` pins) that library fails to load, which
torchvision tolerates, but torchvision 0.28's ``__init__`` then registers fake kernels for
``torchvision::nms`` and ``torchvision::qnms`` unconditionally and stops with "operator
torchvision::nms does not exist". raycomp uses only transforms, datasets and models, which need none
of the compiled ops. So, only when torchvision's compiled ops do not load, the two operators are declared
(schema only, no kernel); ``torchvision.ops.nms`` then raises torchvision's own
"Couldn't load custom C++ ops". With a matching torchvision (its CPU wheel, or CUDA torch) nothing is
declared. ``import raycomp`` runs ``prepare_torchvision`` first thing, so any later import of torchvision
in the process works, by raycomp's code or another library's (torchmetrics imports it). It declares them
up front when the ops do not load, without importing torchvision.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
from pathlib import Path
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
    prepare_torchvision()
    return importlib.import_module(module)


def prepare_torchvision() -> None:
    """Makes a later ``import torchvision`` work beside the CPU build of torch, without importing it now.

    Called by ``import raycomp``. It only tries to load torchvision's compiled ops (milliseconds) and
    declares the two operators when they do not load. Importing torchvision itself takes about a second (its
    ``ops`` import ``torch._dynamo``), which a process that never uses it (a sweep's driver, a CLI refusing a
    config) need not pay; torchmetrics imports it where metrics are built.
    """
    if _declared or torch.version.cuda is not None:
        return
    spec = importlib.util.find_spec("torchvision")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations or _ops_load(spec.submodule_search_locations[0]):
        return
    library = torch.library.Library("torchvision", "FRAGMENT")
    for schema in _UNGUARDED_OPS:
        if not _defined(schema.split("(", 1)[0]):
            library.define(schema)
    _declared.append(library)


def _ops_load(package_folder: str) -> bool:
    """Whether torchvision's ``_C`` library loads here, as ``torchvision.extension`` will try (and then skip it)."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = Path(package_folder) / f"_C{suffix}"
        if path.is_file():
            try:
                torch.ops.load_library(str(path))
            except OSError:
                return False
            return True
    return False


def _defined(name: str) -> bool:
    try:
        getattr(torch.ops.torchvision, name)
    except AttributeError:
        return False
    return True
