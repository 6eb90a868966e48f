import pytest
import torch
from helpers import tiny_loader, tiny_model

from raycomp.core import Precision, State, Time, TimeUnit


def make_state(**kwargs):
    kwargs.setdefault("max_duration", "4ep")
    return State(tiny_model(), train_dataloader=tiny_loader(n=64, batch_size=16), **kwargs)


def test_has_what_the_state_page_lists():
    state = make_state()
    for name in (
        "model max_duration train_dataloader evaluators grad_accum precision precision_context optimizers "
        "schedulers scaler algorithms callbacks batch batch_num_samples batch_num_tokens loss outputs timestamp "
        "serialized_attributes batch_idx epoch step steps_per_epoch max_epochs get_elapsed_duration state_dict "
        "load_state_dict load_model_state"
    ).split():
        assert hasattr(state, name), name
    assert state.precision is Precision.FP32 and state.optimizers == [] and state.max_duration == Time(4, "ep")


def test_elapsed_duration_in_any_unit():
    state = make_state(max_duration="10ba")
    for _ in range(5):
        state.timestamp = state.timestamp.to_next_batch(16)
    assert state.get_elapsed_duration() == Time(0.5, TimeUnit.DURATION)
    state.max_duration = "160sp"
    assert state.get_elapsed_duration().value == 0.5


def test_elapsed_duration_in_epochs_moves_with_every_batch():
    """Batches done / (epochs x steps_per_epoch), not whole epochs as in Composer (issue 12)."""
    state = make_state(max_duration="2ep")  # 4 batches per epoch
    elapsed = []
    for _ in range(2):
        for _ in range(4):
            elapsed.append(state.get_elapsed_duration().value)
            state.timestamp = state.timestamp.to_next_batch(16)
        state.timestamp = state.timestamp.to_next_epoch()
    assert elapsed == [0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875]
    assert state.get_elapsed_duration() == Time(1.0, TimeUnit.DURATION)


def test_elapsed_duration_of_a_short_epoch_ends_at_its_epoch_boundary():
    """A loader shorter than steps_per_epoch ends the epoch early; the next epoch still starts at 1/epochs."""
    state = make_state(max_duration="2ep", steps_per_epoch=8)
    for _ in range(4):
        state.timestamp = state.timestamp.to_next_batch(16)
    assert state.get_elapsed_duration().value == 0.25
    state.timestamp = state.timestamp.to_next_epoch()
    assert state.get_elapsed_duration().value == 0.5


def test_steps_per_epoch_and_max_epochs():
    state = make_state(max_duration="10ba")
    assert state.steps_per_epoch == 4 and state.max_epochs == 3
    state.steps_per_epoch = 2
    assert state.max_epochs == 5
    state.max_duration = "100sp"
    with pytest.raises(ValueError, match="max_epochs is unknown"):
        _ = state.max_epochs


def test_batch_views():
    state = make_state()
    state.batch = (torch.zeros(2), torch.ones(2))
    assert state.batch_pair[1].sum() == 2
    with pytest.raises(TypeError, match="not a dict"):
        _ = state.batch_dict
    state.batch = {"x": torch.zeros(2)}
    assert "x" in state.batch_dict
    with pytest.raises(TypeError, match="not an \\(input, target\\) pair"):
        _ = state.batch_pair


def test_validation():
    with pytest.raises(ValueError, match="grad_accum must be >= 1"):
        make_state(grad_accum=0)
    with pytest.raises(ValueError, match="Invalid time string '4 epochs'"):
        make_state(max_duration="4 epochs")


def test_state_dict_round_trip():
    source = make_state()
    source.optimizers = [torch.optim.SGD(source.model.parameters(), lr=0.3)]
    source.timestamp = source.timestamp.to_next_batch(16).to_next_batch(16)
    target = make_state()
    target.optimizers = [torch.optim.SGD(target.model.parameters(), lr=0.1)]
    target.load_state_dict(source.state_dict())
    assert target.timestamp == source.timestamp
    assert target.optimizers[0].param_groups[0]["lr"] == 0.3
    target.optimizers.append(torch.optim.SGD(target.model.parameters(), lr=0.1))
    with pytest.raises(ValueError, match="checkpoint has 1 optimizers but this run has 2"):
        target.load_state_dict(source.state_dict())


def test_state_dict_holds_exactly_the_serialized_attributes_in_order():
    """Checkpoints stay loadable: these keys, in this order, each in the form it always had."""
    state = make_state()
    state.optimizers = [torch.optim.SGD(state.model.parameters(), lr=0.3)]
    saved = state.state_dict()
    assert (
        tuple(saved)
        == State.serialized_attributes
        == (
            "model",
            "optimizers",
            "schedulers",
            "scaler",
            "timestamp",
            "algorithms",
            "callbacks",
        )
    )
    assert saved["scaler"] is None and saved["schedulers"] == [] and saved["algorithms"] == []
    assert saved["callbacks"] == {} and saved["timestamp"] == state.timestamp.state_dict()
    assert saved["optimizers"][0]["param_groups"][0]["lr"] == 0.3 and set(saved["model"]) == set(
        state.model.state_dict()
    )


def test_amp_is_the_best_mixed_precision_for_the_device():
    assert make_state(precision="amp").precision is Precision.AMP_BF16  # the CPU computes in bf16
    assert make_state(precision="amp_fp16").precision is Precision.AMP_FP16
    with pytest.raises(ValueError, match="Unknown precision 'fp8': expected one of 'fp32', 'amp', 'amp_bf16'"):
        make_state(precision="fp8")


def test_precision_context_runs_a_forward_pass_in_the_precision():
    layer = torch.nn.Linear(4, 4)
    with make_state(precision="amp").precision_context:
        assert layer(torch.ones(1, 4)).dtype is torch.bfloat16
    with make_state().precision_context:
        assert layer(torch.ones(1, 4)).dtype is torch.float32
    asked = []

    def factory(precision):  # Composer's State takes one: Precision -> context manager
        asked.append(precision)
        return torch.autocast("cpu", dtype=torch.bfloat16)

    with make_state(precision_context=factory).precision_context:
        assert layer(torch.ones(1, 4)).dtype is torch.bfloat16
    assert asked == [Precision.FP32]


def test_load_state_dict_is_strict_by_default():
    """Composer's State page says strict=False; raycomp refuses a checkpoint whose model keys differ."""
    saved = make_state().state_dict()
    saved["model"] = {key: value for key, value in saved["model"].items() if not key.endswith("bias")}
    with pytest.raises(RuntimeError, match="Missing key"):
        make_state().load_state_dict(saved)
    make_state().load_state_dict(saved, strict=False)
