"""``python -m experiments run --spec SPEC.json``: a stored run replayed from its ``spec.json``
into another store has the same run id and the same metrics; a replay whose recorded data or code
differs from now is refused in one line (exit status 2) unless ``--allow-changed``, which trains
and says what differs; ``--spec`` takes no option that builds a spec. A spec is data: a plug-in
representation is refused unless ``--trust-plugin`` names it, and nothing is imported from the
folder the command starts in."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from experiments.cli import main
from experiments.run import identity
from experiments.run.spec import RunSpec
from experiments.run.store import ResultsStore
from tasks.registry import get_task
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


# ------------------------------------------------------------------- a spec is data, not code
def _with_plugin(stored: Path, folder: Path, plugin: str, config: dict[str, object]) -> Path:
    """``stored`` rewritten to name ``plugin`` with ``config``, in ``folder``."""
    data = json.loads(stored.read_text(encoding="utf-8"))
    data.update(representation=plugin, representation_config=config, sites=["input"])
    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / "spec.json"
    spec.write_text(json.dumps(data), encoding="utf-8")
    return spec


def test_a_plugin_spec_is_refused_with_or_without_allow_changed_or_a_forged_env(
    stored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pwned = tmp_path / "pwned"
    spec = _with_plugin(
        stored, tmp_path / "handed", "os:system", {"command": f"echo PWNED > {pwned}"}
    )
    record = RunSpec.from_dict(json.loads(spec.read_text(encoding="utf-8")))
    now = identity.run_identity(record, "cpu", "fp32", None)
    forged = {
        "run_id": record.run_id,
        "provenance": {
            "identity": dataclasses.asdict(now),
            "code": {"harness_hash": identity.code_version().harness_hash},
        },
    }
    for extra, env in (([], None), (["--allow-changed"], None), ([], forged)):
        if env is not None:
            (spec.parent / "env.json").write_text(json.dumps(env), encoding="utf-8")
        assert _replay(spec, tmp_path / "again", *extra) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1, err
        assert "representation is the plug-in 'os:system'" in err
        assert "a spec is data" in err and "--trust-plugin os:system" in err
        assert not pwned.exists()
    assert _replay(spec, tmp_path / "again", "--trust-plugin", "other:Rep") == 2
    assert "--trust-plugin names only other:Rep" in capsys.readouterr().err
    assert not pwned.exists() and not (tmp_path / "again" / "store").exists()


def test_the_opt_in_builds_the_named_plugin(
    stored: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugin = "tests.contract.helpers:HashedTokens"
    spec = _with_plugin(stored, tmp_path / "handed", plugin, {})
    shutil.copy(stored.parent / "env.json", spec.parent / "env.json")
    assert _replay(spec, tmp_path / "again") == 2  # refused before anything else
    assert f"--trust-plugin {plugin}" in capsys.readouterr().err
    trusted = ["--trust-plugin", plugin, "--allow-changed"]  # its inputs changed, too
    assert _replay(spec, tmp_path / "again", *trusted) == 0
    out, err = capsys.readouterr()
    assert "replaying run" in err and json.loads(out.splitlines()[-1])["run_id"]


def test_a_replay_never_imports_from_the_folder_it_starts_in(tmp_path: Path) -> None:
    """A module of the plug-in's name in the starting folder is not imported (its top-level code
    would run) although ``python -m`` puts that folder first on the path."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    marker = tmp_path / "imported"
    (folder / "evilplug.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\nclass Rep: ...\n", encoding="utf-8"
    )
    task = get_task("sst5")
    spec = RunSpec(
        task="sst5", task_version=task.version, representation="evilplug:Rep", sites=("input",)
    )
    (folder / "spec.json").write_text(json.dumps(spec.to_dict()), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for extra in ([], ["--allow-changed"], ["--trust-plugin", "evilplug:Rep", "--allow-changed"]):
        done = subprocess.run(
            [sys.executable, "-m", "experiments", "run", "--spec", "spec.json", *extra]
            + ["--store", str(tmp_path / "store"), "--work", str(tmp_path / "work")],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 2, done.stderr[-2000:]
        assert not marker.exists(), extra
    # trusted, it is looked for on PYTHONPATH only, and not found there
    assert "cannot import 'evilplug'" in done.stderr, done.stderr[-2000:]
