"""The conlleval-compatible command line and the writer of its input files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.ner.data import Conll2003Reader, convert
from tasks.ner.evaluate import main, write_conlleval
from tests.conftest import shared_path
from tests.tasks.helpers import run_cli, run_module

CONLLEVAL_INPUT = (
    "-DOCSTART- -X- -X- O O\n"
    "\n"
    "EU NNP I-NP I-ORG I-ORG\n"
    "rejects VBZ I-VP O O\n"
    "German JJ I-NP I-MISC I-MISC\n"
    "call NN I-NP O O\n"
    "\n"
    "Peter NNP I-NP I-PER I-PER\n"
    "Blackburn NNP I-NP I-PER O\n"
)


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict, str]:
    return run_cli(main, argv, capsys)


def test_cli_reports_conlleval_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "out.txt"
    path.write_text(CONLLEVAL_INPUT)
    status, report, _ = run_main([str(path)], capsys)
    assert status == 0
    # gold: ORG, MISC, PER; predicted: ORG, MISC, PER(Peter only) -> 2 correct of 3 and 3.
    assert report["precision"] == pytest.approx(200 / 3)
    assert report["recall"] == pytest.approx(200 / 3)
    assert report["f1"] == pytest.approx(200 / 3)
    assert report["accuracy"] == pytest.approx(100 * 5 / 6)  # -DOCSTART- is a boundary
    assert report["per_type"]["PER"] == {
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "gold": 1,
        "predicted": 1,
        "correct": 0,
    }
    status, report, _ = run_main(["--docstart-token", str(path)], capsys)
    assert report["accuracy"] == pytest.approx(100 * 6 / 7)  # conlleval counts it as a token
    assert report["f1"] == pytest.approx(200 / 3)


def test_cli_reads_stdin_and_options() -> None:
    raw_input = "a PER PER\nb PER O\n\nc LOC LOC\n"
    report = json.loads(run_module("tasks.ner.evaluate", "-r", "-", stdin=raw_input))
    assert (report["gold_chunks"], report["predicted_chunks"], report["correct_chunks"]) == (
        3,
        2,
        2,
    )
    assert report["precision"] == 100.0


def test_cli_delimiter(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "out.txt"
    path.write_text("New York\tB-LOC\tB-LOC\nis\tO\tO\n")  # token with a space: use -d '\t'
    status, report, _ = run_main(["-d", "\t", str(path)], capsys)
    assert status == 0 and report["f1"] == 100.0 and report["tokens"] == 2
    status, _, error = run_main([str(path)], capsys)  # whitespace split: 4 then 3 fields
    assert status == 1 and f"{path}:2" in error


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        ("a O O\nb O\n", 2, "number of fields"),
        ("O\n", 1, "at least 2"),
        ("a O O\n\xff\n", 2, "UTF-8"),
        ("", None, "empty"),
    ],
)
def test_cli_errors_are_located(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, line: int | None, reason: str
) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(content.encode("latin-1"))
    status, _, error = run_main([str(path)], capsys)
    where = f"{path}:{line}" if line is not None else str(path)
    assert status == 1 and where in error and reason in error


def test_writer_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "gold.txt"
    source.write_text(
        "-DOCSTART- -X- -X- O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\n\n"
        "Paris NNP I-NP I-LOC\nLondon NNP I-NP B-LOC\nand CC O O\nBonn NNP I-NP I-LOC\n"
    )
    examples = list(Conll2003Reader(source, scheme="BIOUL"))
    predictions = [list(e.ner_tags) for e in examples]
    predictions[1][3] = "O"  # miss Bonn
    out = tmp_path / "pred.txt"
    assert write_conlleval(out, examples, predictions, scheme="BIOUL") == 2
    lines = out.read_text().splitlines()
    assert lines[:3] == ["EU NNP I-NP I-ORG I-ORG", "rejects VBZ I-VP O O", ""]
    assert lines[4] == "London NNP I-NP B-LOC B-LOC"  # BIOUL converted back to IOB1
    status, report, _ = run_main([str(out)], capsys)
    assert status == 0
    assert (report["gold_chunks"], report["predicted_chunks"], report["correct_chunks"]) == (
        4,
        3,
        3,
    )
    assert report["accuracy"] == pytest.approx(100 * 5 / 6)
    with pytest.raises(ValueError):
        write_conlleval(out, examples, predictions[:1], scheme="BIOUL")
    with pytest.raises(ValueError):
        write_conlleval(out, examples, [["O"], ["O"]], scheme="BIOUL")


@pytest.mark.shared
def test_writer_on_real_format_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    examples = list(Conll2003Reader(shared_path("fixtures", "formats", "tagging", "conll2003.txt")))
    predictions = [convert(e.ner_tags, "IOB1", "IOB1") for e in examples]
    out = tmp_path / "pred.txt"
    write_conlleval(out, examples, predictions)
    status, report, _ = run_main([str(out)], capsys)
    assert status == 0 and report["f1"] == 100.0 and report["gold_chunks"] == 6
