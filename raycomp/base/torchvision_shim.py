"""The one place raycomp imports torchvision, so that its pure-Python parts import beside any torch build.

PyPI's Linux torchvision wheels carry compiled ops (``_C.so``) linked against the CUDA build of torch.
Beside the CPU build of torch (the one ``constraints.txt`` pins) that library fails to load, which
torchvision tolerates, but torchvision 0.28's ``__init__`` then registers fake kernels for
``torchvision::nms`` and ``torchvision::qnms`` unconditionally and stops with "operator
torchvision::nms does not exist". raycomp uses only transforms, datasets and models, which need none
of the compiled ops. So, only when torchvision's compiled ops do not load, the two operators are declared
(schema only, no kernel); ``torchvision.ops.nms`` then raises torchvision's own
"Couldn't load custom C++ ops". With a matching torchvision (its CPU wheel, or CUDA torch) nothing is
declared.

``import raycomp`` must stay cheap (a CLI refusing a config pays for no torch), so it does not prepare
torchvision itself: it calls ``prepare_torchvision_before_its_import``, which only adds an import hook
(standard library, no torch). The first import of torchvision in the process, by raycomp's code or another
library's (torchmetrics, timm), runs ``prepare_torchvision`` just before it. A process that imports
torchvision before any raycomp module runs none of this; beside the CPU torch it needs torchvision's CPU
wheel (README, "Set up").
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# The operators torchvision's __init__ registers fake kernels for without checking that its ops loaded.
_UNGUARDED_OPS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_declared: list[torch.library.Library] = []  # kept alive: a Library's definitions go with it


class _PrepareBeforeTorchvision(importlib.abc.MetaPathFinder):
    """Runs ``prepare_torchvision`` when torchvision is first imported, then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname.partition(".")[0] == "torchvision":
            with_hook_removed = [finder for finder in sys.meta_path if finder is not self]
            sys.meta_path[:] = with_hook_removed
            prepare_torchvision()
        return None  # the usual finders import it


def prepare_torchvision_before_its_import() -> None:
    """The first import of torchvision in this process runs ``prepare_torchvision`` first (standard library only
    until then; installed once). Nothing to do when torchvision is imported already."""
    if "torchvision" in sys.modules or any(isinstance(f, _PrepareBeforeTorchvision) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _PrepareBeforeTorchvision())


def import_torchvision(module: str = "torchvision") -> ModuleType:
    """``module`` (torchvision or one of its submodules, e.g. ``"torchvision.transforms.v2"``), imported.

    See the module docstring for the one failure of ``import torchvision`` this works around.
    """
    prepare_torchvision()
    return importlib.import_module(module)


def prepare_torchvision() -> None:
    """Makes a later ``import torchvision`` work beside the CPU build of torch, without importing it now.

    Run by the import hook ``import raycomp`` adds, and by ``import_torchvision``. It imports torch and only
    tries to load torchvision's compiled ops (milliseconds), declaring the two operators when they do not load.
    Importing torchvision itself takes about a second (its ``ops`` import ``torch._dynamo``), which a process
    that never uses it (a sweep's driver, a CLI refusing a config) need not pay; torchmetrics imports it where
    metrics are built.
    """
    import torch

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
    import torch

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
    import torch

    try:
        getattr(torch.ops.torchvision, name)
    except AttributeError:
        return False
    return True
