"""A plain ``nn.Module`` given to the Trainer trains as a classifier, as a config's ``model.class_path`` does; anything
else is refused by name. Seed 002's Trainer example passes torchvision's resnet18 as it is (tests/seeds)."""

import pytest
import torch
from helpers import tiny_loader, tiny_model, tiny_net

from raycomp import Trainer
from raycomp.loop.model import ClassifierModel


def fit(model: torch.nn.Module) -> Trainer:
    trainer = Trainer(model, tiny_loader(), "2ep", eval_dataloader=tiny_loader(shuffle=False), device="cpu", seed=0)
    trainer.fit()
    return trainer


def test_a_plain_module_trains_exactly_as_the_classifier_wrapping_it():
    torch.manual_seed(0)
    net = tiny_net()  # the same initial weights as tiny_model(seed=0)
    plain, wrapped = fit(net), fit(tiny_model(seed=0))
    assert isinstance(plain.state.model, ClassifierModel) and plain.state.model.module is net
    for (name, trained), (_, reference) in zip(
        plain.state.model.state_dict().items(), wrapped.state.model.state_dict().items(), strict=True
    ):
        assert torch.equal(trained, reference), name
    assert plain.state.eval_metrics == wrapped.state.eval_metrics


def test_a_raycomp_model_is_used_as_it_is():
    model = tiny_model()
    assert Trainer(model, tiny_loader(), "1ep", device="cpu").state.model is model


def test_anything_but_a_module_is_refused_by_name():
    with pytest.raises(TypeError, match=r"^Trainer\(model=\.\.\.\) is a list, not a torch nn\.Module$"):
        Trainer([tiny_net()], tiny_loader(), "1ep", device="cpu")
