"""``python -m experiments report``, ``probes`` and ``neighbours`` (experiments/cli/analyses.py):
options, defaults and a whole command each (the probes on the DEMO, Table 4 on a tiny corpus)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from experiments.cli.analyses import (
    REPORT_OUT,
    configure_neighbours,
    configure_probes,
    configure_report,
    run_neighbours,
    run_probes,
    run_report,
)
from experiments.cli.options import DEFAULT_STORE
from tests.experiments.test_neighbours import CORPUS, TABLE
from tests.experiments.test_report import collect


# ---------------------------------------------------------------------------------- probes
def probe_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configure_probes(parser)
    return parser.parse_args(list(argv))


def test_probes_on_demo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = run_probes(
        probe_args(
            "--reprs",
            "elmo,cove",
            "--max-sentences",
            "12",
            "--steps",
            "5",
            "--quiet",
            "--json",
            "--out",
            str(out),
        )
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "cove: skipped" in printed
    assert "DEMO layer probes" in printed and "most frequent sense" in printed
    report = json.loads((out / "probes.json").read_text(encoding="utf-8"))
    assert report["demo"] is True
    assert [(r["representation"], r["layer"]) for r in report["results"]] == [
        ("elmo", 0),
        ("elmo", 1),
        ("elmo", 2),
    ]
    assert all(
        0 <= r["pos_accuracy"] <= 1 and 0 <= r["wsd_accuracy"] <= 1 for r in report["results"]
    )
    assert (out / "probes.png").stat().st_size > 0


def test_probes_without_representation(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    wsd = tmp_path / "wsd.jsonl"
    wsd.write_text('{"tokens": ["a"], "index": 0, "sense": "s", "split": "train"}\n')
    assert run_probes(probe_args("--reprs", "cove", "--wsd-data", str(wsd))) == 1
    assert "cove: skipped" in capsys.readouterr().out


# ------------------------------------------------------------------------------ neighbours
def test_neighbours_prints_table_4(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    glove = tmp_path / "glove.txt"
    glove.write_text(
        "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in TABLE.items()), encoding="utf-8"
    )
    parser = argparse.ArgumentParser()
    configure_neighbours(parser)
    args = parser.parse_args(
        ["play", "--corpus", str(corpus), "--glove", str(glove), "--k", "2", "--quiet"]
    )
    assert run_neighbours(args) == 0
    printed = capsys.readouterr().out
    assert f"GloVe ({glove}): plays, they" in printed
    assert "biLM (elmo, layer 2, 4 sentences" in printed
    assert printed.count("source     ") == 2 and "**play**" in printed


# ---------------------------------------------------------------------------------- report
def test_report_options_and_an_empty_store(tmp_path: Path) -> None:
    """The command's options and defaults; an empty store gives a page that says so."""
    parser = argparse.ArgumentParser()
    configure_report(parser)
    defaults = parser.parse_args([])
    assert (defaults.store, defaults.out) == (DEFAULT_STORE, REPORT_OUT)
    out = tmp_path / "r.html"
    args = parser.parse_args(
        ["--store", str(tmp_path / "none"), "--out", str(out), "--seeds", "0,1", "--data", "demo"]
    )
    assert args.seeds == (0, 1) and args.eval_split is None
    assert run_report(args) == 0
    page = collect(out.read_text(encoding="utf-8"))
    assert "holds no runs" in " ".join(page.text) and not page.images
