"""``executor="slurm"``: one job per run through submitit, here with submitit's local cluster
(each job a process on this machine, with the same folders, pickles and result files as on
Slurm). Stored runs are reused (their identities computed in a job), the driver stores the
records, failures name the job and its log, a killed job's run resumes from its checkpoint
when the sweep is run again; a missing submitit is one line naming the install command."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib.util
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiments.run.executors import (
    SLURM_INSTALL,
    SlurmJobError,
    SlurmOptions,
    SweepError,
    run_sweep,
)
from experiments.run.identity import RunIdentity
from experiments.run.runner import RunOptions, run_spec
from experiments.run.spec import RunSpec, expand_sweep
from experiments.run.store import ResultsStore, RunRecord
from tests.experiments.fault_workers import run_toy
from tests.experiments.helpers import cli_dirs, make_spec, without_timings
from tests.experiments.store_workers import fake_identity, identified_record
from tests.experiments.toy_task import SCHEDULED, registered

#: The tests that submit jobs; the dev extra brings submitit (pyproject.toml).
needs_submitit = pytest.mark.skipif(
    importlib.util.find_spec("submitit") is None,
    reason=f"submitit is not installed: {SLURM_INSTALL} (the dev extra has it)",
)


def where() -> str:
    """``"node"`` inside a job of submitit's local cluster, ``"driver"`` elsewhere."""
    return "node" if os.environ.get("SUBMITIT_EXECUTOR") == "local" else "driver"


def identify_where(spec: RunSpec) -> RunIdentity:
    """A fake identity that says where it was computed (as ``data``)."""
    return fake_identity(where())


def run_where(spec: RunSpec) -> RunRecord:
    """A fake run (module level: the job unpickles it by name); a negative seed fails."""
    if spec.seed < 0:
        raise RuntimeError("negative seed")
    return identified_record(spec, 0.5 + spec.seed / 100, identify_where(spec))


def local_cluster(tmp_path: Path) -> SlurmOptions:
    return SlurmOptions(folder=tmp_path / "slurm", cluster="local", minutes=10, poll_seconds=0.2)


def job_folders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and p.name.isdigit())


@needs_submitit
def test_jobs_train_the_missing_runs_and_the_driver_stores_them(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "store")
    reused, stale, fresh, failing = expand_sweep(make_spec(), seed=[0, 1, 2, -1])
    # identities are computed on a node: a record made there matches, one made elsewhere not
    store.put(identified_record(reused, 0.4, fake_identity("node")))
    store.put(identified_record(stale, 0.4, fake_identity("driver")))
    options = local_cluster(tmp_path)
    with pytest.raises(SweepError) as caught:
        run_sweep(
            [reused, stale, fresh, failing],
            run_where,
            store,
            "slurm",
            max_parallel=3,
            identify=identify_where,
            slurm=options,
        )
    result = caught.value.result
    assert result.skipped == (reused.run_id,) and result.ran == (stale.run_id, fresh.run_id)
    assert "data changed" in result.superseded[stale.run_id]
    assert store.get(fresh.run_id).metrics == {"accuracy": 0.52}
    assert store.identity_of(fresh.run_id)["data"] == "node"  # trained in a job
    assert store.get(reused.run_id).metrics == {"accuracy": 0.4}
    failure = result.failed[failing.run_id]
    assert failure.startswith("SlurmJobError: RuntimeError: negative seed (Slurm job ")
    assert failure.endswith("_0_log.err)") and "\n" not in failure
    assert len(job_folders(options.folder)) == 4  # the identities' job, then one per run
    assert store.partial() == []


@needs_submitit
def test_a_job_that_cannot_be_submitted_fails_its_run_only(tmp_path: Path) -> None:
    """A parameter sbatch (here submitit) refuses: the run fails with one short line; where
    stored records need their identities, the sweep stops before any run."""
    store = ResultsStore(tmp_path / "store")
    spec, stored = make_spec(seed=0), make_spec(seed=1)
    options = dataclasses.replace(local_cluster(tmp_path), parameters={"slurm_bogus": 1})
    with pytest.raises(SweepError) as caught:
        run_sweep([spec], run_where, store, "slurm", slurm=options)
    failure = caught.value.result.failed[spec.run_id]
    assert failure.startswith("SlurmJobError: submission failed: Unknown argument 'bogus'")
    assert "\n" not in failure and len(failure) < 450
    assert not store.has(spec.run_id)
    store.put(identified_record(stored, 0.4, fake_identity("node")))
    with pytest.raises(SlurmJobError, match="identities could not be submitted: Unknown arg"):
        run_sweep([spec, stored], run_where, store, "slurm", identify=identify_where, slurm=options)
    assert not store.has(spec.run_id)


def test_slurm_options_need_the_slurm_executor(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="only used with executor='slurm'"):
        run_sweep([], run_where, ResultsStore(tmp_path), slurm=local_cluster(tmp_path))


def toy_spec(seed: int) -> RunSpec:
    return RunSpec(task="toy", task_version=1, seed=seed, overrides=SCHEDULED)


strip = without_timings


def evaluation_lines(log: Path, run_id: str) -> int:
    """The evaluation lines of ``run_id`` in a job's log (not its resumed or progress lines)."""
    lines = log.read_text().splitlines()
    return sum(run_id in line and " epoch " in line and "(best " in line for line in lines)


