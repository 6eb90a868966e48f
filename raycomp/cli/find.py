"""``python -m raycomp.find EXPERIMENT.yaml``: which speed-up recipe should I use on my model? (docs/find.md)

The experiment is the baseline; its ``find`` section names the candidate methods (``auto``: every registered
method that applies to this model and data), the budget and how to judge. The search races the candidates on
paired seeds (Screen, Tune, Compose; each look a sweep round on Ray), then confirms the chosen recipe against
the baseline on fresh seeds. It ends with the recipe to paste and its confirmed speed-up, or with "none of the N
methods is faster at equal accuracy on this model" and the evidence, and writes ``find.json`` and
``recipe.yaml`` (``python -m raycomp.train`` trains it) to ``storage_path/name``. ``--resume`` continues a find
stopped any way. A bad file exits with code 2, an MLflow store that does not answer with 3, before Ray starts.
"""

from __future__ import annotations

import argparse
import os
import sys

from raycomp.base.errors import EXIT_INTERRUPTED, EXIT_USAGE
from raycomp.base.redaction import redacted
from raycomp.base.remedies import speaking
from raycomp.cli.common import add_experiment_arguments, exit_code_of, load_experiment_or_exit
from raycomp.config import ExperimentConfig
from raycomp.config.messages import Problem, format_problems
from raycomp.config.yaml_text import parse_yaml, read_text
from raycomp.find.candidates import METHODS, find_candidates, find_plan
from raycomp.find.plan import FindPlan
from raycomp.launch.run_folder import nothing_to_resume, run_guarded
from raycomp.launch.sweep.command import RUN_FILE_ERRORS, SweepOptions, unreadable_run_files


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m raycomp.find", description=__doc__.splitlines()[0])
    add_experiment_arguments(parser)
    parser.add_argument("--resume", action="store_true", help="continue the find stored at storage_path/name")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = load_experiment_or_exit(args.experiment, args.overrides)
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # Tune's classic table, as raycomp.tune shows it
    plan, left_out = plan_or_exit(config, args.experiment)
    resume = args.resume and not nothing_to_resume(config.layout)  # its driver killed before it recorded anything
    options = SweepOptions(
        args.experiment, tuple(args.overrides), resume=resume, address=args.address, program="python -m raycomp.find"
    )
    return exit_code_of(lambda: guarded_find(config, options, plan, left_out))


def find_problems(config: ExperimentConfig) -> tuple[FindPlan | None, dict[str, str], list[Problem]]:
    """The race's plan (the methods that can run on this model, with why the others were left out), or the
    problems that keep the experiment from being searched."""
    problems: list[Problem] = []
    if config.find is None:
        problems.append(((), "has no find section: add one (find: {methods: auto}, docs/find.md)"))
    if config.sweep is not None:
        problems.append((("sweep",), "a find runs its own rounds of trials: remove the sweep section"))
    if problems:
        return None, {}, problems
    candidates, left_out, problems = find_candidates(config)
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


def plan_or_exit(config: ExperimentConfig, source: str) -> tuple[FindPlan, dict[str, str]]:
    """The race's plan; each problem at its file:line:key, and exit code 2."""
    plan, left_out, problems = find_problems(config)
    if plan is None:
        try:
            _, lines = parse_yaml(read_text(source), source)
        except Exception:  # read once already: only the line numbers are missing then
            lines = {}
        print(redacted(f"error: invalid experiment {source}:"), file=sys.stderr)
        for line in format_problems(problems, source, {path: f"{source}:{line}" for path, line in lines.items()}):
            print(f"  {redacted(line)}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
    return plan, left_out


def guarded_find(config: ExperimentConfig, options: SweepOptions, plan: FindPlan, left_out: dict[str, str]) -> int:
    """The find, holding its run folder (one process, one training config: the experiment without its find
    section, so a new budget does not refuse a resume); interrupted, it prints how to resume it. The options are
    a sweep command's (``raycomp.launch.sweep.command``), in the words of the caller."""
    claim = config.model_copy(update={"find": None})
    with speaking(options.remedies.for_a_find()):
        try:
            return run_guarded(claim, lambda: _find(config, options, plan, left_out), resume=options.resume)
        except KeyboardInterrupt:
            print(options.resume_hint(), file=sys.stderr)
            raise


def _find(config: ExperimentConfig, options: SweepOptions, plan: FindPlan, left_out: dict[str, str]) -> int:
    from raycomp.config.probe import model_label
    from raycomp.launch.cluster import init_ray
    from raycomp.launch.find.driver import run_find
    from raycomp.tracking.find_runs import find_run

    names = ", ".join(candidate.name for candidate in plan.candidates) or "none"
    print(f"find: {len(plan.candidates)} candidate methods on {model_label(config)}: {names}", flush=True)
    for candidate in plan.candidates:
        if candidate.changed:
            print(f"find: {candidate.name} {candidate.changed}", flush=True)
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
        from raycomp.cli.find_answer import report_answer
        from raycomp.cli.report_find import report_at_find_end

        report_answer(config, outcome, parent, left_out)
        report_at_find_end(config.layout.local_dir, parent)  # the page: each candidate's path, the Pareto front
    return EXIT_USAGE if outcome.answer.out_of_reach else 0  # the user chooses a tolerance, then --resume


def _objective(config: ExperimentConfig) -> tuple[str, str]:
    assert config.find is not None
    return config.find.metric, config.find.mode


if __name__ == "__main__":
    sys.exit(main())
