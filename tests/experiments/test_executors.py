"""run_sweep: skips stored runs whose identity matches (stale ones are trained again and
superseded, or reused knowingly), stores results from the driver, reports failures, waits for
runs another process has claimed; local and Ray."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest

from experiments.run.executors import SweepError, SweepResult, run_sweep
from experiments.run.identity import RunIdentity
from experiments.run.spec import RunSpec, expand_sweep
from experiments.run.store import Claim, ResultsStore, RunRecord
from tests.experiments.helpers import fake_run, make_record, make_spec
from tests.experiments.store_workers import await_ready, fake_identity, identified_record, start


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
        run_sweep([], fake_run, store, executor="pbs")  # type: ignore[arg-type]
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


# ------------------------------------------------------------ reuse by run identity, claims
class Fakes:
    """A fake ``identify`` (the data fingerprint of each run_id, changeable) and a fake
    ``run_one`` that counts its calls and records the identity of the moment, as ``run_spec``
    does."""

    def __init__(self, data: str = "d1") -> None:
        self.data: dict[str, str] = {}
        self.default = data
        self.calls: list[str] = []
        self.events: list[tuple[str, str, str]] = []

    def identify(self, spec: RunSpec) -> RunIdentity:
        return fake_identity(self.data.get(spec.run_id, self.default))

    def run_one(self, spec: RunSpec) -> RunRecord:
        self.calls.append(spec.run_id)
        return identified_record(spec, 0.6 + len(self.calls) / 100, self.identify(spec))

    def on_event(self, status: str, spec: RunSpec, detail: str) -> None:
        self.events.append((status, spec.run_id, detail))

    def sweep(self, specs: list[RunSpec], store: ResultsStore, **options: object) -> SweepResult:
        self.events.clear()
        return run_sweep(
            specs,
            self.run_one,
            store,
            identify=self.identify,
            on_event=self.on_event,
            **options,  # type: ignore[arg-type]
        )


def stored_with(store: ResultsStore, spec: RunSpec, data: str, value: float = 0.5) -> None:
    store.put(identified_record(spec, value, fake_identity(data)))


def test_a_matching_record_is_reused(tmp_path: Path) -> None:
    store, fakes = ResultsStore(tmp_path), Fakes()
    spec = make_spec()
    stored_with(store, spec, "d1")
    result = fakes.sweep([spec], store)
    assert result.skipped == (spec.run_id,) and result.ran == () and fakes.calls == []
    assert result.stale == {} and result.superseded == {}
    assert fakes.events == [("stored", spec.run_id, "")]


def test_a_stale_record_is_trained_again_and_superseded(tmp_path: Path) -> None:
    store, fakes = ResultsStore(tmp_path), Fakes()
    stale, fresh = make_spec(seed=0), make_spec(seed=1)
    stored_with(store, stale, "d0")
    stored_with(store, fresh, "d1")
    result = fakes.sweep([stale, fresh], store)
    why = "data changed (changed train.txt)"
    assert fakes.calls == [stale.run_id]
    assert result.ran == (stale.run_id,) and result.skipped == (fresh.run_id,)
    assert result.superseded == {stale.run_id: why} and result.stale == {}
    assert fakes.events == [
        ("stored", fresh.run_id, ""),
        ("done", stale.run_id, f"replaced a stale record: {why}"),
    ]
    (old,) = store.superseded(stale.run_id)
    assert json.loads((old / "metrics.json").read_text()) == {"accuracy": 0.5}
    note = json.loads((old / "superseded.json").read_text())
    assert note["reason"] == why and note["by_identity"] == fake_identity("d1").to_dict()
    assert store.identity_of(stale.run_id) == fake_identity("d1").to_dict()
    assert store.get(stale.run_id).metrics == {"accuracy": 0.61}
    again = fakes.sweep([stale, fresh], store)  # now both match
    assert again.ran == () and len(again.skipped) == 2 and fakes.calls == [stale.run_id]


def test_reuse_stale_keeps_the_record_and_says_why(tmp_path: Path) -> None:
    store, fakes = ResultsStore(tmp_path), Fakes()
    spec = make_spec()
    stored_with(store, spec, "d0")
    result = fakes.sweep([spec], store, reuse="stale")
    why = "data changed (changed train.txt)"
    assert fakes.calls == [] and result.skipped == (spec.run_id,) and result.ran == ()
    assert result.stale == {spec.run_id: why} and result.superseded == {}
    assert fakes.events == [("stale", spec.run_id, why)]
    assert store.superseded(spec.run_id) == [] and store.identity_of(spec.run_id)["data"] == "d0"


def test_reuse_never_trains_matching_records_again(tmp_path: Path) -> None:
    store, fakes = ResultsStore(tmp_path), Fakes()
    specs = [make_spec(seed=0), make_spec(seed=1)]
    stored_with(store, specs[0], "d1")
    result = fakes.sweep(specs, store, reuse="never")
    assert fakes.calls == [s.run_id for s in specs] and result.ran == tuple(fakes.calls)
    assert result.superseded == {specs[0].run_id: "rerun asked for (--rerun)"}
    assert len(store.superseded(specs[0].run_id)) == 1 and store.superseded(specs[1].run_id) == []


def test_records_without_an_identity(tmp_path: Path) -> None:
    """An old record (no identity) is trained again when identities are checked, and counts
    as finished when they are not (``identify=None``)."""
    store, fakes = ResultsStore(tmp_path), Fakes()
    spec = make_spec()
    store.put(make_record(spec, 0.5))
    assert run_sweep([spec], fakes.run_one, store).skipped == (spec.run_id,)
    assert fakes.calls == []
    result = fakes.sweep([spec], store)
    assert fakes.calls == [spec.run_id]
    assert "no recorded identity" in result.superseded[spec.run_id]


def test_bad_reuse_policy(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="reuse"):
        run_sweep([], fake_run, ResultsStore(tmp_path), reuse="sometimes")  # type: ignore[arg-type]


def _watching_claims(store: ResultsStore, go: Path, refused: list[str]) -> None:
    """Make ``store.claim`` note each refused claim and then create ``go`` (the other
    process's signal to finish), so the sweep provably found the run claimed."""
    real = store.claim

    def claim(spec: RunSpec, wait: bool = True) -> Claim | None:
        got = real(spec, wait)
        if got is None:
            refused.append(spec.run_id)
            go.touch()
        return got

    store.claim = claim  # type: ignore[method-assign]


@pytest.mark.parametrize(
    ("stores", "trained_here"),
    [("d1", False), ("d0", True), (None, True)],
    ids=["stores-a-matching-record", "stores-a-stale-record", "gives-up"],
)
def test_a_run_claimed_by_another_process_is_waited_for(
    tmp_path: Path, stores: str | None, trained_here: bool
) -> None:
    """Another process holds the claim of a run; the sweep waits for it, then reuses the
    record it stored when that matches, and trains the run itself otherwise (a stale record
    is superseded; nothing stored: trained afresh). The other runs are not held up."""
    store, fakes = ResultsStore(tmp_path / "store"), Fakes()
    busy, free = make_spec(seed=4), make_spec(seed=5)
    ready, go = tmp_path / "ready", tmp_path / "go"
    extra = ["--data", stores] if stores is not None else []
    holder = start("hold", str(store.root), "4", str(ready), str(go), *extra)
    refused: list[str] = []
    try:
        await_ready(ready, holder)
        _watching_claims(store, go, refused)
        result = fakes.sweep([busy, free], store)
        _, err = holder.communicate(timeout=60)
        assert holder.returncode == 0, err
    finally:
        holder.kill()
        holder.wait()
    assert refused == [busy.run_id]
    if trained_here:
        assert fakes.calls == [free.run_id, busy.run_id]
        assert result.ran == (busy.run_id, free.run_id) and result.skipped == ()
        assert len(store.superseded(busy.run_id)) == (1 if stores else 0)
    else:
        assert fakes.calls == [free.run_id]
        assert result.ran == (free.run_id,) and result.skipped == (busy.run_id,)
        assert store.get(busy.run_id).metrics == {"accuracy": 0.5}  # the other process's
        assert store.superseded(busy.run_id) == []
    assert store.identity_of(busy.run_id) == fake_identity("d1").to_dict()
    assert store.partial() == []


def test_a_run_stored_just_before_it_is_claimed_is_not_trained_again(tmp_path: Path) -> None:
    store, fakes = ResultsStore(tmp_path), Fakes()
    spec = make_spec()
    real = store.claim

    def claim(spec: RunSpec, wait: bool = True) -> Claim | None:
        if not store.has(spec.run_id):  # another process finishes the run just now
            stored_with(store, spec, "d1")
        return real(spec, wait)

    store.claim = claim  # type: ignore[method-assign]
    result = fakes.sweep([spec], store)
    assert fakes.calls == [] and result.skipped == (spec.run_id,)


def test_a_cut_env_json_is_reported_as_damaged_not_as_old(tmp_path: Path) -> None:
    """A truncated env.json used to be reported as a record older than run identities."""
    store, fakes = ResultsStore(tmp_path), Fakes()
    spec = make_spec()
    stored_with(store, spec, "d1")
    folder = store.path_of(spec.run_id)
    assert folder is not None
    env = folder / "env.json"
    env.write_text(env.read_text(encoding="utf-8")[:40], encoding="utf-8")  # cut
    result = fakes.sweep([spec], store)
    assert fakes.calls == [spec.run_id]
    why = result.superseded[spec.run_id]
    assert why.startswith("env.json damaged (not valid JSON (") and "older" not in why
