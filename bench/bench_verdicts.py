"""The default sweep's verdicts on this machine, over several runs (results in docs/benchmarks.md).

Runs ``python -m raycomp.tune experiments/sb.yaml`` ``--runs`` times, one after another, each in a fresh
storage folder, and prints per run the control arm's verdict (an A/A check: the control is the baseline
again, so anything but "no evidence" is a false verdict), the noise floor (CV of the baseline's repeat
times), each SelectiveBackprop configuration's verdict with its speed-up interval, the sweep's wall
time, and the machine; then the A/A false-verdict rate over the runs.

    python bench/bench_verdicts.py --runs 3             # about 10 minutes a run on 2 cores
    python bench/bench_verdicts.py --runs 1 --set sweep.repeats=2   # a quicker look
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).parents[1]


def one_run(experiment: Path, overrides: list[str], folder: Path) -> dict:
    command = [sys.executable, "-m", "raycomp.tune", str(experiment), "--set", f"storage_path={folder / 'runs'}"]
    for item in overrides:
        command += ["--set", item]
    began = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder)
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"the sweep failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    name = next(
        line.split(":", 1)[1].strip() for line in experiment.read_text().splitlines() if line.startswith("name:")
    )
    document = json.loads((folder / "runs" / name / "results.json").read_text())
    (folder / "output.txt").write_text(done.stdout)
    machines = sorted({t["machine"] for t in document["trials"] if t.get("machine")})
    return {"seconds": round(seconds, 1), "document": document, "machines": machines}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--experiment", type=Path, default=ROOT / "experiments" / "sb.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--keep", type=Path, help="run the first sweep in this folder and keep it (report included)")
    args = parser.parse_args()
    runs = []
    for index in range(args.runs):
        if index == 0 and args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            run = one_run(args.experiment, args.overrides, args.keep)
        else:
            with tempfile.TemporaryDirectory(prefix="raycomp-bench-verdicts-") as folder:
                run = one_run(args.experiment, args.overrides, Path(folder))
        document = run["document"]
        methods = [c for c in document["configs"] if c["variant"] == "method"]
        row = {
            "run": index + 1,
            "sweep_s": run["seconds"],
            "control": document["control"],
            "noise_floor": document["noise_floor"],
            "methods": [
                {
                    "config_id": c["config_id"],
                    "arguments": c["arguments"],
                    "verdict": c["verdict"],
                    "speedup": c["speedup"],
                    "ci": [c["speedup_ci_low"], c["speedup_ci_high"]],
                    "accuracy_delta": c["accuracy_delta"],
                    "accuracy_delta_ci": [c["accuracy_delta_ci_low"], c["accuracy_delta_ci_high"]],
                }
                for c in methods
            ],
            "machines": run["machines"],
        }
        print(json.dumps(row, default=str), flush=True)
        runs.append(row)
    false = sum(1 for row in runs if row["control"] not in ("no evidence", None))
    print(json.dumps({"runs": len(runs), "control_false_verdicts": false, "rate": false / len(runs)}))


if __name__ == "__main__":
    main()
