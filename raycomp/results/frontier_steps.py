"""Whether a sweep's frontier trained the budgets it names: the check that comes before any verdict priced on it.

Every speed-up is read against the baseline's accuracy-against-time curve at its budgets (0.5, 1.5, ... of
``max_duration``; 1.0 is the baseline itself). An arm that trains another number of steps than its budget says
moves that curve's points, and every verdict priced on the curve with them: in issue 55 a data module batching by 32
trained fewer steps at budget 1.5 than the baseline at 1.0, and a method barely faster than the baseline was
reported several times faster. Each trial's steps are its last report's (``summary.curve``); at every seed they
must grow with the budget, or nothing is judged against the frontier.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from raycomp.base import keys
from raycomp.results.summary import TrialSummary


def trained_steps(trial: TrialSummary) -> int | None:
    """The steps a trial trained: the step of its last report with the metric (None when it has none)."""
    steps = [step for step, _, _ in trial.curve if step is not None]
    return int(max(steps)) if steps else None


def frontier_out_of_order(trials: Sequence[TrialSummary]) -> str | None:
    """None when, at every seed, the finished baseline (budget 1.0) and frontier trials trained more steps the
    larger their budget; else why nothing can be judged against the frontier, with each such seed's budgets and
    the steps they trained. Trials that did not finish are left out: they are never judged."""
    by_seed: dict[int, dict[float, int]] = {}
    for trial in trials:
        budget = 1.0 if trial.variant == keys.BASELINE else trial.budget if trial.variant == keys.FRONTIER else None
        steps = trained_steps(trial)
        if budget is not None and steps is not None and trial.status == keys.TERMINATED:
            by_seed.setdefault(trial.repeat or 0, {})[budget] = steps
    wrong = []
    for seed, steps_at in sorted(by_seed.items()):
        budgets = sorted(steps_at)
        if any(steps_at[larger] <= steps_at[smaller] for smaller, larger in itertools.pairwise(budgets)):
            shown = ", ".join(f"{b:g}{' (baseline)' if b == 1 else ''}: {steps_at[b]}" for b in budgets)
            wrong.append(f"at seed {seed}: {shown}")
    if not wrong:
        return None
    return (
        "the frontier's arms did not train more steps the larger their budget, so nothing was judged against it "
        f"(steps trained by budget {'; '.join(wrong)}); a frontier arm trains its budget x the steps the baseline takes"
    )
