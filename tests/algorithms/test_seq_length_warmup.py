"""SeqLengthWarmup: Composer's staircase schedule in a few buckets, truncation (and reshaping) of batches, the
Trainer's batches, and which configs may be compiled."""

import itertools

import pytest
import torch
from lm_helpers import lm_trainer

from raycomp.algorithms import SelectiveBackprop, SeqLengthWarmup
from raycomp.algorithms.seq_length_warmup import seq_length_at
from raycomp.config import ConfigError, load_experiment
from raycomp.config.recipe import build_algorithms
from raycomp.core import Callback, Event
from raycomp.functional import set_batch_sequence_length
from raycomp.preflight.experiment import load_checked_experiment


def test_schedule_is_a_staircase_from_min_to_max_over_duration():
    lengths = [seq_length_at(e / 100, 0.5, 8, 64, 8) for e in range(101)]
    assert lengths[0] == 8 and lengths[49] == 56 and lengths[50:] == [64] * 51
    assert all(b >= a for a, b in itertools.pairwise(lengths))
    assert set(lengths) == {8, 16, 24, 32, 40, 48, 56, 64}
    assert all(length % 8 == 0 for length in lengths)
    # 7 steps over half of training: step k starts at k/7 of the warmup
    assert seq_length_at(0.5 * 3 / 7 - 1e-6, 0.5, 8, 64, 8) == 24 and seq_length_at(0.5 * 3 / 7, 0.5, 8, 64, 8) == 32
    assert seq_length_at(0.0, 0.0, 8, 64, 8) == 64  # no warmup
    assert seq_length_at(0.2, 0.5, 8, 60, 8) == 24  # max not on the grid: reached at the end of the warmup
    assert seq_length_at(0.5, 0.5, 8, 60, 8) == 60


@pytest.mark.parametrize(
    ("min_len", "max_len", "step", "buckets", "expected"),
    [
        (64, 512, 64, 4, [64, 192, 320, 512]),  # lm_gpu.yaml's warmup: 4 lengths instead of 8
        (16, 128, 16, 4, [16, 48, 80, 128]),  # lm.yaml's: 4 instead of 7
        (8, 1024, 8, 4, [8, 264, 520, 1024]),  # the defaults: 4 instead of 128
        (8, 64, 8, 0, [8, 16, 24, 32, 40, 48, 56, 64]),  # buckets 0: Composer's every step_size
        (8, 12, 8, 4, [8, 12]),  # less than one step: the minimum, then the full length
    ],
)
def test_lengths_come_from_a_fixed_small_set_of_buckets(min_len, max_len, step, buckets, expected):
    warmup = SeqLengthWarmup(
        duration=0.5, min_seq_length=min_len, max_seq_length=max_len, step_size=step, buckets=buckets
    )
    assert warmup.lengths == expected
    seen = [warmup.seq_length_at(e / 1000) for e in range(1001)]
    assert sorted(set(seen)) == expected and seen == sorted(seen)
    assert all(length % step == 0 for length in expected[:-1])
    if buckets:
        assert len(expected) <= buckets + 1 and warmup.compiles


def test_truncation_cuts_every_sequence_tensor_and_keeps_the_rest():
    inputs, targets, labels = torch.arange(24).view(2, 12), torch.arange(24).view(2, 12) + 1, torch.tensor([3, 4])
    cut = set_batch_sequence_length((inputs, targets, labels), 5)
    assert isinstance(cut, tuple) and cut[0].tolist() == inputs[:, :5].tolist() and cut[1].shape == (2, 5)
    assert cut[2] is labels
    as_dict = set_batch_sequence_length({"input_ids": inputs, "attention_mask": torch.ones(2, 12)}, 4)
    assert {k: tuple(v.shape) for k, v in as_dict.items()} == {"input_ids": (2, 4), "attention_mask": (2, 4)}
    batch = [inputs, targets]
    assert set_batch_sequence_length(batch, 12) is batch  # already short enough: untouched
    with pytest.raises(ValueError, match="at least 1"):
        set_batch_sequence_length(batch, 0)


