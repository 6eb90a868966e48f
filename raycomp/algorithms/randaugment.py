"""RandAugment (Cubuk et al. 2020): a chain of ``depth`` random image operations per training example.

A regulariser with two knobs instead of a learned policy: each example gets ``depth`` operations drawn from
a fixed set (rotate, shear, translate, posterize, solarize, colour and contrast changes, ...), each at a
strength up to ``severity``. The operations are torchvision's (``randaugment_transform.py``); this module
only names the sets and puts the transform where Composer puts it.

Like Composer's, the algorithm runs once, on INIT, and changes the training data's *per-example* path rather
than the batch: every example gets its own draw, and the work runs in the DataLoader's worker processes,
in parallel with training, instead of image by image in the training process. A dataset with a
``transform`` attribute (torchvision's datasets, ``raycomp.data.CIFAR10``) gets the transform inserted
there, before its conversion to a tensor if it has one, as Composer's ``add_vision_dataset_transform``.
Any other map-style dataset (``SyntheticCIFAR``, a ``TensorDataset``) is left untouched: the train
DataLoader is rebuilt, with the same sampler and settings, over a view that augments each example. raycomp
shares its synthetic sets between the trials a process runs, so changing them would leak into the next
trial.

Differences from Composer: the sets are torchvision's operations and strength scales (``'original'`` is
``'all'``: torchvision has one version of each colour operation); Composer refuses datasets that are not a
torchvision ``VisionDataset``; float tensors outside [0, 1] are augmented on their own range (see
``randaugment_transform.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field
from torch.utils.data import DataLoader, Dataset, IterableDataset

from raycomp.algorithms.arguments import checked_arguments
from raycomp.core.algorithm import Algorithm
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State

AugmentationSet = Literal["all", "safe", "original"]

_GEOMETRY_AND_TONE = (
    "AutoContrast",
    "Equalize",
    "Posterize",
    "Rotate",
    "Solarize",
    "ShearX",
    "ShearY",
    "TranslateX",
    "TranslateY",
)
_COLOUR = ("Color", "Contrast", "Brightness", "Sharpness")  # the corruptions of CIFAR-10-C / ImageNet-C
# Composer's sets, by torchvision's operation names. torchvision's "Identity" is in none, as in Composer.
OPERATIONS: dict[str, tuple[str, ...]] = {
    "all": _GEOMETRY_AND_TONE + _COLOUR,
    "safe": _GEOMETRY_AND_TONE,  # leaves out what the -C test sets corrupt, to measure robustness fairly
    "original": _GEOMETRY_AND_TONE + _COLOUR,
}


class RandAugment(Algorithm):
    """On INIT, makes the train DataLoader apply ``RandAugmentTransform(severity, depth, augmentation_set)``
    to each example (see the module docstring for where it goes).

    ``severity`` (0-10) is the strongest an operation may be; ``depth`` the number chained per example;
    ``augmentation_set`` ``'all'``, ``'safe'`` (no colour, contrast, brightness or sharpness changes) or
    ``'original'`` (the same as ``'all'`` here).
    """

    # the values a recipe search (raycomp find) tries beside the defaults
    tuned_arguments: ClassVar[Mapping[str, tuple[Any, ...]]] = {"severity": (3, 6, 9), "depth": (1, 2)}

    @checked_arguments
    def __init__(
        self,
        severity: Annotated[int, Field(ge=0, le=10)] = 9,
        depth: Annotated[int, Field(ge=0)] = 2,
        augmentation_set: AugmentationSet = "all",
    ) -> None:
        self.severity = severity
        self.depth = depth
        self.augmentation_set = augmentation_set

    def match(self, event: Event, state: State) -> bool:
        return event is Event.INIT

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        from raycomp.algorithms.randaugment_transform import RandAugmentTransform  # imports torchvision

        loader = state.train_dataloader
        if not isinstance(loader, DataLoader) or isinstance(loader.dataset, IterableDataset):
            raise TypeError(
                "RandAugment augments the examples of a torch DataLoader over a map-style dataset; "
                f"the train dataloader is {type(loader).__name__}"
            )
        transform = RandAugmentTransform(self.severity, self.depth, self.augmentation_set)
        if hasattr(loader.dataset, "transform"):
            add_dataset_transform(loader.dataset, transform)
        else:
            state.train_dataloader = with_example_transform(loader, transform)


def add_dataset_transform(dataset: Any, transform: Callable[[Any], Any]) -> None:
    """Put ``transform`` into ``dataset.transform``: before its conversion to a tensor, else last (Composer's place).

    A dataset whose transform holds a ``RandAugmentTransform`` already is left as it is, so a second Trainer
    over the same dataset does not augment it twice.
    """
    from raycomp.algorithms.randaugment_transform import RandAugmentTransform
    from raycomp.base.torchvision_shim import import_torchvision

    v1, v2 = import_torchvision("torchvision.transforms"), import_torchvision("torchvision.transforms.v2")
    compose = (v1.Compose, v2.Compose)
    to_tensor = (v1.ToTensor, v1.PILToTensor, v2.ToTensor, v2.ToImage, v2.PILToTensor)
    current = dataset.transform
    steps = list(current.transforms) if isinstance(current, compose) else [current]
    if any(isinstance(step, RandAugmentTransform) for step in steps):
        return
    if current is None:
        dataset.transform = transform
    elif isinstance(current, compose):
        index = next((i for i, step in enumerate(steps) if isinstance(step, to_tensor)), len(steps))
        current.transforms.insert(index, transform)
    elif isinstance(current, to_tensor):
        dataset.transform = v1.Compose([transform, current])
    else:
        dataset.transform = v1.Compose([current, transform])


class ExampleTransformed(Dataset):
    """``dataset`` with ``transform`` applied to each example's input (the first item of its tuple)."""

    def __init__(self, dataset: Dataset, transform: Callable[[Any], Any]) -> None:
        self.dataset = dataset
        self.transform = transform

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        input, *rest = self.dataset[index]
        return (self.transform(input), *rest)


def with_example_transform(loader: DataLoader, transform: Callable[[Any], Any]) -> DataLoader:
    """A DataLoader like ``loader`` (same sampler, batching, workers) over ``ExampleTransformed(loader.dataset)``.

    The sampler object itself is kept, so ``sampler.set_epoch`` and a resumed epoch's order are unchanged.
    """
    batching: dict[str, Any] = (
        {"batch_sampler": loader.batch_sampler}  # the loader was given its own batch sampler
        if loader.batch_size is None and loader.batch_sampler is not None
        else {"batch_size": loader.batch_size, "sampler": loader.sampler, "drop_last": loader.drop_last}
    )
    return DataLoader(
        ExampleTransformed(loader.dataset, transform),
        **batching,
        num_workers=loader.num_workers,
        collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory,
        timeout=loader.timeout,
        worker_init_fn=loader.worker_init_fn,
        multiprocessing_context=loader.multiprocessing_context,
        generator=loader.generator,
        prefetch_factor=loader.prefetch_factor,
        persistent_workers=loader.persistent_workers,
        pin_memory_device=loader.pin_memory_device,
        in_order=loader.in_order,
    )
