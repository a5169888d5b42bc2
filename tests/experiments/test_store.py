"""ResultsStore: round trip, append-only, atomic puts, concurrent writers, provenance."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import pytest

import experiments.store as store_module
from experiments.store import (
    FILES,
    ResultsStore,
    RunExistsError,
    RunRecord,
    collect_env,
    fingerprint_files,
)
from tests.experiments.helpers import PROVENANCE, make_record, make_spec


def test_put_get_round_trip(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    record = make_record(make_spec(), 0.875)
    path = store.put(record)
    assert path == tmp_path / "snli" / record.run_id
    assert sorted(p.name for p in path.iterdir()) == sorted(FILES)
    assert store.has(record.run_id) and store.get(record.run_id) == record
    env = json.loads((path / "env.json").read_text())
    assert env["run_id"] == record.run_id and env["timings"] == {"wall_s": 1.5}
    assert json.loads((path / "metrics.json").read_text()) == {"accuracy": 0.875}
    assert len((path / "log.jsonl").read_text().splitlines()) == 2
    assert store.run_ids() == [record.run_id]


def test_missing_runs(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path / "nowhere")
    assert not store.has("0123456789ab") and store.records() == [] and store.run_ids() == []
    assert not store.has("../../etc")
    with pytest.raises(KeyError):
        store.get("0123456789ab")


def test_existing_run_is_never_overwritten(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    spec = make_spec()
    path = store.put(make_record(spec, 0.5))
    with pytest.raises(RunExistsError):
        store.put(make_record(spec, 0.9))
    assert json.loads((path / "metrics.json").read_text()) == {"accuracy": 0.5}
    assert store.partial() == []


def test_crash_while_writing_leaves_nothing_visible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ResultsStore(tmp_path)
    record = make_record(make_spec())
    real_write = store_module._write_synced
    written: list[str] = []

    def write_then_crash(path: Path, text: str) -> None:
        if len(written) == 2:
            raise OSError("disk full (simulated)")
        real_write(path, text)
        written.append(path.name)

    monkeypatch.setattr(store_module, "_write_synced", write_then_crash)
    with pytest.raises(OSError, match="simulated"):
        store.put(record)
    assert len(written) == 2
    assert not store.has(record.run_id) and store.records() == [] and store.partial() == []
    monkeypatch.undo()
    assert store.put(record).is_dir()  # the same run can then be written


def test_a_killed_writer_leaves_only_an_invisible_temporary_folder(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    record = make_record(make_spec())
    # what a SIGKILL between two file writes leaves behind
    partial = tmp_path / "snli" / f".tmp-{record.run_id}-deadbeef"
    partial.mkdir(parents=True)
    (partial / "spec.json").write_text(json.dumps(record.spec.to_dict()))
    assert not store.has(record.run_id) and store.records() == [] and store.run_ids() == []
    assert store.partial() == [partial]
    store.put(record)
    assert store.run_ids() == [record.run_id]
    assert store.remove_partial() == [partial] and not partial.exists()


def test_writer_that_loses_the_rename_race_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = ResultsStore(tmp_path)
    record = make_record(make_spec(), 0.25)
    real_write = store_module._write_synced
    state = {"raced": False}

    def write_while_another_writer_finishes(path: Path, text: str) -> None:
        if not state["raced"]:
            state["raced"] = True
            ResultsStore(tmp_path).put(make_record(record.spec, 0.75))  # the rival wins
        real_write(path, text)

    monkeypatch.setattr(store_module, "_write_synced", write_while_another_writer_finishes)
    with pytest.raises(RunExistsError):
        store.put(record)
    assert store.get(record.run_id).metrics == {"accuracy": 0.75}
    assert store.partial() == []


def test_concurrent_puts_of_one_run_id_one_wins(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    spec = make_spec()
    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def put(value: float) -> None:
        barrier.wait()
        try:
            store.put(make_record(spec, value))
            outcomes.append("won")
        except RunExistsError:
            outcomes.append("lost")

    threads = [threading.Thread(target=put, args=(i / 10,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["lost"] * 5 + ["won"]
    assert len(store.records()) == 1 and store.partial() == []


def test_records_filters(tmp_path: Path) -> None:
    store = ResultsStore(tmp_path)
    specs = [
        make_spec("snli", seed=0),
        make_spec("snli", seed=1, lam=1.0),
        make_spec("srl", seed=0, sites=("input", "output")),
    ]
    for spec in specs:
        store.put(make_record(spec))
    assert len(store.records()) == 3
    assert [r.spec for r in store.records("snli", lam=1.0)] == [specs[1]]
    assert [r.spec for r in store.records(sites="output,input")] == [specs[2]]
    assert store.records("coref") == []
    with pytest.raises(ValueError, match="valid"):
        store.records(colour="red")


def test_bad_records_are_rejected_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="finite"):
        RunRecord(spec=make_spec(), metrics={"f1": math.nan}, provenance=PROVENANCE)
    with pytest.raises(TypeError, match="number"):
        RunRecord(spec=make_spec(), metrics={"f1": "high"}, provenance=PROVENANCE)  # type: ignore[dict-item]
    bad_log = RunRecord(spec=make_spec(), metrics={}, provenance=PROVENANCE, log=({"x": object()},))
    store = ResultsStore(tmp_path)
    with pytest.raises(ValueError, match="JSON"):
        store.put(bad_log)
    assert store.run_ids() == [] and store.partial() == []


def test_collect_env() -> None:
    env = collect_env(representation_fingerprint="abc", data_fingerprint="def")
    assert env.python.count(".") == 2 and env.numpy is not None and "numpy" in env.packages
    assert env.device == "cpu" or env.device.startswith("cuda")
    assert env.git_sha is None or len(env.git_sha) == 40
    assert env.representation_fingerprint == "abc" and env.data_fingerprint == "def"
    assert type(env).from_dict(json.loads(json.dumps(env.to_dict()))) == env


def test_fingerprint_files(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.txt").write_text("hello")
        (tmp_path / name / "sub").mkdir()
        (tmp_path / name / "sub" / "y.txt").write_text("world")
    assert fingerprint_files(tmp_path / "a") == fingerprint_files(tmp_path / "b")
    (tmp_path / "b" / "sub" / "y.txt").write_text("World")
    assert fingerprint_files(tmp_path / "a") != fingerprint_files(tmp_path / "b")
    assert len(fingerprint_files(tmp_path / "a" / "x.txt")) == 32
