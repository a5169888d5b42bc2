"""Official artifacts on the command line: --elmo (official files, checkpoint, published:NAME),
--glove, --cove; the paper preset defaults to the paper's files and never substitutes."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from experiments.cli import main
from experiments.cli.errors import UsageError
from experiments.cli.options import run_config, task_overrides
from experiments.plan.specs import preset_bilm
from experiments.run.store import ResultsStore
from tests.conftest import shared_path


def args(*argv: str) -> argparse.Namespace:
    ns = argparse.Namespace(
        elmo=None,
        glove=None,
        cove=None,
        turian=None,
        finetune_bilm=None,
        config="mini",
        overrides=[],
    )
    for key, value in zip(argv[::2], argv[1::2], strict=True):
        setattr(ns, key, value)
    return ns


def test_elmo_flag_forms() -> None:
    assert run_config(args()) == {}  # no biLM named: planning gives the preset's
    assert run_config(args("config", "paper")) == {}
    assert preset_bilm({}, "mini") == {}  # the shipped small biLM
    assert preset_bilm({"finetune": 1.0}, "paper") == {"published": "original", "finetune": 1.0}
    assert preset_bilm({}, "paper", shipped=True) == {}  # a set whose table runs the shipped one
    assert preset_bilm({"checkpoint": "c.pt"}, "paper") == {"checkpoint": "c.pt"}
    assert run_config(args("elmo", ["published:small"])) == {"published": "small"}
    assert run_config(args("elmo", ["o.json", "w.hdf5"])) == {
        "options": "o.json",
        "weights": "w.hdf5",
    }
    assert run_config(args("elmo", ["my.safetensors"])) == {"checkpoint": "my.safetensors"}
    assert run_config(args("elmo", ["o.json", "w.hdf5"]), "bilm-random") == {"options": "o.json"}
    assert run_config(args("glove", "g.txt"), "glove") == {"path": "g.txt"}
    assert run_config(args("glove", "g.txt", "cove", "c.pth"), "cove") == {
        "weights": "c.pth",
        "glove_path": "g.txt",
    }
    with pytest.raises(UsageError, match="--cove WEIGHTS.pth"):
        run_config(args("glove", "g.txt"), "cove")
    assert task_overrides(args("glove", "g.txt")) == ["word_vectors=g.txt"]


def test_one_epoch_on_the_demo_with_official_fixture_files(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    options = shared_path("fixtures", "elmo", "options.json")
    weights = shared_path("fixtures", "elmo", "lm_weights.hdf5")
    argv = [
        "run",
        "squad",
        "--elmo",
        str(options),
        str(weights),
        "--limit",
        "16",
        "--quiet",
        "--store",
        str(tmp_path / "s"),
        "--work",
        str(tmp_path / "w"),
        "--cache",
        str(tmp_path / "c"),
        "--out",
        str(tmp_path / "o"),
        "--set",
        "word_vectors=random:4",
        "hidden=4",
        "char_filters=4",
        "train.epochs=1",
    ]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["epochs_run"] == 1.0 and 0.0 <= result["dev_f1"] <= 1.0
    (record,) = ResultsStore(tmp_path / "s").records("squad")
    assert record.spec.representation_config == {"options": str(options), "weights": str(weights)}


def test_paper_preset_refuses_to_run_without_glove_840b(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from tasks.squad.demo import ensure_demo

    argv = [
        "run",
        "squad",
        "--config",
        "paper",
        "--data",
        str(ensure_demo()),
        "--quiet",
        "--store",
        str(tmp_path / "s"),
        "--work",
        str(tmp_path / "w"),
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "--glove PATH/glove.840B.300d.txt" in err and "glove.840B.300d.zip" in err
    assert not ResultsStore(tmp_path / "s").records()
