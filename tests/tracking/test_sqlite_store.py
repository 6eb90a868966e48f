"""A new SQLite store is a copy of an empty one in raycomp's cache, once one was built: the same schema as a store
MLflow migrates, a Default experiment as a new build gives it, and a broken copy built again instead."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from mlflow import MlflowClient

from raycomp.tracking.sqlite_store import build_sqlite_store


def schema(database: Path) -> tuple[dict, list]:
    """The store's tables, each with its columns, indexes and foreign keys, and MLflow's migration head. Not the
    tables' SQL text: two builds by MLflow's migrations differ in it (the order of a table's constraints and of its
    indexes' creation) with the same schema."""
    with contextlib.closing(sqlite3.connect(database)) as store:
        shape = {}
        for (table,) in store.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            columns = sorted(row[1:] for row in store.execute(f"PRAGMA table_info('{table}')"))
            indexes = sorted(
                (name, unique, tuple(column for *_, column in store.execute(f"PRAGMA index_info('{name}')")))
                for _, name, unique, *_ in store.execute(f"PRAGMA index_list('{table}')").fetchall()
            )
            keys = sorted(row[2:] for row in store.execute(f"PRAGMA foreign_key_list('{table}')"))
            shape[table] = (columns, indexes, keys)
        return shape, store.execute("SELECT version_num FROM alembic_version").fetchall()


def test_a_second_store_is_a_copy_with_the_schema_migrations_give_and_a_broken_copy_is_built_again(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("RAYCOMP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    build_sqlite_store(tmp_path / "first.db")  # migrated by MLflow, and kept as the template
    (template,) = (tmp_path / "cache" / "mlflow").glob("empty-store-*.db")
    build_sqlite_store(tmp_path / "second.db")
    assert schema(tmp_path / "second.db") == schema(tmp_path / "first.db")
    client = MlflowClient(f"sqlite:///{tmp_path / 'second.db'}")
    assert [e.name for e in client.search_experiments()] == ["Default"]
    assert client.get_experiment("0").artifact_location == str(tmp_path / "mlruns" / "0")  # as a new build sets it
    run = client.create_run(client.create_experiment("works")).info.run_id
    client.log_metric(run, "x", 1.0)
    assert client.get_metric_history(run, "x")[0].value == 1.0
    assert not [path for path in tmp_path.iterdir() if path.name.endswith(".building")]

    template.write_bytes(b"not a store")  # a cache damaged by hand or by a full disk
    build_sqlite_store(tmp_path / "third.db")
    assert schema(tmp_path / "third.db") == schema(tmp_path / "first.db")
    assert schema(template) == schema(tmp_path / "first.db")  # kept again, whole
