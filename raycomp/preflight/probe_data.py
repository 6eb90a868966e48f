"""A batch of two from each split of a run's data, read as the run reads it, for the workload probe
(``config.probe``): the built-in sets at next to no cost, a user's data module, an image folder or a local Hugging
Face dataset; what cannot be read is a ``WorkloadProblem`` at its config key."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from raycomp.base.errors import one_line
from raycomp.config.messages import Problem
from raycomp.data.probe import PROBE_SIZE, dataset_batch, declared_classes, probe_batches
from raycomp.preflight.call_problems import call_problem

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig

_CIFAR10_SHAPE, _CIFAR10_CLASSES = (3, 32, 32), 10


class WorkloadProblem(Exception):
    """The workload cannot be built or run: ``problems`` are ``(key path, message)`` pairs, as a config error's."""

    def __init__(self, *problems: Problem) -> None:
        super().__init__("; ".join(message for _, message in problems))
        self.problems: list[Problem] = list(problems)


def workload_batches(config: ExperimentConfig) -> tuple[Any, Any, int | None]:
    """``(train batch, eval batch, declared classes)`` of the config's data, each batch of at most two samples."""
    data = config.data
    if data.class_path is not None:
        return _user_batches(config)
    if data.name == "synthetic":
        from raycomp.config.recipe import data_seed
        from raycomp.data.synthetic import SyntheticCIFAR

        train, test = (SyntheticCIFAR(PROBE_SIZE, split, seed=data_seed(config)) for split in ("train", "test"))
        return dataset_batch(train, "train"), dataset_batch(test, "eval"), declared_classes(train)
    if data.name == "cifar10":  # its shape and classes are fixed: reading 50,000 images would tell nothing more
        images = torch.zeros(PROBE_SIZE, *_CIFAR10_SHAPE)
        labels = torch.tensor([0, _CIFAR10_CLASSES - 1])
        return (images, labels), (images, labels), _CIFAR10_CLASSES
    from raycomp.data import TEXT_DATASETS

    if data.name in TEXT_DATASETS:  # byte tokens, and the same shifted by one as targets (TokenSequences)
        tokens = torch.zeros(PROBE_SIZE, data.seq_len, dtype=torch.long)
        return (tokens, tokens), (tokens, tokens), None
    return _file_batches(config)


def _user_batches(config: ExperimentConfig) -> tuple[Any, Any, int | None]:
    from raycomp.base.import_path import import_callable
    from raycomp.data.user_data import as_user_data

    data = config.data
    class_path = str(data.class_path)
    target = import_callable(class_path)
    try:
        returned = target(**data.init_args)
    except Exception as error:
        raise WorkloadProblem(call_problem("data", target, class_path, data.init_args, error)) from None
    try:
        user = as_user_data(returned, class_path)
    except TypeError as error:
        raise WorkloadProblem((("data", "class_path"), str(error))) from None
    try:
        train, evaluation = probe_batches(user)
    except ValueError as error:
        raise WorkloadProblem((("data", "class_path"), f"{class_path}: {error}")) from None
    return train, evaluation, declared_classes(user.datasets[0]) if user.datasets else None


def _file_batches(config: ExperimentConfig) -> tuple[Any, Any, int | None]:
    """An image folder (one image of each class decoded) or a local Hugging Face dataset, read as a run reads it."""
    data = config.data
    root = str(data.root)
    try:
        if data.name == "image_folder":
            from raycomp.data.image_folder import image_folder_datasets, undecodable_image

            train, evaluation = image_folder_datasets(root, data.image_size)
            undecodable = undecodable_image(train)
            if undecodable:
                raise WorkloadProblem((("data", "root"), undecodable))
        else:
            from raycomp.data.hf_dataset import hf_datasets

            train, evaluation = hf_datasets(
                root, data.train_split, data.eval_split, data.input_column, data.label_column,
                data.image_size, data.seq_len,
            )  # fmt: skip
        return dataset_batch(train, "train"), dataset_batch(evaluation, "eval"), declared_classes(train)
    except WorkloadProblem:
        raise
    except ValueError as error:  # an empty split, samples that do not batch: said in the probe's own words
        raise WorkloadProblem((("data", "root"), f"{root}: {error}")) from None
    except Exception as error:
        raise WorkloadProblem((("data", "root"), f"{root}: {one_line(error)}")) from None
