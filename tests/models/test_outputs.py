"""A plain module is a classifier of its logits: a tensor, or held as ``logits`` in a dict or object; what cannot be
trained by cross-entropy is said in one sentence (``raycomp.models.outputs``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from raycomp.models.outputs import classifier_output_problem, logits_of

LOGITS = torch.zeros(2, 3)


@pytest.mark.parametrize("outputs", [LOGITS, {"logits": LOGITS, "loss": None}, SimpleNamespace(logits=LOGITS)])
def test_the_logits_are_the_tensor_or_held_as_logits(outputs):
    assert logits_of(outputs) is LOGITS


def test_other_outputs_are_refused_saying_what_came_back():
    with pytest.raises(TypeError, match=r"the model returned a dict with keys 'out'; a classifier returns a \(batch"):
        logits_of({"out": LOGITS})


@pytest.mark.parametrize(
    ("logits", "targets", "classes", "problem"),
    [
        (LOGITS, torch.tensor([0, 2]), None, None),
        (LOGITS, torch.tensor([0, 1]), 5, "the model outputs 3 logits per sample but the data has labels up to 4: it "
         "needs at least 5 classes"),
        (LOGITS, torch.tensor([0, 3]), None, "labels up to 3"),
        (torch.zeros(2, 3, 4), torch.tensor([0, 1]), None, "the model returned a 3-D float32 tensor of shape (2, 3, "
         "4) for a batch of 2; a classifier returns float logits of shape (batch, classes), here (2, C)"),
        (LOGITS, torch.tensor([0.5, 1.5]), None, "the targets are a 1-D float32 tensor of shape (2,); a plain module "
         "is trained as a classifier on class indices"),
        (LOGITS, torch.full((2, 3), 1 / 3), None, None),  # class probabilities (mixed or smoothed labels)
    ],
    ids=["fits", "fewer-than-declared", "fewer-than-seen", "3-d", "float-targets", "probabilities"],
)  # fmt: skip
def test_classifier_outputs_are_checked_against_the_labels(logits, targets, classes, problem):
    found = classifier_output_problem(logits, targets, classes)
    assert found is None if problem is None else problem in found
