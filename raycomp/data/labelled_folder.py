"""torchvision's ``ImageFolder`` with the class indices given: an eval split labelled as its training split.

Apart from ``image_folder.py`` because it imports torchvision (about a second), which checking a config need not.
"""

from __future__ import annotations

from typing import Any

from raycomp.base.torchvision_shim import import_torchvision

ImageFolder = import_torchvision("torchvision.datasets").ImageFolder


class LabelledFolder(ImageFolder):
    """An ImageFolder whose ``classes`` (name -> index) may be given; a given class without images is allowed."""

    def __init__(self, root: str, transform: Any = None, classes: dict[str, int] | None = None) -> None:
        self._given = classes
        super().__init__(root, transform=transform, allow_empty=classes is not None)

    def find_classes(self, directory: str) -> tuple[list[str], dict[str, int]]:
        if self._given is None:
            return super().find_classes(directory)
        return sorted(self._given, key=self._given.__getitem__), dict(self._given)
