"""The find as a command, below every entry point: ``python -m raycomp.find`` and ``raycomp.api.find``, as
``launch/sweep/command.py`` is the sweep's.

``find_problems`` turns an experiment into the race's plan (or what keeps it from being searched);
``run_find_command`` holds the run folder, opens the find's MLflow run, races the candidates on Ray
(``driver.run_find``), prints and writes the answer and the report, and returns the exit code. The command line
only parses its arguments and maps errors to exit codes; the Python API lets the errors rise.
"""

from __future__ import annotations

from raycomp.base.errors import EXIT_INTERRUPTED, EXIT_USAGE
from raycomp.config import ExperimentConfig
from raycomp.config.messages import Problem
from raycomp.find.candidates import METHODS, find_candidates, find_plan
from raycomp.find.plan import FindPlan
from raycomp.launch.sweep.command import RUN_FILE_ERRORS, SweepOptions, guarded_command, unreadable_run_files
from raycomp.preflight.experiment import WorkloadFacts


def find_problems(
    config: ExperimentConfig, facts: WorkloadFacts
) -> tuple[FindPlan | None, dict[str, str], list[Problem]]:
    """The race's plan (the methods that can run on this model, with why the others were left out), or the
    problems that keep the experiment from being searched; on the workload the check built (``facts``)."""
    problems: list[Problem] = []
    if config.find is None:
        problems.append(((), "has no find section: add one (find: {methods: auto}, docs/find.md)"))
    if config.sweep is not None:
        problems.append((("sweep",), "a find runs its own rounds of trials: remove the sweep section"))
    if problems:
        return None, {}, problems
    candidates, left_out, problems = find_candidates(config, facts.workload)
    return (None if problems else find_plan(config, candidates)), left_out, problems


def find_duration_warnings(config: ExperimentConfig, plan: FindPlan) -> list[str]:
    """The time arguments that reach the end of the run: the experiment's algorithms' (every arm runs them) and each
    setting a candidate trains (``find.methods``' arguments; ``auto`` gives fractions of the run, which never do)."""
    from raycomp.config.run_length import duration_warnings, long_arguments

    found, named = duration_warnings(config), (config.find.chosen_methods() if config.find else None) or {}
    for candidate in plan.candidates:
        where, given = (*METHODS, candidate.name), named.get(candidate.name, {})
        for setting in candidate.settings:
            found += long_arguments(config, where, candidate.name, {**given, **dict(setting)})
    return list(dict.fromkeys(found))


def run_find_command(config: ExperimentConfig, options: SweepOptions, plan: FindPlan, left_out: dict[str, str]) -> int:
    """The find, holding its run folder (one process, one training config: the experiment without its find
    section, so a new budget does not refuse a resume); interrupted, it prints how to resume it. The options are
    a sweep command's (``raycomp.launch.sweep.command``), in the words of the caller."""
    claim, words = config.model_copy(update={"find": None}), options.remedies.for_a_find()
    return guarded_command(claim, lambda: _find(config, options, plan, left_out), options, words)


def _find(config: ExperimentConfig, options: SweepOptions, plan: FindPlan, left_out: dict[str, str]) -> int:
    from raycomp.launch.cluster import init_ray
    from raycomp.launch.find.driver import run_find
    from raycomp.preflight.probe import model_label
    from raycomp.tracking.find_runs import find_run

    names = ", ".join(candidate.name for candidate in plan.candidates) or "none"
    print(f"find: {len(plan.candidates)} candidate methods on {model_label(config)}: {names}", flush=True)
    for candidate in plan.candidates:
        if candidate.changed:
            print(f"find: {candidate.name} {candidate.changed}", flush=True)
    if plan.proxy is not None:
        print(f"find: {cost_line(config, plan)}", flush=True)
    for warning in find_duration_warnings(config, plan):
        print(f"warning: {warning}", flush=True)
    if options.resume:  # a --resume it must refuse is refused before its MLflow run is reopened (and marked FAILED)
        from raycomp.launch.find.driver import check_resumable

        check_resumable(config, plan)
    with find_run(config, options.experiment, resume=options.resume) as run:
        parent = run.ref if run else None
        if parent is not None:  # followed while it runs: the trials grouped by stage and recipe
            from raycomp.tracking.experiment_page import how_to_open

            print("\n".join(how_to_open(parent, *_objective(config))), flush=True)
        init_ray(options.address, dashboard=config.scaling.num_workers > 0)
        try:
            outcome = run_find(config, plan, parent, resume=options.resume)
        except RUN_FILE_ERRORS as error:  # a round's Tune files, cut short or not written: a full disk
            raise unreadable_run_files(config, error, options) from error
        if outcome.interrupted:
            print("find interrupted: the round in flight is saved")
            print(options.resume_hint())
            if run is not None:
                run.status = "KILLED"
            return EXIT_INTERRUPTED
        from raycomp.launch.find.finish import report_answer, report_at_find_end

        report_answer(config, outcome, parent, left_out)
        report_at_find_end(config.layout.local_dir, parent)  # the page: each candidate's path, the Pareto front
    return EXIT_USAGE if outcome.answer.out_of_reach else 0  # the user chooses a tolerance, then --resume


def cost_line(config: ExperimentConfig, plan: FindPlan) -> str:
    """What the race trains at most, in trial-epochs (or trial-batches), on the proxy and at full length, against
    racing every stage at full length: said before it starts (``FindPlan.most_runs``)."""
    import dataclasses

    duration = config.max_duration
    unit = {"ep": "epochs", "ba": "batches"}.get(duration.unit.value, duration.unit.value)
    runs, full = plan.most_runs(), dataclasses.replace(plan, proxy=None).most_runs()
    parts = []
    for part, amount in runs.items():
        on_proxy = plan.on_proxy(part if part != "references" else "screen")
        where = f" on the proxy ({full[part] * duration.value:,.0f} at full length)" if on_proxy else " at full length"
        parts.append(f"{part} {amount * duration.value:,.0f}{where}")
    total, all_full = sum(runs.values()) * duration.value, sum(full.values()) * duration.value
    return (
        f"at most {total:,.0f} trial-{unit} with the proxy ({plan.proxy.words if plan.proxy else ''}): "
        f"{'; '.join(parts)}; every stage at full length: {all_full:,.0f}"
    )


def _objective(config: ExperimentConfig) -> tuple[str, str]:
    assert config.find is not None
    return config.find.metric, config.find.mode
