"""Config errors: one line per mistake, at file:line and key path, with the fix."""

import pytest
from config_files import only_problem, problems, write

# ---- one error per mistake, at file:line and key path -----------------------------------------------------


def test_unknown_top_level_key_suggests_the_right_one(tmp_path):
    path = write(tmp_path, "name: x\nseed: 1\nmodle:\n  name: cnn\n")
    message = only_problem(path)
    assert message.startswith(f"{path}:3: modle: unknown key (did you mean 'model'?; valid keys: name, seed, model, ")


def test_unknown_nested_key(tmp_path):
    path = write(tmp_path, "optimizer:\n  lr: 0.1\n  momentun: 0.9\n")
    assert only_problem(path) == (
        f"{path}:3: optimizer.momentun: unknown key (did you mean 'momentum'?; "
        "valid keys: name, class_path, init_args, lr, momentum, weight_decay, nesterov)"
    )


def test_wrong_type(tmp_path):
    path = write(tmp_path, "name: x\nseed: abc\n")
    assert only_problem(path) == f"{path}:2: seed: must be an integer, got 'abc' (default: 0)"


def test_bool_is_not_taken_for_a_number(tmp_path):
    path = write(tmp_path, "grad_accum: true\n")
    assert only_problem(path) == f"{path}:1: grad_accum: must be an integer, got true (default: 1)"


def test_negative_workers(tmp_path):
    path = write(tmp_path, "scaling:\n  num_workers: -1\n")
    message = only_problem(path)
    assert message.startswith(f"{path}:2: scaling.num_workers: must be >= 0, got -1 (the number of Ray Train workers")


def test_unknown_model_lists_valid_names(tmp_path):
    path = write(tmp_path, "model:\n  name: resnet18\n")
    assert only_problem(path) == (
        f"{path}:2: model.name: unknown model 'resnet18' "
        "(did you mean 'resnet56'?; valid models: cnn, cnn_plain, resnet20, resnet56, gpt, gpt2_hf)"
    )


def test_cifar10_needs_root(tmp_path):
    path = write(tmp_path, "seed: 0\ndata:\n  name: cifar10\n")
    message = only_problem(path)
    assert message.startswith(f"{path}:2: data.root: required when data.name is 'cifar10'")
    assert "cifar-10-batches-py" in message


@pytest.mark.parametrize("value", ["10 epochs", "0.5dur", "100sp", "0ep", "10"])
def test_bad_time_strings(tmp_path, value):
    path = write(tmp_path, f"name: x\nmax_duration: {value}\n")
    message = only_problem(path)
    assert message.startswith(f"{path}:2: max_duration: must be ")
    assert "'10ep' or '500ba'" in message or "more than zero" in message


def test_gpus_without_use_gpu(tmp_path):
    path = write(tmp_path, "scaling:\n  gpus_per_worker: 1\n")
    assert "set scaling.use_gpu: true" in only_problem(path)


def test_several_problems_are_reported_together_in_file_order(tmp_path):
    path = write(
        tmp_path,
        """\
        modle: {}
        seed: abc
        optimizer:
          lr: -1
        algorithms:
          selective_backprop: {keep: 1.5, scale_factor: 2}
        scaling:
          num_workers: -1
        """,
    )
    found = problems(path)
    assert [line.split(": ")[0:2] for line in found] == [
        [f"{path}:1", "modle"],
        [f"{path}:2", "seed"],
        [f"{path}:4", "optimizer.lr"],
        [f"{path}:6", "algorithms.selective_backprop.keep"],
        [f"{path}:6", "algorithms.selective_backprop.scale_factor"],
        [f"{path}:8", "scaling.num_workers"],
    ]
