"""Train the small CNN on the built-in synthetic data with SelectiveBackprop, in one process.

    python examples/train_sb.py [--epochs 10] [--save-folder runs/example]

The core alone, in one process; `python -m raycomp.tune experiments/sb.yaml` runs it on Ray.
"""

import argparse

from raycomp.config import ExperimentConfig
from raycomp.config.recipe import build_trainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--save-folder", default="runs/example")
    args = parser.parse_args()
    config = ExperimentConfig.from_dict(
        {"max_duration": f"{args.epochs}ep", "algorithms": {"selective_backprop": {}}}, source="examples/train_sb.py"
    )
    trainer = build_trainer(config, save_folder=args.save_folder, progress_bar=None)
    trainer.fit()
    print("eval:", {k: round(v, 4) for k, v in trainer.state.eval_metrics.items()})
    for row in trainer.engine.trace_summary.rows():
        print(f"trace: {row['algorithm']} at {row['event']}: {row['count']} runs, {row['total_s']:.2f} s in total")
    print(f"checkpoints in {args.save_folder}/ (latest.pt points at the newest)")


if __name__ == "__main__":
    main()
