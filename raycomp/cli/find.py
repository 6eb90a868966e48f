"""``python -m raycomp.find EXPERIMENT.yaml``: which speed-up recipe should I use on my model? (docs/find.md)
The command itself is ``raycomp.launch.find.command``; here its arguments are parsed and its errors are exit codes.

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

from raycomp.base.errors import EXIT_USAGE
from raycomp.base.redaction import redacted
from raycomp.cli.common import add_experiment_arguments, exit_code_of, load_experiment_or_exit
from raycomp.config import ExperimentConfig
from raycomp.config.messages import format_problems
from raycomp.config.yaml_text import parse_yaml, read_text
from raycomp.find.plan import FindPlan
from raycomp.launch.find.command import find_problems, run_find_command
from raycomp.launch.run_folder import nothing_to_resume
from raycomp.launch.sweep.command import SweepOptions
from raycomp.preflight.experiment import WorkloadFacts


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m raycomp.find", description=__doc__.splitlines()[0])
    add_experiment_arguments(parser)
    parser.add_argument("--resume", action="store_true", help="continue the find stored at storage_path/name")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config, facts = load_experiment_or_exit(args.experiment, args.overrides)
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # Tune's classic table, as raycomp.tune shows it
    plan, left_out = plan_or_exit(config, args.experiment, facts)
    resume = args.resume and not nothing_to_resume(config.layout)  # its driver killed before it recorded anything
    options = SweepOptions(
        args.experiment, tuple(args.overrides), resume=resume, address=args.address, program="python -m raycomp.find"
    )
    return exit_code_of(lambda: run_find_command(config, options, plan, left_out))


def plan_or_exit(config: ExperimentConfig, source: str, facts: WorkloadFacts) -> tuple[FindPlan, dict[str, str]]:
    """The race's plan, on the workload the check built; each problem at its file:line:key, and exit code 2."""
    plan, left_out, problems = find_problems(config, facts)
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


if __name__ == "__main__":
    sys.exit(main())
