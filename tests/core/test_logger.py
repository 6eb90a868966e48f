"""The Logger (raycomp.core.logger): numbers for its destinations, or tensors for those that read them later."""

import torch

from raycomp.core import Logger


class Kept:
    def __init__(self, reads_tensors_later: bool = False) -> None:
        self.reads_tensors_later = reads_tensors_later
        self.seen: list[dict] = []

    def log_metrics(self, metrics, step) -> None:
        self.seen.append(dict(metrics))


def test_a_tensor_metric_is_a_number_for_a_destination_that_takes_numbers_and_stays_a_tensor_for_one_that_reads_later():
    numbers, later = Kept(), Kept(reads_tensors_later=True)
    loss = torch.tensor(0.5)
    vector = torch.tensor([1.0, 2.0])  # not one number: passed on as it is, as before tensors were read here
    Logger([numbers, later]).log_metrics({"train/loss": loss, "trainer/lr": 0.1, "vector": vector}, 3)
    assert numbers.seen[0]["train/loss"] == 0.5 and type(numbers.seen[0]["train/loss"]) is float
    assert numbers.seen[0]["trainer/lr"] == 0.1 and numbers.seen[0]["vector"] is vector
    assert later.seen[0]["train/loss"] is loss
