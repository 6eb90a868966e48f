"""The seed pages' examples import torchvision first, as a user would: make that import work here first."""

from raycomp._torchvision import import_torchvision

import_torchvision()
