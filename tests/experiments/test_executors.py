"""run_sweep: skips stored runs, stores results from the driver, reports failures; local and Ray."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest

from experiments.executors import SweepError, run_sweep
from experiments.spec import RunSpec, expand_sweep
from experiments.store import ResultsStore, RunRecord
from tests.experiments.helpers import fake_run, make_record, make_spec


def test_local_sweep_runs_then_skips(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    specs = expand_sweep(make_spec(), seed=[0, 1, 2])
    calls: list[int] = []

    def run_one(spec: RunSpec) -> RunRecord:
        calls.append(spec.seed)
        return fake_run(spec)

    first = run_sweep(specs + specs[:1], run_one, store)  # duplicates run once
    assert first.ran == tuple(s.run_id for s in specs) and first.skipped == ()
    assert calls == [0, 1, 2]
    assert store.get(specs[2].run_id).metrics == {"accuracy": 0.52}
    more = expand_sweep(make_spec(), seed=[0, 1, 2, 3])
    second = run_sweep(more, run_one, store)  # a rerun skips finished runs
    assert second.ran == (more[3].run_id,) and len(second.skipped) == 3
    assert calls == [0, 1, 2, 3]


def test_failures_are_reported_after_the_others_are_stored(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    good, bad = make_spec(seed=1), make_spec(seed=-1)

    def wrong_record(spec: RunSpec) -> RunRecord:
        return make_record(dataclasses.replace(spec, seed=spec.seed + 100))

    with pytest.raises(SweepError, match="1 of 2 runs failed") as caught:
        run_sweep([bad, good], fake_run, store)
    assert caught.value.result.ran == (good.run_id,)
    assert "negative seed" in caught.value.result.failed[bad.run_id]
    assert store.run_ids() == [good.run_id]
    with pytest.raises(SweepError, match="returned a record for"):
        run_sweep([make_spec(seed=5)], wrong_record, store)


def test_bad_arguments(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    with pytest.raises(ValueError, match="executor"):
        run_sweep([], fake_run, store, executor="slurm")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_parallel"):
        run_sweep([], fake_run, store, max_parallel=0)
    with pytest.raises(ValueError, match="address"):
        run_sweep([], fake_run, store, address="auto")


def test_local_process_pool(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    specs = expand_sweep(make_spec(), seed=[0, 1, -1])
    with pytest.raises(SweepError) as caught:
        run_sweep(specs, fake_run, store, max_parallel=2)
    assert set(caught.value.result.ran) == {specs[0].run_id, specs[1].run_id}
    assert list(caught.value.result.failed) == [specs[2].run_id]


@pytest.mark.slow
def test_ray_local_cluster(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    store = ResultsStore(tmp_path)
    specs = expand_sweep(make_spec(), seed=[0, 1, 2, -1])
    store.put(fake_run(specs[0]))
    start = time.perf_counter()
    with pytest.raises(SweepError) as caught:
        run_sweep(specs, fake_run, store, executor="ray", max_parallel=2)
    result = caught.value.result
    assert result.skipped == (specs[0].run_id,)
    assert result.ran == (specs[1].run_id, specs[2].run_id)
    assert "negative seed" in result.failed[specs[3].run_id]
    assert store.get(specs[2].run_id).metrics == {"accuracy": 0.52}
    assert not ray.is_initialized()  # the local Ray it started is shut down
    assert time.perf_counter() - start < 300