@needs_submitit
def test_a_killed_job_resumes_from_its_checkpoint_when_submitted_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job of a toy run is SIGKILLed after its second checkpoint (step 14 of 21): the sweep
    reports it; the next sweep's job resumes it (it evaluates only what was left) and the
    record equals an uninterrupted run's."""
    import submitit

    monkeypatch.setattr(submitit.core.core.Job, "_results_timeout_s", 1)  # no result: say so
    demo, spec = tmp_path / "toy-demo", toy_spec(seed=3)
    options = RunOptions(work_root=tmp_path / "work", progress=False, eval_lines=True, threads=1)
    run_one = functools.partial(run_toy, options=options, demo=demo, kill=spec.run_id)
    store, slurm = ResultsStore(tmp_path / "store"), local_cluster(tmp_path)
    with pytest.raises(SweepError) as caught:
        run_sweep([spec], run_one, store, "slurm", slurm=slurm)
    assert "ended without a result" in caught.value.result.failed[spec.run_id]
    assert not store.has(spec.run_id) and store.partial() == []
    again = run_sweep([spec], run_one, store, "slurm", slurm=slurm)
    assert again.ran == (spec.run_id,)
    stored = store.get(spec.run_id)
    with registered(demo):
        reference = run_spec(spec, dataclasses.replace(options, work_root=tmp_path / "ref"))
    assert stored.metrics == reference.metrics
    assert strip(stored.log) == strip(reference.log)
    counts = [
        evaluation_lines(f / f"{f.name}_0_log.err", spec.run_id) for f in job_folders(slurm.folder)
    ]
    assert sorted(counts) == sorted([2, len(stored.log) - 2])  # killed after 2; the rest after
    logs = [(f / f"{f.name}_0_log.err").read_text() for f in job_folders(slurm.folder)]
    assert sum("resumed from its checkpoint after epoch" in text for text in logs) == 1


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:  # a zombie has ended
        return stat.read().split(") ", 1)[1][0] != "Z"


@pytest.fixture
def sigint_default() -> Iterator[None]:
    """SIGINT handled as Python's default while the test runs. submitit's local cancel is a
    SIGINT to the job's controller, which inherits an ignored SIGINT from a test run started in
    the background of a shell without job control (``nohup … &``) and then never stops."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


# submitit's local job object goes while its (signalled) controller process is still ending
@needs_submitit
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <function Popen.__del__:pytest.PytestUnraisableExceptionWarning"
)
@pytest.mark.usefixtures("sigint_default")
def test_ctrl_c_cancels_the_jobs_in_flight(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No job trains on, unclaimed, after the driver was interrupted."""
    from experiments.run import executors
    from tests.experiments.fault_workers import sleepy

    pids, spec = tmp_path / "pids", make_spec()
    pids.mkdir()

    def interrupt_once_running(options: SlurmOptions) -> None:
        if (pids / spec.run_id).exists():
            raise KeyboardInterrupt
        time.sleep(0.2)

    monkeypatch.setattr(executors, "_idle", interrupt_once_running)
    store = ResultsStore(tmp_path / "store")
    run_one = functools.partial(sleepy, folder=pids)
    with pytest.raises(KeyboardInterrupt):
        run_sweep([spec], run_one, store, "slurm", slurm=local_cluster(tmp_path))
    pid = int((pids / spec.run_id).read_text(encoding="utf-8"))
    deadline = time.monotonic() + 30
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)
    assert not store.has(spec.run_id)
    claim = store.claim(spec, wait=False)  # the driver gave its claim up
    assert claim is not None
    claim.release()


# ------------------------------------------------------------------------------ no submitit
def test_without_submitit_a_sweep_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "submitit", None)  # import submitit raises ImportError
    with pytest.raises(ImportError) as caught:
        run_sweep([make_spec()], run_where, ResultsStore(tmp_path / "api"), "slurm")
    assert str(caught.value) == f"executor='slurm' needs submitit: {SLURM_INSTALL}"
    from experiments.cli import main

    with registered(tmp_path / "toy-demo"):
        status = main(["run", "toy", "--repr", "none", "--executor", "slurm", *cli_dirs(tmp_path)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(lines) == 1
    assert lines[0] == (
        "error: --executor slurm needs submitit, which is not installed: "
        "pip install 'elmo-bench[slurm]'"
    )
    assert not (tmp_path / "work").exists() and not (tmp_path / "store").exists()


# ------------------------------------------------------------------------------ the CLI's flags
def parse(*argv: str) -> argparse.Namespace:
    from experiments.cli import build_parser

    return build_parser().parse_args(["run", "snli", "--executor", "slurm", *argv])


def test_the_slurm_flags_make_the_job_options() -> None:
    from experiments.cli.training import slurm_options

    plain = slurm_options(parse("--work", "w"))
    assert plain == SlurmOptions(folder=Path("w/slurm"), minutes=1440, cpus=1, gpus=0)
    given = slurm_options(
        parse(
            *("--slurm-partition", "gpu", "--slurm-time", "90", "--slurm-folder", "logs"),
            *("--cpus-per-run", "3.5", "--gpus-per-run", "0.5"),
            *("--slurm-set", "account=nlp", "slurm_mem_gb=32"),
        )
    )
    assert (given.partition, given.minutes, given.folder) == ("gpu", 90, Path("logs"))
    assert (given.cpus, given.gpus) == (4, 1)  # rounded up
    assert dict(given.parameters) == {"slurm_account": "nlp", "slurm_mem_gb": 32}
    assert slurm_options(parse("--gpus-per-run", "2", "--slurm-gpus-per-run", "0")).gpus == 0


@needs_submitit
def test_slurm_without_sbatch_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    from experiments.cli import main

    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    with registered(tmp_path / "toy-demo"):
        status = main(["run", "toy", "--repr", "none", "--executor", "slurm", *cli_dirs(tmp_path)])
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(lines) == 1
    assert lines[0].startswith("error: --executor slurm submits with sbatch and srun, which are")
    assert not (tmp_path / "work").exists()
