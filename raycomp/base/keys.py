"""Names shared across processes and packages: metric keys, arm variants, trial statuses, file and tag names.

A worker writes these and the driver, tracking and the report read them back, so each is defined
here once and imported everywhere else (never retyped as a literal).
"""

from __future__ import annotations

# -- metrics a trial reports (Ray's per-evaluation report, MLflow, results.json) --
WALL = "time/train_wall_s"  # training wall time since FIT_START, carried across resumes
CPU = "time/train_cpu_s"  # this process's CPU seconds in training
STEPS = "time/train_steps_s"  # the training steps' own wall time (steady-state estimate, see launch/step_clock.py)
STEPS_CPU = "time/train_steps_cpu_s"  # this process's CPU seconds in those steps: the cross-check
TRAIN_LOSS = "train/loss"
FINISHED = "finished"  # True on the trial's last report: it trained to max_duration
STEP = "step"
EPOCH = "epoch"
MLFLOW_RUN_ID = "mlflow_run_id"  # with each report of a tracked trial: the driver finds its run without a search
RESUMED_FROM_STEP = "resumed_from_step"  # with each report of an attempt that began from a checkpoint
MACHINE = "machine"  # where the times were measured
HOST_LOAD = "host/load_1m"  # the host's 1-minute load average when the result was sent
TRACES = "traces"  # the Engine's trace rows, on every report (the final one is what the report shows)
VARIANT = "variant"  # the arm's variant, on every report of a sweep's trial
TRACKING_FAILURES = "tracking/failures"
TRACKING_SECONDS = "time/tracking_s"  # rank 0's time in MLflow calls and buffering
EVAL_LABEL = "eval"  # the recipe's evaluator: eval/loss, eval/accuracy, eval/<each name under eval.metrics>
LOSS, ACCURACY = "loss", "accuracy"  # what every evaluator computes, as <label>/loss and <label>/accuracy
DEFAULT_METRIC, DEFAULT_MODE = f"{EVAL_LABEL}/{ACCURACY}", "max"
# The judging keys' defaults, for a sweep, a find and the verdicts alike (config/judging.py declares the keys):
DEFAULT_TOLERANCE = 0.005  # equal accuracy within half a point, in the metric's units
DEFAULT_CONFIDENCE = 0.95  # of the verdicts' intervals, over all looks when sequential
DEFAULT_EQUIVALENCE = 0.05  # speed-ups within ±5 % are no practical difference

# -- arms of a sweep: the baseline, its shorter-budget runs (its frontier), an A/A twin, the method --
BASELINE, FRONTIER, CONTROL, METHOD = "baseline", "frontier", "control", "method"
VARIANTS = (BASELINE, FRONTIER, CONTROL, METHOD)

# -- a trial's final status, as the results table shows it --
TERMINATED = "TERMINATED"  # trained to the end
STOPPED = "STOPPED"  # stopped early by the scheduler (ASHA)
INTERRUPTED = "INTERRUPTED"  # left unfinished by Ctrl-C: --resume continues it
ERROR = "ERROR"

# -- files --
CHECKPOINT_FILE = "checkpoint.pt"
RESULTS_JSON, RESULTS_CSV = "results.json", "results.csv"
REPORT_HTML = "report.html"

# -- MLflow tags --
PARENT_TAG = "mlflow.parentRunId"
EXPERIMENT_KIND_TAG = "mlflow.experimentKind"  # MLflow's kind of experiment; raycomp's are model training:
TRAINING_EXPERIMENT_KIND = "custom_model_development"  # (what MLflow's UI writes for "Machine learning")
NOTE_TAG = "mlflow.note.content"  # an experiment's or run's description (markdown) in MLflow's UI
# An experiment tag + a key holds a saved view of its runs page (MLflow's Share: the page opens it by the key):
SHARED_VIEW_TAG_PREFIX = "mlflow.sharedViewState."  # raycomp keys each top-level run's view by its run id
TRIAL_TAG = "raycomp.trial_id"
RUN_KEY_TAG = "raycomp.run_key"  # kind:storage_path/name, how a resumed sweep or run finds its run again
KIND_TAG = "raycomp.kind"  # one of the kinds below
SWEEP_KIND, TRIAL_KIND, TRAIN_KIND, FIND_KIND = "sweep", "trial", "train", "find"
FIND_STAGE_TAG = "raycomp.find.stage"  # on a find's trial runs: screen, tune, compose or confirm
VARIANT_TAG = "raycomp.variant"
CONFIG_ID_TAG = "raycomp.config_id"  # a trial's configuration, repeat and budget: pairs trials again from MLflow
# what a sweep's configuration runs, as the CLI shows it: "method-2: selective_backprop(start=0.121, keep=0.362)"
CONFIGURATION_TAG = "raycomp.configuration"
REPEAT_TAG = "raycomp.repeat"
BUDGET_TAG = "raycomp.budget"
LATEST_TAG = "raycomp.loop.checkpoint.latest"  # artifact path of the newest checkpoint
BEST_TAG = "raycomp.loop.checkpoint.best"  # and of the best by the sweep's metric, whose value is in
BEST_VALUE_TAG = "raycomp.loop.checkpoint.best_value"
# The same three as runs logged before the folder move (06f7262) wrote them: read, never written, so
# `runs:/<id>` still finds those runs' checkpoints (tracking/artifacts.py `checkpoint_tag`)
TAGS_BEFORE_FOLDER_MOVE = {
    LATEST_TAG: "raycomp.checkpoint.latest",
    BEST_TAG: "raycomp.checkpoint.best",
    BEST_VALUE_TAG: "raycomp.checkpoint.best_value",
}
RESUMED_FROM_TAG = "raycomp.resumed_from"
ALGORITHMS_TAG = "raycomp.algorithms"  # the algorithms a run trained with, comma-separated ("none")
RETRAINED_FROM_TAG = "raycomp.retrained_from_step"  # a run trained steps it had logged already (a resume)
EXPERIMENT_FILE_TAG = "raycomp.experiment_file"  # the YAML a sweep or run was started from
# A sweep's verdicts: on the parent run, the control's verdict, the noise floor and the best configuration;
# on each trial's run, its configuration's verdict and speed-up with its interval (raycomp.speedup, ...).
CONTROL_VERDICT_TAG = "raycomp.control_verdict"
NOISE_FLOOR_TAG = "raycomp.noise_floor"
BEST_CONFIG_TAG = "raycomp.best_config"
VERDICT_TAG = "raycomp.verdict"  # "failed" (a state, not a verdict) when the configuration's trials failed
ERROR_TAG = "raycomp.error"  # a failed trial's error: its type and first line
SPEEDUP_TAG_PREFIX = "raycomp."  # + speedup, speedup_ci_low, speedup_ci_high
LR_METRIC = "trainer/lr"