def test_reshaping_instead_keeps_every_token_and_inputs_aligned_with_targets():
    stream = torch.arange(25)
    inputs, targets = stream[:-1].view(2, 12), stream[1:].view(2, 12)
    new_inputs, new_targets = set_batch_sequence_length((inputs, targets), 5, truncate=False)
    assert new_inputs.shape == (4, 5)  # 24 tokens -> 4 rows of 5, the last 4 tokens dropped
    assert torch.equal(new_targets, new_inputs + 1)  # each target is still the next token of its input
    with pytest.raises(ValueError, match="without a sequence dimension"):
        set_batch_sequence_length((inputs, torch.tensor([1, 2])), 5, truncate=False)


class LengthRecorder(Callback):
    def __init__(self) -> None:
        self.lengths: list[tuple[int, int]] = []

    def run_event(self, event, state, logger):
        if event is Event.AFTER_DATALOADER:
            self.lengths.append(tuple(state.batch[0].shape))
            assert state.batch[1].shape == state.batch[0].shape


def test_trainer_batches_are_truncated_on_schedule():
    recorder = LengthRecorder()
    warmup = SeqLengthWarmup(duration=0.5, min_seq_length=4, max_seq_length=16, step_size=4)
    trainer = lm_trainer(None, [warmup], max_duration="8ba", callbacks=[recorder])
    trainer.fit()
    # elapsed before batch b is b/8; warmup over the first half: 3 steps of 4 tokens
    assert [shape[1] for shape in recorder.lengths] == [4, 4, 8, 12, 16, 16, 16, 16]
    assert all(shape[0] == 16 for shape in recorder.lengths)
    assert trainer.state.timestamp.token == 16 * (4 + 4 + 8 + 12 + 16 * 4)  # tokens trained on


def test_selective_backprop_ranks_first_then_the_kept_sequences_are_cut():
    recorder = LengthRecorder()
    algorithms = [
        SeqLengthWarmup(1.0, 4, 16, 4),
        SelectiveBackprop(start=0, end=1, keep=0.5, scale_factor=1.0, interrupt=0),
    ]
    lm_trainer(None, algorithms, max_duration="2ba", callbacks=[recorder]).fit()
    assert recorder.lengths == [(8, 4), (8, 8)]  # half of 16 sequences kept, then cut (3 steps: 4, 8, 12)


def test_constructor_validates():
    with pytest.raises(ValueError, match="max_seq_length >= min_seq_length"):
        SeqLengthWarmup(min_seq_length=64, max_seq_length=32)
    with pytest.raises(ValueError, match="duration"):
        SeqLengthWarmup(duration=1.5)


def test_experiment_config(tmp_path):
    path = tmp_path / "exp.yaml"
    language_model = "model: {name: gpt}\ndata: {name: stdlib_text}\n"
    path.write_text(language_model + "algorithms:\n  seq_length_warmup:\n    duration: 0.4\n    max_seq_length: 128\n")
    [algorithm] = build_algorithms(load_experiment(str(path)))
    assert isinstance(algorithm, SeqLengthWarmup) and (algorithm.duration, algorithm.max_seq_length) == (0.4, 128)
    path.write_text("algorithms:\n  seq_length_warmup:\n    step_size: 0\n")
    with pytest.raises(ConfigError, match="step_size: must be >= 1"):
        load_experiment(str(path))
    path.write_text("algorithms: {seq_length_warmup: {}}\n")  # the CNN: an image's dim 1 is its channels
    with pytest.raises(ConfigError, match=r"seq_length_warmup: .*no token sequences.*float32 \(2, 3, 32, 32\)"):
        load_checked_experiment(str(path))  # the workload check: loading the config builds nothing


def test_compile_takes_bucketed_lengths_and_refuses_every_step_size(tmp_path):
    """A bucketed warmup is a few static graphs; Composer's staircase (buckets 0) could be 128 of them."""
    path = tmp_path / "exp.yaml"
    path.write_text(
        "model: {name: gpt}\ndata: {name: stdlib_text}\ncompile: true\nalgorithms: {seq_length_warmup: {}}\n"
    )
    assert load_experiment(str(path)).compile is True
    path.write_text(
        "model: {name: gpt}\ndata: {name: stdlib_text}\ncompile: true\nalgorithms: {seq_length_warmup: {buckets: 0}}\n"
    )
    with pytest.raises(ConfigError, match=r":3: compile: cannot be used with seq_length_warmup"):
        load_experiment(str(path))
