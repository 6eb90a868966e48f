"""MLflow search filters built from values raycomp does not control (names, paths, ids), quoted safely.

MLflow's filter grammar has no escape character: a string literal is quoted with ``'`` or ``"`` and may
not contain its own quote. A value with an apostrophe (``O'Neil/runs``) is therefore quoted with ``"``;
a value holding both quotes cannot be searched for and is refused with a clear error instead of
MLflow's "Invalid clause(s) in filter string".
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from raycomp.base.errors import ConfigError
from raycomp.base.keys import PARENT_TAG, TRIAL_TAG

SEARCH_PAGE = 1000  # runs one search request returns (MLflow's server allows up to 50,000)


def quoted(value: str) -> str:
    """``value`` as an MLflow filter string literal."""
    if "'" not in value:
        return f"'{value}'"
    if '"' not in value:
        return f'"{value}"'
    raise ConfigError(f"{value}: MLflow cannot search for a value holding both ' and \" (rename the path or name)")


def tag_filter(tags: Mapping[str, str]) -> str:
    """Runs whose tags equal all of ``tags``: ``tags.`k` = 'v' and ...``."""
    return " and ".join(f"tags.`{key}` = {quoted(str(value))}" for key, value in tags.items())


def all_runs(
    client: Any, experiment_ids: Sequence[str], query: str, order_by: list[str] | None = None
) -> Iterator[Any]:
    """Every run ``query`` finds, a page of ``SEARCH_PAGE`` at a time: ``max_results`` alone stops at its number,
    and one large page holds all of a sweep's runs in memory at once. Pages are offsets: a caller that changes
    which runs match (ends RUNNING ones) collects them all first."""
    token = None
    while True:
        page = client.search_runs(
            list(experiment_ids), query, max_results=SEARCH_PAGE, order_by=order_by, page_token=token
        )
        yield from page
        token = page.token
        if not token:
            return


def running_children(client: Any, experiment_id: str, parent_run_id: str) -> list[tuple[str, str | None]]:
    """The parent's child runs still RUNNING, as (run id, trial id), every page read before the caller ends any."""
    query = f"{tag_filter({PARENT_TAG: parent_run_id})} and attributes.status = 'RUNNING'"
    return [(run.info.run_id, run.data.tags.get(TRIAL_TAG)) for run in all_runs(client, [experiment_id], query)]
