"""Reusing stored runs on the command line (docs/runs.md), on a copy of sst5's DEMO
folder: an identical command reuses its run; after a data file changed the run is trained
again from scratch and the old record is kept as superseded; ``--rerun`` trains again;
``--reuse-stale`` reuses knowingly and the table marks it (‡); Ctrl-C during a run leaves a
store that the next identical command completes, with the numbers of an uninterrupted run."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from experiments.cli import main
from experiments.run.store import ResultsStore
from tasks.registry import get_task
from tests.conftest import REPO
from tests.experiments.helpers import cli_dirs, without_timings

AFRESH = "written from other inputs (run identity); starting afresh"


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A copy of sst5's DEMO folder."""
    folder = tmp_path / "data"
    shutil.copytree(get_task("sst5").demo(), folder)
    return folder


def run_argv(data: Path, dirs: Path, *extra: str, limit: int = 20, epochs: int = 1) -> list[str]:
    """``run sst5 --repr none`` on ``data``: one seed, ``limit`` examples, ``epochs`` epochs,
    store, work, cache and outputs under ``dirs``."""
    return [
        "run",
        "sst5",
        "--repr",
        "none",
        "--seeds",
        "0",
        "--limit",
        str(limit),
        "--max-epochs",
        str(epochs),
        "--data",
        str(data),
        *cli_dirs(dirs),
        *extra,
    ]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    """Run the command line in this process: ``(its JSON result line, its stderr)``."""
    assert main(argv) == 0
    out, err = capsys.readouterr()
    return json.loads(out.strip().splitlines()[-1]), err


