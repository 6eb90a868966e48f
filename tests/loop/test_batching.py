import torch

from raycomp.loop.batching import num_samples, num_tokens, split_microbatches, to_device


def test_to_device_keeps_the_batch_shape():
    batch = ({"x": torch.ones(2, 3)}, [torch.zeros(2)], "label")
    moved = to_device(batch, torch.device("cpu"))
    assert type(moved) is tuple and type(moved[1]) is list and moved[2] == "label"
    assert torch.equal(moved[0]["x"], batch[0]["x"])


def test_samples_and_tokens():
    images = (torch.randn(4, 3, 8, 8), torch.zeros(4, dtype=torch.long))
    assert (num_samples(images), num_tokens(images)) == (4, 0)
    tokens = {"input_ids": torch.zeros(4, 7, dtype=torch.long), "labels": torch.zeros(4, 7, dtype=torch.long)}
    assert (num_samples(tokens), num_tokens(tokens)) == (4, 28)


def test_split_microbatches_along_the_first_dimension():
    inputs, targets = torch.arange(10).view(5, 2), torch.arange(5)
    parts = split_microbatches((inputs, targets), 2)
    assert [tuple(p[0].shape) for p in parts] == [(3, 2), (2, 2)] and all(type(p) is tuple for p in parts)
    assert torch.equal(torch.cat([p[1] for p in parts]), targets)
    [whole] = split_microbatches((inputs, targets), 1)
    assert whole[0] is inputs
    dict_parts = split_microbatches({"x": inputs, "y": targets}, 5)
    assert len(dict_parts) == 5 and dict_parts[4]["y"].tolist() == [4]
    assert len(split_microbatches(torch.arange(2), 4)) == 2  # fewer parts than asked for a small batch
