"""One line per configuration of a finished sweep, and its noise floor measured four ways (docs/benchmarks.md).

    python bench/sweep_outcome.py /tmp/sb-run1/runs/sb/results.json

The noise floor is the coefficient of variation of the baseline's times over its seeds: from the training
steps' own time (what verdicts compare), the whole-trial wall time, the process's CPU time in training and
in the steps. Reads ``results.json`` only: no Ray, no MLflow.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path


def cv(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.stdev(present) / statistics.fmean(present) if len(present) > 1 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    document = json.loads(parser.parse_args().results.read_text())
    baseline = [t for t in document["trials"] if t["variant"] == "baseline" and t["status"] == "TERMINATED"]
    floors = {key: cv([t.get(key) for t in baseline]) for key in ("steps_s", "wall_s", "cpu_s", "steps_cpu_s")}
    print("noise floor (CV of the baseline's times): " + ", ".join(f"{k} {v:.1%}" for k, v in floors.items() if v))
    print(f"trials: {len(document['trials'])}; control: {document['control']}")
    counts: Counter[str] = Counter()
    for row in document["configs"]:
        if row["verdict"] is None:
            continue
        if row["variant"] == "method":
            counts[row["verdict"]] += 1
        interval = f"{row['speedup']:.2f}x [{row['speedup_ci_low']:.2f}, {row['speedup_ci_high']:.2f}]"
        delta = f"{row['accuracy_delta']:+.4f}"
        print(
            f"  {row['config_id']:9} n={len(row['seeds'])} {interval:24} Δacc {delta}  {row['verdict']}"
            f"{' (' + row['note'] + ')' if row['note'] else ''}; {row.get('stopped') or ''}"
        )
    print("methods: " + ", ".join(f"{n} {name}" for name, n in counts.items()))


if __name__ == "__main__":
    main()
