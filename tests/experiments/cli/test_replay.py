"""``python -m experiments run --spec SPEC.json``: a stored run replayed from its ``spec.json``
into another store has the same run id and the same metrics; a replay whose recorded data or code
differs from now is refused in one line (exit status 2) unless ``--allow-changed``, which trains
and says what differs; ``--spec`` takes no option that builds a spec."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiments import identity
from experiments.cli import main
from experiments.store import ResultsStore
from tests.experiments.helpers import cli_dirs
from tests.experiments.toy_task import registered

TINY = ["--repr", "none", "--max-epochs", "1", "--limit", "40"]


@pytest.fixture
def stored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Path]:
    """A toy run trained into ``tmp_path/first/store``; yields its ``spec.json`` (the toy task
    stays registered, its DEMO set in ``tmp_path/toy-demo``)."""
    with registered(tmp_path / "toy-demo"):
        assert main(["run", "toy", *TINY, *cli_dirs(tmp_path / "first")]) == 0
        (line,) = capsys.readouterr().out.splitlines()
        store = ResultsStore(tmp_path / "first" / "store")
        folder = store.path_of(json.loads(line)["run_id"])
        assert folder is not None
        yield folder / "spec.json"


def _replay(spec: Path, dirs: Path, *extra: str) -> int:
    return main(["run", "--spec", str(spec), *extra, *cli_dirs(dirs)])


def test_replay_into_a_fresh_store_gives_the_same_run_id_and_metrics(
    stored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = json.loads((stored.parent / "metrics.json").read_text(encoding="utf-8"))
    assert _replay(stored, tmp_path / "again") == 0
    out, err = capsys.readouterr()
    (line,) = out.splitlines()
    printed = json.loads(line)
    assert printed["run_id"] == stored.parent.name
    replayed = ResultsStore(tmp_path / "again" / "store").get(stored.parent.name)
    assert dict(replayed.metrics) == recorded
    assert (stored.parent / "spec.json").read_text() == (
        tmp_path / "again" / "store" / "toy" / stored.parent.name / "spec.json"
    ).read_text()
    assert "metrics identical to the recorded run" in err
    # a run folder stands for its spec.json; the store that holds it reuses it
    assert _replay(stored.parent, tmp_path / "again") == 0
    assert "stored" in capsys.readouterr().err


def test_changed_data_is_refused_unless_allowed(
    stored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = tmp_path / "toy-demo" / "train.jsonl"
    lines = train.read_text(encoding="utf-8").splitlines(keepends=True)
    train.write_text("".join(lines[1:] + lines[:1]), encoding="utf-8")  # same rows, new order
    assert _replay(stored, tmp_path / "again") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --spec ") and err.count("\n") == 1, err
    assert "data changed (changed train.jsonl)" in err and "--allow-changed" in err
    assert not (tmp_path / "again" / "store").exists()  # nothing trained

    assert _replay(stored, tmp_path / "again", "--allow-changed") == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["run_id"] == stored.parent.name
    assert "although it changed: data changed (changed train.jsonl)" in err
    assert ResultsStore(tmp_path / "again" / "store").has(stored.parent.name)


def test_changed_code_or_options_are_refused(
    stored: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _replay(stored, tmp_path / "again", "--threads", "2") == 2
    assert "threads 1 → 2" in capsys.readouterr().err
    now = identity.code_version()
    monkeypatch.setattr(
        identity, "code_version", lambda: dataclasses.replace(now, harness_hash="f" * 32)
    )
    assert _replay(stored, tmp_path / "again") == 2
    err = capsys.readouterr().err
    assert "code changed (sources of bilm/, tasks/, experiments/" in err and "→ ffffffff" in err
    assert not (tmp_path / "again" / "store").exists()


def test_a_spec_without_its_record_or_with_spec_options_is_refused(
    stored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bare = tmp_path / "elsewhere" / "spec.json"
    bare.parent.mkdir()
    bare.write_text(stored.read_text(encoding="utf-8"), encoding="utf-8")
    cases: tuple[tuple[list[str], str], ...] = (
        ([], "no env.json beside it"),
        (["toy"], "the TASK argument cannot be given with it"),
        (["--repr", "glove", "--set", "dim=4"], "--repr, --set cannot be given with it"),
    )
    for extra, message in cases:
        assert main(["run", *extra, "--spec", str(bare), *cli_dirs(tmp_path / "again")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
    bad = tmp_path / "bad.json"
    bad.write_text('{"task": "toy", "colour": 1}', encoding="utf-8")
    assert _replay(bad, tmp_path / "again") == 2
    assert "not a run spec (unknown RunSpec fields ['colour']" in capsys.readouterr().err
    assert main(["run", "toy", "--allow-changed", *cli_dirs(tmp_path / "again")]) == 2
    assert "--allow-changed applies only to a replay" in capsys.readouterr().err
    assert not (tmp_path / "again" / "store").exists()
