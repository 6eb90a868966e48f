"""``BatchedClient``: one run's writes, metrics buffered in memory and sent with ``log_batch``.

Per-call logging costs about a hundred times what ``log_batch`` costs a point (docs/tracking.md has the
figures), so nothing is sent per step. A send that fails (the server went
away) never raises into training: its points stay buffered and go with the next flush, and the
failure is printed once on stderr and counted in ``failures``, which reaches Ray's reports.

After a failure the client sends nothing more until a server answers a quick ``/health`` probe (a
circuit breaker): a server that hangs rather than refuses would otherwise hold every send for its
full timeout and retries, about 100 s a report (reliability notes, M5), instead of a second or two.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from mlflow.entities import Metric, Param, RunTag
from mlflow.utils.validation import MAX_METRICS_PER_BATCH

from raycomp.base.atomic_files import atomic_write_text
from raycomp.base.errors import one_line
from raycomp.base.scratch import scratch_folder
from raycomp.tracking.ref import RunRef, redacted_uri
from raycomp.tracking.store import client_uri, make_client, server_answers

MAX_BUFFERED = 1_000_000  # points kept for a server that is down; the oldest beyond this are dropped
PROBE_TIMEOUT_S = 2.0  # how long a health probe of a server that failed a send may take
PROBE_INTERVAL_S = 10.0  # a failed probe is trusted this long: the sends of one report cost one probe at most


class BatchedClient:
    """Writes to the run ``ref`` through an explicit client and run id (never the active run).

    Every write returns False instead of raising when the store refuses it (said once per kind).
    """

    def __init__(self, ref: RunRef):
        self.ref = ref
        self.client = make_client(ref.tracking_uri)
        self._points: list[Metric] = []
        self._unread = False  # some points still hold a tensor (``log_metrics``)
        self.failures = 0  # sends that failed (each is retried with the next flush)
        self._failing: set[str] = set()
        self._down = False  # a send failed and none has succeeded since
        self._probe_failed_at: float | None = None
        self.seconds = 0.0  # time this process spent tracking: buffering and every send

    def log_metrics(self, metrics: Mapping[str, Any], step: int) -> None:
        """Buffers the finite numbers among ``metrics`` (booleans as 0/1) and its one-element tensors, which are read
        at the next ``flush`` (on a GPU, one wait there instead of one per step); nothing is sent before it."""
        began = time.perf_counter()
        now = int(time.time() * 1000)
        for key, value in metrics.items():
            if isinstance(value, bool):
                value = float(value)
            if isinstance(value, int | float) and math.isfinite(value):
                self._points.append(Metric(key, float(value), now, int(step)))
            elif _is_tensor(value):
                self._points.append(Metric(key, value.detach(), now, int(step)))
                self._unread = True
        self.seconds += time.perf_counter() - began

    def _read_tensors(self) -> None:
        """The buffered tensors as numbers, the non-finite ones dropped (as ``log_metrics`` drops such numbers)."""
        if not self._unread:
            return
        read = []
        for point in self._points:
            if _is_tensor(point.value):
                value = float(point.value)
                if not math.isfinite(value):
                    continue
                point = Metric(point.key, value, point.timestamp, point.step)
            read.append(point)
        self._points, self._unread = read, False

    def flush(self) -> bool:
        """Sends every buffered point; False if the store did not take them (they stay buffered)."""
        self._read_tensors()
        while self._points:
            chunk = self._points[:MAX_METRICS_PER_BATCH]
            if not self._guard("metrics", lambda chunk=chunk: self.client.log_batch(self.ref.run_id, metrics=chunk)):
                if len(self._points) > MAX_BUFFERED:
                    del self._points[: len(self._points) - MAX_BUFFERED]
                return False
            del self._points[: len(chunk)]
        return True

    @property
    def unsent(self) -> int:
        """Metric points buffered and not yet taken by the store."""
        self._read_tensors()
        return len(self._points)

    def spill(self, path: Path) -> None:
        """Writes the unsent points to ``path`` (JSON lines, replaced atomically), or removes it when none are
        left: what an outage kept from the store survives the process, for ``load_spilled`` to send later."""
        self._read_tensors()
        if not self._points:
            path.unlink(missing_ok=True)
            return
        lines = (json.dumps([m.key, m.value, m.timestamp, m.step]) for m in self._points)
        atomic_write_text(path, "\n".join(lines) + "\n")

    def load_spilled(self, path: Path) -> int:
        """Buffers the points an earlier process spilled to ``path`` (sent with the next flush); their count."""
        try:
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        except (OSError, ValueError):
            return 0
        self._points[:0] = [
            Metric(key, float(value), int(timestamp), int(step)) for key, value, timestamp, step in rows
        ]
        return len(rows)

    def log_params(self, params: Mapping[str, Any]) -> bool:
        """Logs ``params`` now (MLflow keeps a param's first value: log each once)."""
        batch = [Param(key, str(value)) for key, value in params.items()]
        return self._guard("params", lambda: self.client.log_batch(self.ref.run_id, params=batch))

    def set_tags(self, tags: Mapping[str, str]) -> bool:
        batch = [RunTag(key, str(value)) for key, value in tags.items()]
        return self._guard("tags", lambda: self.client.log_batch(self.ref.run_id, tags=batch))

    def log_artifact(self, path: str | Path, folder: str | None = None) -> bool:
        """Uploads the file ``path`` into the run's artifact ``folder`` (its root if None)."""
        return self._guard("artifacts", lambda: self.client.log_artifact(self.ref.run_id, str(path), folder))

    def log_table(self, columns: list[str], rows: list[list[Any]], artifact_file: str) -> bool:
        """A table as MLflow writes one (pandas ``split`` JSON), replaced on each call, not appended to."""
        parent = str(Path(artifact_file).parent)
        with scratch_folder("raycomp-table-") as folder:
            path = folder / Path(artifact_file).name
            path.write_text(json.dumps({"columns": columns, "data": rows}))
            return self.log_artifact(path, None if parent == "." else parent)

    def delete_artifacts(self, artifact_path: str) -> bool:
        from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

        def delete() -> None:
            run = self.client.get_run(self.ref.run_id)
            repository = get_artifact_repository(run.info.artifact_uri, tracking_uri=client_uri(self.ref.tracking_uri))
            repository.delete_artifacts(artifact_path)

        return self._guard("artifact deletion", delete)

    def _guard(self, what: str, send: Callable[[], Any]) -> bool:
        began = time.perf_counter()
        try:
            if self._down and not self._answers():
                raise ConnectionError(f"no answer to a {PROBE_TIMEOUT_S:.0f} s health probe since a send failed")
            send()
        except Exception as error:  # the store's failure must not end the training
            self._down = True
            self.failures += 1
            if what not in self._failing:
                self._failing.add(what)
                print(
                    f"raycomp: MLflow {what} for run {self.ref.run_id} at {redacted_uri(self.ref.tracking_uri)} failed "
                    f"({one_line(error)}); training continues, retrying at the next report",
                    file=sys.stderr,
                    flush=True,
                )
            return False
        finally:
            self.seconds += time.perf_counter() - began
        self._down = False
        if what in self._failing:
            self._failing.discard(what)
            print(f"raycomp: MLflow {what} for run {self.ref.run_id} works again", file=sys.stderr, flush=True)
        return True

    def _answers(self) -> bool:
        """Whether the store answers now: an HTTP server's ``/health`` gives any HTTP reply within
        ``PROBE_TIMEOUT_S`` (a failed probe is trusted for ``PROBE_INTERVAL_S``); other stores are tried."""
        now = time.monotonic()
        if self._probe_failed_at is not None and now - self._probe_failed_at < PROBE_INTERVAL_S:
            return False
        if server_answers(self.ref.tracking_uri, PROBE_TIMEOUT_S) is False:  # refused, unreachable or hung
            self._probe_failed_at = now
            return False
        self._probe_failed_at = None
        return True


def _is_tensor(value: Any) -> bool:
    """A torch tensor of one element, told apart without importing torch here."""
    return type(value).__name__ == "Tensor" and hasattr(value, "detach") and value.numel() == 1
