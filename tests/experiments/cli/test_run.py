"""``python -m experiments run`` and ``sweep`` on the toy task: the reader's skip counts are
stored with the run and shown under the sweep's table; ``--repr-set`` reaches the spec, is checked
before any run, and ``--repr hdf5`` trains from a features file."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from experiments.cli import main
from experiments.run.identity import representation_identity
from experiments.run.spec import RunSpec
from experiments.run.store import ResultsStore
from tasks.common.io import ReadStats
from tests.conftest import REPO
from tests.experiments.helpers import cli_dirs
from tests.experiments.toy_task import registered


def test_skip_counts_are_stored_and_shown_under_the_table(
    skipping_toy: dict[str, ReadStats], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["sweep", "toy", "--repr", "none", "--seeds", "0", "--max-epochs", "1"]
    assert main([*argv, *cli_dirs(tmp_path)]) == 0
    table = capsys.readouterr().out
    store = ResultsStore(tmp_path / "store")
    (record,) = store.records("toy")
    folder = store.path_of(record.run_id)
    assert folder is not None
    stored = json.loads((folder / "read-stats.json").read_text(encoding="utf-8"))
    assert stored["train"] == {
        "examples": 160,
        "skipped": {"bad line": 3, "short phrase": 100},
        "source": "toy/train.jsonl",
        "exempt": ["short phrase"],
    }
    assert stored["dev"] == {"examples": 80, "skipped": {}, "source": "toy/dev.jsonl"}
    assert (
        "Skipped while reading: train 160 kept, 103 skipped (short phrase 100, bad line 3); "
        "dev 80 kept; test 80 kept." in table
    )


# ------------------------------------------------------------------ --repr-set on run and sweep
def _toy_features(path: Path, dim: int = 4) -> Path:
    """Every sentence of the registered toy task: its layers under a small frozen
    representation, in the ``bilm embed`` layout."""
    from tasks.registry import get_task
    from tests.contract.helpers import HashedTokens, write_hdf5_features

    recipe = get_task("toy").setup("mini", [], None)
    sentences = recipe.sequences([e for split in recipe.splits.values() for e in split])
    return write_hdf5_features(path, HashedTokens(output_dim=dim), sentences)


def test_repr_set_reaches_the_spec_and_its_run_id(tmp_path: Path) -> None:
    from experiments.cli import build_parser, runs, sweep

    def specs(*argv: str) -> list[RunSpec]:
        command = runs if argv[0] == "run" else sweep
        return command.train_specs(build_parser().parse_args([*argv, *cli_dirs(tmp_path)]))[0]

    with registered(tmp_path / "toy-demo"):
        (run,) = specs("run", "toy", "--repr", "hdf5", "--repr-set", "path=a.hdf5")
        (other,) = specs("run", "toy", "--repr", "hdf5", "--repr-set", "path=b.hdf5")
        sweep = specs("sweep", "toy", "--repr", "hdf5,none", "--repr-set", "path=a.hdf5")
        (elmo,) = specs("run", "toy")
    assert (run.representation, dict(run.representation_config)) == ("hdf5", {"path": "a.hdf5"})
    assert other.run_id != run.run_id
    assert run.run_id in {s.run_id for s in sweep}
    assert dict(elmo.representation_config) == {}  # no --repr-set: the spec as before


def test_bad_repr_set_is_refused_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = (
        (["run", "toy", "--repr", "hdf5", "--repr-set", "paht=x"], "unknown option(s) ['paht']"),
        (["run", "toy", "--repr", "hdf5"], "needs option(s) ['path']: --repr-set path=..."),
        (["run", "toy", "--repr", "hdf5", "--repr-set", "path"], "takes KEY=VALUE, got 'path'"),
        (["run", "toy", "--repr", "none", "--repr-set", "a=1"], "does not apply to --repr none"),
        (["sweep", "toy", "--repr", "elmo,hdf5", "--repr-set", "path=x"], "['path']"),
    )
    with registered(tmp_path / "toy-demo"):
        for argv, message in cases:
            assert main([*argv, *cli_dirs(tmp_path)]) == 2
            err = capsys.readouterr().err
            assert err.startswith("error: ") and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "store").exists() and not (tmp_path / "work").exists()


def test_run_with_hdf5_features(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``run toy --repr hdf5 --repr-set path=F`` trains through the feature cache; the file's
    content is part of the run's identity."""
    with registered(tmp_path / "toy-demo"):
        path = _toy_features(tmp_path / "toy.hdf5")
        argv = ["run", "toy", "--repr", "hdf5", "--repr-set", f"path={path}", "--max-epochs", "1"]
        assert main([*argv, *cli_dirs(tmp_path)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    printed = json.loads(line)
    record = ResultsStore(tmp_path / "store").get(printed["run_id"])
    assert dict(record.spec.representation_config) == {"path": str(path)}
    assert 0.0 <= printed["dev_accuracy"] <= 1.0
    assert any((tmp_path / "cache").iterdir())  # the layers went through the feature cache
    before = representation_identity(record.spec)
    with registered(tmp_path / "toy-demo"):
        _toy_features(path, dim=5)  # other features in the same file
    assert representation_identity(record.spec) != before  # so the stored run is not reused


def test_docs_hdf5_walk_through_on_the_toy_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/representations.md's sentence writer (for the toy task) writes every distinct
    sequence once, and its run command parses to the hdf5 spec."""
    from experiments.cli import build_parser
    from experiments.cli.runs import train_specs
    from tasks.registry import get_task

    text = (REPO / "docs" / "representations.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "sequences(" in b]
    (command,) = re.findall(r"^python -m experiments (run .* --repr hdf5 .*)$", text, re.M)
    monkeypatch.chdir(tmp_path)
    with registered(tmp_path / "toy-demo"):
        exec(compile(block.replace('"sst5"', '"toy"'), "docs", "exec"), {"__name__": "docs"})
        recipe = get_task("toy").setup("mini", [], None)
        argv = shlex.split(command.replace("sst5", "toy"))
        (spec,) = train_specs(build_parser().parse_args([*argv, *cli_dirs(tmp_path)]))[0]
    sequences = recipe.sequences([e for split in recipe.splits.values() for e in split])
    lines = (tmp_path / "sst5-sentences.txt").read_text(encoding="utf-8").splitlines()
    assert lines == list(dict.fromkeys(" ".join(s) for s in sequences if s))
    assert (spec.representation, dict(spec.representation_config)) == (
        "hdf5",
        {"path": "toy.hdf5"},
    )


def test_finetune_bilm_passes_the_checks_before_any_run() -> None:
    """``--finetune-bilm`` is the harness's own key: the checks before a run accept it for ELMo
    (the builder never sees it) and still refuse a key the builder does not take."""
    from experiments.cli.errors import UsageError
    from experiments.cli.training import validate_specs
    from experiments.run.spec import RunSpec

    validate_specs([RunSpec(task="sst5", task_version=1, representation_config={"finetune": 1.0})])
    with pytest.raises(UsageError, match="bogus"):
        validate_specs([RunSpec(task="sst5", task_version=1, representation_config={"bogus": 1})])


def test_finetune_bilm_zero_turns_the_presets_fine_tuning_off(tmp_path: Path) -> None:
    """``run`` follows the preset's fine-tuning (``TaskSpec.finetune_presets``) for ELMo;
    ``--finetune-bilm`` sets the epochs, ``--finetune-bilm 0`` none (the run id of a run
    without fine-tuning)."""
    import dataclasses

    from experiments.cli import build_parser
    from experiments.cli.runs import train_specs
    from tasks import registry

    def spec(*argv: str) -> RunSpec:
        (one,) = train_specs(build_parser().parse_args(["run", "toy", *argv, *cli_dirs(tmp_path)]))[
            0
        ]
        return one

    with registered(tmp_path / "toy-demo"):
        plain = spec()
        task = registry.TASKS["toy"]
        registry.TASKS["toy"] = dataclasses.replace(task, finetune_presets=frozenset({"mini"}))
        try:
            tuned, off, two = spec(), spec("--finetune-bilm", "0"), spec("--finetune-bilm", "2")
        finally:
            registry.TASKS["toy"] = task
    assert "finetune" not in plain.representation_config
    assert tuned.representation_config["finetune"] == 1.0
    assert off.run_id == plain.run_id and two.representation_config["finetune"] == 2.0


def test_layer_norm_can_be_turned_on_and_off_against_the_tasks_mix(tmp_path: Path) -> None:
    """``--layer-norm`` / ``--no-layer-norm`` set the mix's layer norm either way; neither keeps
    the task's (the spec, and so the run id, of a run made before the option)."""
    from experiments.cli import build_parser
    from experiments.cli.runs import train_specs

    def spec(*argv: str) -> RunSpec:
        parsed = build_parser().parse_args(["run", "toy", *argv, *cli_dirs(tmp_path)])
        (one,) = train_specs(parsed)[0]
        return one

    with registered(tmp_path / "toy-demo"):
        plain, on, off = spec(), spec("--layer-norm"), spec("--no-layer-norm")
    assert (on.mix.layer_norm, off.mix.layer_norm) == (True, False)
    assert plain.run_id in {on.run_id, off.run_id}  # the task's own is one of the two
    assert on.run_id != off.run_id
