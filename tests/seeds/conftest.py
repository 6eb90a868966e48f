"""The seed pages' examples import torchvision first, as a user would: make that import work here first."""

from raycomp.base.torchvision_shim import import_torchvision

import_torchvision()
