"""Props writers and the ``python -m tasks.srl.evaluate`` command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.common.conll2012 import read_sentences
from tasks.srl.data import read_srl
from tasks.srl.evaluate import (
    gold_columns,
    main,
    predicted_columns,
    write_gold_props,
    write_predicted_props,
)
from tasks.srl.metric import evaluate_props_files, write_props
from tests.conftest import shared_path
from tests.tasks.helpers import run_module

SRL_DIR = ("fixtures", "formats", "structured_prediction", "srl", "conll_2012")
COREF = ("fixtures", "formats", "coref", "coref.gold_conll")


def _gold_predictions(path: Path) -> dict[tuple[int, int], tuple[str, ...]]:
    return {(i.sentence_id, i.predicate_index): i.tags for i in read_srl(path)}


@pytest.mark.shared
def test_gold_through_the_prediction_path_scores_100(tmp_path: Path) -> None:
    root = shared_path(*SRL_DIR)
    write_gold_props(root, tmp_path / "gold.props")
    write_predicted_props(root, _gold_predictions(root), tmp_path / "pred.props")
    assert (tmp_path / "gold.props").read_text() == (tmp_path / "pred.props").read_text()
    result = evaluate_props_files(tmp_path / "gold.props", tmp_path / "pred.props")
    # hand count of the non-V arguments: 4 + 4 + 0 + 7 (subdomain) + 7 (subdomain2)
    assert result.overall.correct == 22 and result.overall.excess == result.overall.missed == 0
    assert result.excluded["V"].correct == 8
    assert result.num_sentences == 5 and result.num_propositions == 8


@pytest.mark.shared
def test_continuations_survive_bio_and_are_merged(tmp_path: Path) -> None:
    path = shared_path(*COREF)
    predictions = _gold_predictions(path)
    write_gold_props(path, tmp_path / "gold.props")
    # drop the C-ARG1 piece of "known": ARG1 becomes continuous, so the merged ARG1 is lost
    key = next(k for k, tags in predictions.items() if "B-C-ARG1" in tags)
    predictions[key] = tuple("O" if t == "B-C-ARG1" else t for t in predictions[key])
    write_predicted_props(path, predictions, tmp_path / "pred.props")
    result = evaluate_props_files(tmp_path / "gold.props", tmp_path / "pred.props")
    assert result.overall.excess == 1 and result.overall.missed == 1
    assert result.per_type["ARG1"].missed == 1


@pytest.mark.shared
def test_missing_and_unknown_predictions(tmp_path: Path) -> None:
    root = shared_path(*SRL_DIR)
    predictions = _gold_predictions(root)
    del predictions[(0, 3)]  # "say": ARG0 + ARG1 become missed
    write_predicted_props(root, predictions, tmp_path / "pred.props")
    write_gold_props(root, tmp_path / "gold.props")
    result = evaluate_props_files(tmp_path / "gold.props", tmp_path / "pred.props")
    assert (result.overall.correct, result.overall.missed) == (20, 2)
    with pytest.raises(ValueError, match="match no predicate"):
        list(predicted_columns(read_sentences(root), {(0, 0): ("O",) * 11}))
    with pytest.raises(ValueError, match="tags"):
        list(predicted_columns(read_sentences(root), {(0, 3): ("O",)}))


@pytest.mark.shared
def test_cli_on_props_files_and_on_conll_gold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = shared_path(*SRL_DIR)
    gold, pred = tmp_path / "gold.props", tmp_path / "pred.props"
    write_props(gold, gold_columns(read_sentences(root)))
    predictions = _gold_predictions(root)
    predictions[(1, 2)] = ("O",) * 2 + ("B-V",) + ("O",) * 10  # "rested": 4 arguments missed
    write_predicted_props(root, predictions, pred)
    assert main([str(gold), str(pred)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["recall"] == pytest.approx(100 * 18 / 22)
    assert report["precision"] == 100.0
    assert report["per_type"]["ARGM-TMP"]["missed"] == 2
    assert "V" not in report["per_type"] and report["excluded"]["V"]["correct"] == 8
    assert main(["--conll-gold", str(root), str(pred)]) == 0
    assert json.loads(capsys.readouterr().out)["f1"] == pytest.approx(report["f1"])


def test_cli_reports_malformed_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.props"
    bad.write_text("v (A0*\n", encoding="utf-8")
    assert main([str(bad), str(bad)]) == 1
    assert "bad.props:1" in capsys.readouterr().err


def test_module_runs_as_script(tmp_path: Path) -> None:
    props = tmp_path / "p.props"
    props.write_text("- (A0*)\nrun (V*)\n\n", encoding="utf-8")
    stdout = run_module("tasks.srl.evaluate", str(props), str(props))
    assert json.loads(stdout)["overall"]["correct"] == 1
