"""SelectiveBackprop's draw without host synchronisation (issue 58): the same draws as ``torch.multinomial``, and a
selection that traces to one graph (scoring forward, ranks, draw, gather) with nothing in it that waits for the
device. Whether a GPU waits is checked on a GPU (tests/loop/test_trainer_gpu.py)."""

import pytest
import torch
from helpers import tiny_model

from raycomp.algorithms.loss_selection import sample_by_loss_rank, select_unchecked


def multinomial_draw(losses: torch.Tensor, num_keep: int, keep: float) -> torch.Tensor:
    """The draw as it was written before issue 58, with ``torch.multinomial``."""
    n = losses.shape[0]
    weights = ((torch.arange(n, dtype=torch.float32) + 0.5) / n) ** (1 / keep - 1)
    return losses.argsort()[torch.multinomial(weights, num_keep, replacement=False)].sort().values


@pytest.mark.parametrize("num_samples", [1, 2, 7, 16, 128, 500])
@pytest.mark.parametrize("keep", [0.01, 0.1, 0.5, 0.9, 1.0])
def test_the_draw_is_multinomials_from_the_same_generator(num_samples, keep):
    num_keep = max(1, int(keep * num_samples))
    for seed in range(10):
        losses = torch.randn(num_samples, generator=torch.Generator().manual_seed(seed))
        torch.manual_seed(seed)
        drawn = sample_by_loss_rank(losses, num_keep, keep)
        torch.manual_seed(seed)
        assert torch.equal(drawn, multinomial_draw(losses, num_keep, keep)), (seed, drawn)
        assert drawn.shape == (num_keep,) and len(set(drawn.tolist())) == num_keep


def test_the_selection_traces_to_one_graph_with_the_draw_and_the_gather_inside():
    model = tiny_model()
    graphs = []

    def record(graph: torch.fx.GraphModule, example_inputs: list) -> torch.fx.GraphModule:
        graphs.append(graph)
        return graph

    def selection(input: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        loss = model.loss
        return select_unchecked(
            input, target, lambda x: model((x, target)), lambda o, t, reduction: loss(o, (None, t), reduction), 0.5, 0.5
        )

    torch._dynamo.reset()
    compiled = torch.compile(selection, backend=record, fullgraph=True, dynamic=False)  # fullgraph: a break fails
    input, target = torch.randn(16, 3, 8, 8), torch.randint(0, 4, (16,))
    kept_input, kept_target = compiled(input, target)
    assert kept_input.shape == (8, 3, 8, 8) and kept_target.shape == (8,)
    assert len(graphs) == 1
    targets = {str(node.target) for node in graphs[0].graph.nodes if node.op in ("call_function", "call_method")}
    assert {"topk", "argsort", "exponential_"} <= {name.rsplit(".", 1)[-1] for name in targets}, targets
