"""Faults at benchmark scale: a worker killed mid-run, a full disk during a record write.

The sweep test is slow (a local Ray cluster, 12 runs): ``nox -s slow``.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments.run import store as store_module
from experiments.run.executors import SweepError, run_sweep
from experiments.run.runner import RunOptions, run_spec
from experiments.run.spec import RunSpec
from experiments.run.store import ResultsStore, StoreWriteError
from tests.conftest import REPO
from tests.experiments.fault_workers import run_toy
from tests.experiments.helpers import make_record, make_spec, without_timings
from tests.experiments.toy_task import SCHEDULED, registered


def toy_specs() -> list[RunSpec]:
    """12 runs: 6 seeds × {baseline, ELMo}, evaluated mid-epoch (checkpoints every 7 steps)."""
    specs = []
    for seed in range(6):
        specs.append(
            RunSpec(
                task="toy",
                task_version=1,
                representation="none",
                sites=(),
                dropout=0.0,
                seed=seed,
                overrides=SCHEDULED,
            )
        )
        specs.append(RunSpec(task="toy", task_version=1, seed=seed, overrides=SCHEDULED))
    return specs


strip = without_timings


@pytest.mark.slow
def test_ray_sweep_survives_a_worker_killed_mid_run(tmp_path: Path) -> None:
    """One Ray worker is SIGKILLed mid-run (Ray retries off, so the first sweep reports it);
    the restarted sweep resumes that run from its checkpoint. Every run then has the metrics
    and log of an uninterrupted run on the same thread count; none is lost or duplicated,
    and no half-written record is visible."""
    pytest.importorskip("ray")
    demo = tmp_path / "toy-demo"
    specs = toy_specs()
    options = RunOptions(work_root=tmp_path / "work", progress=False, threads=1)
    victim = specs[5].run_id  # an ELMo run
    run_one = functools.partial(run_toy, options=options, demo=demo, kill=victim)
    store = ResultsStore(tmp_path / "store")
    with pytest.raises(SweepError) as failed:
        run_sweep(specs, run_one, store, "ray", max_parallel=2, ray_options={"max_retries": 0})
    assert list(failed.value.result.failed) == [victim]
    assert len(failed.value.result.ran) == 11 and not store.has(victim)
    assert (tmp_path / "work" / f"killed-{victim}").exists()
    assert store.partial() == []
    again = run_sweep(specs, run_one, store, "ray", max_parallel=2)
    assert again.ran == (victim,) and len(again.skipped) == 11
    assert sorted(store.run_ids()) == sorted(s.run_id for s in specs)  # nothing duplicated
    reference_options = RunOptions(work_root=tmp_path / "ref", progress=False, threads=1)
    with registered(demo):
        for spec in specs:
            reference = run_spec(spec, reference_options)
            stored = store.get(spec.run_id)
            assert stored.metrics == reference.metrics, spec.run_id
            assert strip(stored.log) == strip(reference.log), spec.run_id


def test_a_full_disk_during_a_record_write_leaves_the_store_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ResultsStore(tmp_path / "store")
    kept = make_record(make_spec(seed=0), 0.8)
    store.put(kept)
    real = store_module.write_text
    calls = {"n": 0}

    def filling(path: Path, text: str) -> None:
        calls["n"] += 1
        if calls["n"] == 2:  # the second file of the record: half written, then the disk is full
            path.write_text(text[: len(text) // 2], encoding="utf-8")
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, text)

    monkeypatch.setattr(store_module, "write_text", filling)
    new = make_record(make_spec(seed=1), 0.9)
    with pytest.raises(StoreWriteError, match="no space left on the device.*unchanged"):
        store.put(new)
    assert store.run_ids() == [kept.run_id] and store.partial() == []
    assert store.get(kept.run_id).metrics == kept.metrics
    monkeypatch.setattr(store_module, "write_text", real)
    store.put(new)  # once there is room again the same record goes in
    assert store.get(new.run_id).metrics == new.metrics


def test_local_workers_end_when_the_sweep_is_killed(tmp_path: Path) -> None:
    """``kill -9`` of a sweep with two worker processes: the workers exit within seconds
    instead of training on as orphans."""
    pids = tmp_path / "pids"
    pids.mkdir()
    driver = f"""
import functools
from pathlib import Path
from experiments.run.executors import run_sweep
from experiments.run.store import ResultsStore
from tests.experiments.fault_workers import sleepy
from tests.experiments.helpers import make_spec
specs = [make_spec(seed=s) for s in range(2)]
run_sweep(specs, functools.partial(sleepy, folder=Path({str(pids)!r})),
          ResultsStore(Path({str(tmp_path / "store")!r})), max_parallel=2)
"""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, "-c", driver], env=env)
    deadline = time.monotonic() + 120
    while len(list(pids.iterdir())) < 2:
        assert time.monotonic() < deadline and process.poll() is None, "workers did not start"
        time.sleep(0.2)
    workers = [int(p.read_text()) for p in pids.iterdir()]
    process.send_signal(signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in workers):
        assert time.monotonic() < deadline, f"orphaned workers still running: {workers}"
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return (
        Path(f"/proc/{pid}").exists()
        and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
    )
