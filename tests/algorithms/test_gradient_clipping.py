import pytest
import torch
from helpers import tiny_loader, tiny_model
from torch import nn

from raycomp import Event, Trainer
from raycomp.algorithms import GradientClipping
from raycomp.config import ConfigError, load_experiment
from raycomp.config.recipe import build_algorithms
from raycomp.functional import apply_gradient_clipping


def with_grads(*pairs):
    """A module whose parameters have the given (weight, grad) values."""
    module = nn.Module()
    for index, (weight, grad) in enumerate(pairs):
        param = nn.Parameter(torch.tensor(weight))
        param.grad = torch.tensor(grad)
        module.register_parameter(f"p{index}", param)
    return module


def grads(module):
    return [p.grad for p in module.parameters()]


def test_norm_scales_all_gradients_to_the_threshold_together():
    module = with_grads(([0.0, 0.0], [3.0, 0.0]), ([0.0], [4.0]))  # global norm 5
    apply_gradient_clipping(module, "norm", 1.0)
    torch.testing.assert_close(grads(module), [torch.tensor([0.6, 0.0]), torch.tensor([0.8])])
    apply_gradient_clipping(module, "norm", 2.0)  # now under the threshold: unchanged
    torch.testing.assert_close(grads(module), [torch.tensor([0.6, 0.0]), torch.tensor([0.8])])


def test_value_clamps_each_element():
    module = with_grads(([0.0, 0.0, 0.0], [-3.0, 0.5, 2.0]))
    apply_gradient_clipping(module, "value", 1.0)
    assert torch.equal(grads(module)[0], torch.tensor([-1.0, 0.5, 1.0]))


def test_adaptive_clips_each_unit_against_its_weight_norm():
    module = with_grads(
        ([[3.0, 4.0], [0.0, 1.0]], [[30.0, 40.0], [0.01, 0.0]]),  # rows: |w| = 5, 1; |g| = 50, 0.01
        ([0.0, 0.0], [3.0, 4.0]),  # a zero bias: |w| is floored at 1e-3
    )
    apply_gradient_clipping(module, "adaptive", 0.1)
    weight_grad, bias_grad = grads(module)
    torch.testing.assert_close(weight_grad, torch.tensor([[0.3, 0.4], [0.01, 0.0]]))  # row 0 to 0.1 * 5
    torch.testing.assert_close(bias_grad, torch.tensor([3.0, 4.0]) * (1e-3 * 0.1 / 5))


def test_parameters_without_gradients_are_skipped_and_unknown_types_refused():
    module = with_grads(([1.0], [5.0]))
    module.frozen = nn.Parameter(torch.ones(2))
    apply_gradient_clipping(module, "norm", 1.0)
    assert module.frozen.grad is None
    with pytest.raises(ValueError, match="clipping_type must be one of 'norm', 'value', 'adaptive'"):
        apply_gradient_clipping(module, "l1", 1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(clipping_type="max"), "clipping_type\n  Input should be 'norm', 'value' or 'adaptive'"),
        (dict(clipping_threshold=0), "clipping_threshold\n  Input should be greater than 0"),
        (dict(clipping_threshold=-1.0), "clipping_threshold\n  Input should be greater than 0"),
        (dict(clipping_threshold=float("inf")), "clipping_threshold\n  Input should be a finite number"),
        (dict(clipping_threshold="1"), "clipping_threshold\n  Input should be a valid number"),
    ],
)
def test_constructor_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GradientClipping(**kwargs)


def step_size(precision="fp32", grad_accum=1, algorithms=()):
    """The norm of the first step's weight change, with plain SGD at lr=1: the norm of the gradient used."""
    model = tiny_model()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    trainer = Trainer(
        model,
        tiny_loader(),
        "1ba",
        algorithms=list(algorithms),
        optimizers=optimizer,
        precision=precision,
        grad_accum=grad_accum,
        device="cpu",
        seed=0,
    )
    trainer.fit()
    assert torch.isfinite(trainer.state.loss)
    change = torch.cat([(p.detach() - b).flatten() for p, b in zip(model.parameters(), before, strict=True)])
    return change.norm().item(), trainer


@pytest.mark.parametrize(("precision", "grad_accum"), [("fp32", 1), ("fp32", 2), ("amp_fp16", 1)])
@pytest.mark.measured
def test_in_the_trainer_the_step_uses_the_clipped_gradient(precision, grad_accum):
    unclipped, _ = step_size(precision, grad_accum)
    # Unclipped 0.87-1.60 over seeds 0-4 x kernels default, AVX2, AVX-512 (issue 29; sd 0.29, seed 0 1.35-1.37:
    # 4 sd above 0.1); the clipped step was within 2e-6 of 0.01 (rel=1e-3 is 500 times that).
    assert unclipped > 0.1
    clipped, trainer = step_size(precision, grad_accum, [GradientClipping("norm", 0.01)])
    # under fp16 the Trainer unscales before AFTER_TRAIN_BATCH: clipping the scaled gradients
    # instead would leave a step 2**16 times too small
    assert clipped == pytest.approx(0.01, rel=1e-3)
    assert trainer.engine.trace_summary.get("GradientClipping", Event.AFTER_TRAIN_BATCH).count == 1


def test_runs_on_after_train_batch_only():
    _, trainer = step_size()
    algorithm = GradientClipping()
    assert [e for e in Event if algorithm.match(e, trainer.state)] == [Event.AFTER_TRAIN_BATCH]


def test_experiment_config(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("algorithms:\n  gradient_clipping:\n    clipping_type: adaptive\n    clipping_threshold: 0.05\n")
    [algorithm] = build_algorithms(load_experiment(str(path)))
    assert isinstance(algorithm, GradientClipping)
    assert (algorithm.clipping_type, algorithm.clipping_threshold) == ("adaptive", 0.05)
    path.write_text("algorithms:\n  gradient_clipping:\n    clipping_type: l2\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(str(path))
    assert info.value.problems == [
        f"{path}:3: algorithms.gradient_clipping.clipping_type: must be 'norm', 'value' or 'adaptive', "
        "got 'l2' (default: 'norm')"
    ]
