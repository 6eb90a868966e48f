"""``python -m raycomp.train EXPERIMENT.yaml``: one training run of an experiment on Ray Train.

With ``scaling.num_workers >= 1`` the run is a ``TorchTrainer`` (one raycomp Trainer per worker, DDP
across them); Ray stores its checkpoints under ``storage_path/name`` and running the same name again
resumes from the latest one. ``num_workers: 0`` trains in this process, with the same reports and
checkpoints kept under the same folder. A bad config exits with code 2 before anything starts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from raycomp.config import ConfigError, ExperimentConfig, load_experiment


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m raycomp.train", description=__doc__.splitlines()[0])
    parser.add_argument("experiment", help="experiment YAML (see experiments/)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a config key"
    )
    parser.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else a private local Ray)")
    return parser.parse_args(argv)


def load_or_exit(path: str, overrides: list[str]) -> ExperimentConfig:
    """The validated config, or the problems on stderr and exit code 2 (nothing started)."""
    try:
        return load_experiment(path, overrides)
    except ConfigError as error:
        print(f"error: invalid experiment {path}:", file=sys.stderr)
        for problem in error.problems:
            print(f"  {problem}", file=sys.stderr)
        raise SystemExit(2) from None


def run(config: ExperimentConfig, address: str | None = None) -> dict[str, Any]:
    """Trains ``config`` once; returns the last reported metrics."""
    storage = config.resolved_storage_path()
    if config.scaling.num_workers == 0:
        from raycomp.launch.reporting import FolderReporter
        from raycomp.launch.worker import run_experiment

        reporter = FolderReporter(Path(storage) / config.name, config.checkpoint.num_to_keep)
        load_path = reporter.latest_checkpoint()
        if load_path is not None:
            print(f"resuming from {load_path}", flush=True)
        run_experiment(config, reporter, load_path=load_path)
        return reporter.history[-1]

    from raycomp.launch.runner import init_ray, torch_trainer

    init_ray(address)
    result = torch_trainer(config, config.name, storage).fit()
    return dict(result.metrics or {})


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = load_or_exit(args.experiment, args.overrides)
    metrics = run(config, args.address)
    shown = {k: v for k, v in metrics.items() if isinstance(v, int | float | str) and not k.startswith("time/first")}
    print(json.dumps(shown, indent=2, sort_keys=True))
    print(f"checkpoints: {os.path.join(config.resolved_storage_path(), config.name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