def change_line(path: Path, index: int = 0) -> None:
    """Change one line of a data file (the root label of an SST tree: ``(4 ...`` → ``(0 ...``)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert lines[index][0] == "(" and lines[index][1].isdigit()
    lines[index] = f"({(int(lines[index][1]) + 1) % 5}{lines[index][2:]}"
    path.write_text("".join(lines), encoding="utf-8")


without_seconds = without_timings


def test_a_changed_data_file_trains_the_run_again_and_keeps_the_old_record(
    tmp_path: Path,
    data: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    argv = run_argv(data, tmp_path)
    store = ResultsStore(tmp_path / "store")
    first, err = run(argv, capsys)
    rid = first["run_id"]
    assert f"] done   {rid} sst5 baseline seed=0" in err
    original = store.get(rid)
    # the identical command reuses the run
    again, err = run(argv, capsys)
    assert f"] stored {rid}" in err and "done" not in err and again == first
    assert store.superseded(rid) == []
    # one changed line of train.txt: trained again, from scratch, the old record superseded
    change_line(data / "train.txt")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="experiments.run.runner"):
        changed, err = run(argv, capsys)
    assert changed["run_id"] == rid
    assert f"] done   {rid}" in err
    assert "replaced a stale record: data changed (changed train.txt)" in err
    assert "1 stale record(s) trained again and replaced" in err
    assert AFRESH in caplog.text and "resumed" not in caplog.text
    (old,) = store.superseded(rid)
    assert old == tmp_path / "store" / "sst5" / "superseded" / f"{rid}.1"
    assert json.loads((old / "metrics.json").read_text()) == dict(original.metrics)
    note = json.loads((old / "superseded.json").read_text())
    assert note["reason"] == "data changed (changed train.txt)"
    new = store.get(rid)
    assert note["by_identity"] == dict(new.provenance.identity)
    digests = (original.provenance.identity["data_files"], new.provenance.identity["data_files"])
    assert digests[0]["train.txt"] != digests[1]["train.txt"]
    assert new.provenance.code["harness_hash"] and store.run_ids() == [rid]
    # ... with the numbers of a run in a fresh store and work folder (not the old run resumed)
    fresh, _ = run(run_argv(data, tmp_path / "fresh"), capsys)
    reference = ResultsStore(tmp_path / "fresh" / "store").get(rid)
    assert fresh == changed and new.metrics == reference.metrics
    assert without_seconds(new.log) == without_seconds(reference.log)
    assert without_seconds(new.log) != without_seconds(original.log)  # other training data
    # --reuse-stale after another change: reused as it is, and said so
    change_line(data / "train.txt")
    stale, err = run([*argv, "--reuse-stale"], capsys)
    assert stale == changed
    assert f"] stale  {rid}" in err and "data changed (changed train.txt)" in err
    assert "done" not in err and len(store.superseded(rid)) == 1
    # a table of it marks the stale run
    sweep = ["sweep", *argv[1:], "--reuse-stale"]
    assert main(sweep) == 0
    out, err = capsys.readouterr()
    assert f"] stale  {rid}" in err and "done" not in err
    (row,) = [line for line in out.splitlines() if line.startswith("| sst5 baseline")]
    assert "‡" in row
    assert f"(--reuse-stale): {rid}" in out
    assert len(store.superseded(rid)) == 1 and store.partial() == []


def test_rerun_trains_a_matching_run_again(
    tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = run_argv(data, tmp_path)
    store = ResultsStore(tmp_path / "store")
    first, _ = run(argv, capsys)
    rid = first["run_id"]
    again, err = run([*argv, "--rerun"], capsys)
    assert again == first  # the same inputs, the same numbers
    assert f"] done   {rid}" in err and "replaced a stale record: rerun asked for (--rerun)" in err
    (old,) = store.superseded(rid)
    reason = json.loads((old / "superseded.json").read_text())["reason"]
    assert reason == "rerun asked for (--rerun)"
    run(argv, capsys)  # and the new record is then reused
    assert len(store.superseded(rid)) == 1


def test_rerun_does_not_resume_the_finished_checkpoint(
    tmp_path: Path,
    data: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    argv = run_argv(data, tmp_path)
    run(argv, capsys)
    with caplog.at_level(logging.INFO, logger="experiments.run.runner"):
        run([*argv, "--rerun"], capsys)
    assert "resumed" not in caplog.text


def _sigint_default() -> None:
    """In the child before it runs Python: SIGINT back to its default, so that Python installs
    its KeyboardInterrupt handler whatever the test process inherited."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_during_a_run_leaves_a_store_the_next_identical_command_completes(
    tmp_path: Path,
    data: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The command runs in a second process (every batch 0.4 s slower, so that the SIGINT
    surely lands mid-run: after the first epoch's checkpoint, before the last epoch); the rerun
    of the identical command resumes that checkpoint and stores the numbers and log of an
    uninterrupted run (the same thread count: 1, the command's default)."""
    argv = run_argv(data, tmp_path, limit=200, epochs=4)
    store = ResultsStore(tmp_path / "store")
    work = tmp_path / "work" / "sst5"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "tests.experiments.cli_workers", "0.4", *argv]
    process = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a shell without job control starts background jobs with SIGINT ignored, and the child
        # would inherit that (`pytest … &` under nohup): give it the default disposition
        preexec_fn=_sigint_default,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(work.glob("*/checkpoint.pt")):
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "no checkpoint within 120 s"
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode != 0, err  # interrupted, not finished
    (checkpoint,) = work.glob("*/checkpoint.pt")
    rid = checkpoint.parent.name
    state = json.loads(torch.load(checkpoint, weights_only=True)["state"])
    assert 1 <= state["epoch"] < 3  # interrupted after a checkpoint, before the end
    # nothing of the interrupted run is visible: no record, no temporary folder
    assert store.run_ids() == [] and store.records() == [] and store.partial() == []
    assert not store.has(rid) and store.identity_of(rid) is None
    task_dir = tmp_path / "store" / "sst5"
    visible = [p.name for p in task_dir.iterdir()] if task_dir.is_dir() else []
    assert [name for name in visible if not name.startswith(".")] == []
    # the identical command resumes it and finishes
    with caplog.at_level(logging.INFO, logger="experiments.run.runner"):
        resumed, err = run(argv, capsys)
    assert f"resumed {checkpoint.parent} at epoch {state['epoch']}" in caplog.text
    assert AFRESH not in caplog.text
    assert resumed["run_id"] == rid and f"] done   {rid}" in err and "stale" not in err
    # ... with the numbers and log of an uninterrupted run
    reference, _ = run(run_argv(data, tmp_path / "fresh", limit=200, epochs=4), capsys)
    assert resumed == reference
    stored = store.get(rid)
    uninterrupted = ResultsStore(tmp_path / "fresh" / "store").get(rid)
    assert without_seconds(stored.log) == without_seconds(uninterrupted.log)
    assert store.run_ids() == [rid] and store.superseded(rid) == [] and store.partial() == []
