"""Issue 14's bad inputs at the CLIs: one ``error:`` block, exit code 2 (130 for Ctrl-C), never a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import popen_ctrl_c_reaches

from raycomp.base.interrupts import is_raycomp_command
from raycomp.cli.report import main as report_main
from raycomp.cli.train import main as train_main
from raycomp.cli.tune import main as tune_main

TINY = "name: probe\nscaling: {num_workers: 0}\ntracking: {enabled: false}\n"
BAD_FILES = {  # each escaped load_experiment as a raw exception (a traceback, exit 1) or ran anyway
    "h3_billion_laughs": (b"a: &a [1,1,1]\nb: &b [*a,*a,*a]\nc: [*b,*b,*b]\n", ":2: YAML aliases (*a)"),
    "l1_latin1": (b"name: caf\xe9\n", ":1: not UTF-8 text (byte 0xe9 at column 10)"),
    "l2_deep": (b"x: " + b"[" * 5000 + b"]" * 5000 + b"\n", ":1: nested more than 50 levels deep"),
    "l5_name": (b"name: ../escaped\n", ":1: name: must be one folder name"),
    "l8_empty": (b"", ": the file is empty"),
    "l3_inf": (TINY.encode() + b"optimizer: {lr: .inf}\n", ":4: optimizer.lr: must be a finite number"),
    "compile_with_resizing": (  # issue 24: a compiled step would recompile at every new image size
        TINY.encode() + b"compile: reduce-overhead\nalgorithms: {progressive_resizing: {}}\n",
        ":4: compile: cannot be used with progressive_resizing, which changes the batch's shape",
    ),
}


def _expect_exit(main, argv: list[str], code: int) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == code


@pytest.mark.parametrize("case", list(BAD_FILES))
@pytest.mark.parametrize("main", [train_main, tune_main], ids=["train", "tune"])
def test_h3_l1_l2_l3_l5_l8_bad_files_exit_2_with_the_file_and_line(tmp_path, capsys, case, main):
    content, problem = BAD_FILES[case]
    path = tmp_path / f"{case}.yaml"
    path.write_bytes(content)
    _expect_exit(main, [str(path), "--set", f"storage_path={tmp_path / 'runs'}"], 2)
    err = capsys.readouterr().err
    assert err.startswith(f"error: invalid experiment {path}:\n  {path}{problem}"), err
    assert len(err.splitlines()) == 2 and not (tmp_path / "runs").exists()


def test_l10_report_on_a_damaged_results_json_is_one_line_and_exit_2(tmp_path, capsys):
    sweep = tmp_path / "probe"
    sweep.mkdir()
    for content, problem in ((b"", "the file is empty"), (b'{"metric": "eval/accuracy"', "Expecting")):
        (sweep / "results.json").write_bytes(content)
        assert report_main([str(sweep)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {sweep / 'results.json'}: cannot read it: {problem}"), err
        assert len(err.splitlines()) == 1


@pytest.mark.spawns
def test_l10_report_cli_on_an_empty_results_json_exits_2_without_a_traceback(tmp_path):
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "results.json").write_text("")
    done = subprocess.run(
        [sys.executable, "-m", "raycomp.report", str(tmp_path / "probe")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and len(done.stderr.splitlines()) == 1, done.stderr


def test_l13_only_raycomp_commands_get_the_quiet_interrupt():
    assert is_raycomp_command(["/usr/bin/python3", "-m", "raycomp.train", "x.yaml"])
    assert is_raycomp_command(["/usr/bin/python3", "-X", "importtime", "-m", "raycomp.tune", "x.yaml"])
    assert is_raycomp_command(["/venv/bin/python", "/venv/bin/raycomp", "train", "x.yaml"])
    assert not is_raycomp_command(["/usr/bin/python3", "-m", "pytest", "-m", "raycomp"])
    assert not is_raycomp_command(["/usr/bin/python3", "-c", "import raycomp"])
    assert not is_raycomp_command(["/usr/bin/python3", "train.py", "raycomp"])


@pytest.mark.spawns
def test_l13_ctrl_c_while_the_cli_reads_its_config_is_one_line_and_exit_130(tmp_path):
    """The experiment is a named pipe: the CLI has imported everything and waits inside load_experiment."""
    fifo = tmp_path / "experiment.yaml"
    os.mkfifo(fifo)
    child = popen_ctrl_c_reaches(
        [sys.executable, "-m", "raycomp.train", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        write_end = _open_when_read(fifo, child)
        child.send_signal(signal.SIGINT)  # the child is now blocked reading the pipe
        _, err = child.communicate(timeout=60)
        write_end.close()
    finally:
        if child.poll() is None:
            child.kill()
    assert (child.returncode, err) == (130, "interrupted\n"), err[-3000:]


def _open_when_read(fifo: Path, child: subprocess.Popen):
    """The pipe's write end: open() returns once the child opened it to read (after all its imports)."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(open(fifo, "w")), daemon=True)  # noqa: SIM115
    thread.start()
    thread.join(timeout=120)
    assert result, f"the CLI never opened its experiment file (exit {child.poll()})"
    return result[0]


def _loading_torch(pid: int) -> bool:
    try:
        return "libtorch" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


@pytest.mark.spawns
def test_l13_ctrl_c_while_the_cli_imports_torch_is_one_line(tmp_path):
    child = popen_ctrl_c_reaches(
        [sys.executable, "-m", "raycomp.train", str(tmp_path / "never-read.yaml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    # Ctrl-C once torch is loading (its library mapped): after the interpreter's own start-up, which on a
    # loaded machine can outlast any fixed delay, and seconds before the import ends.
    deadline = time.monotonic() + 60
    while child.poll() is None and time.monotonic() < deadline and not _loading_torch(child.pid):
        time.sleep(0.01)
    assert child.poll() is None, "the CLI ended before torch was seen loading"
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode in (130, -signal.SIGINT), err[-3000:]  # the shell shows 130 for both
    assert err == "interrupted\n", err[-3000:]
