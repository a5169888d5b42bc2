"""Every committed table and plot is what HEAD renders from the committed records (issue #36;
``results/committed.toml``, :mod:`experiments.committed`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from experiments import committed
from experiments.cli import main

SQUAD = committed.Entry(
    "squad_baseline",
    ("render", "squad_baseline", "--store", "results/runs"),
    "results",
    "squad_baseline-mini-demo",
    "runs of result versions before #23",
)


@pytest.fixture(scope="module")
def report() -> committed.Report:
    return committed.check(main)


def test_every_committed_table_and_plot_is_what_head_renders(report: committed.Report) -> None:
    """Byte for byte, every entry of the manifest; no committed table or plot without one."""
    problems = report.problems()
    assert not problems, "\n".join(
        [*problems, "re-render: nox -s committed_results -- --render-only"]
    )


@pytest.mark.xfail(
    strict=True,
    reason="#36: the DEMO tables and the real-set NER rows rest on records of older result "
    "versions until they are retrained (nox -s committed_results; after #34)",
)
def test_no_committed_table_rests_on_stale_records(report: committed.Report) -> None:
    assert not report.stale, "\n".join(f"{n}: {why}" for n, why in report.stale.items())


def _copy_of_squad(root: Path) -> Path:
    copy = root / "repo"
    shutil.copytree(committed.REPO / "results/runs/squad", copy / "results/runs/squad")
    for folder in ("tables", "plots"):
        (copy / "results" / folder).mkdir(parents=True)
        for path in (committed.REPO / "results" / folder).glob(f"{SQUAD.stem}-*"):
            shutil.copyfile(path, copy / "results" / folder / path.name)
    return copy


def test_check_finds_a_changed_a_missing_and_an_orphan_file(tmp_path: Path) -> None:
    copy = _copy_of_squad(tmp_path)
    assert committed.check(main, copy, [SQUAD]).ok
    table = copy / "results/tables/squad_baseline-mini-demo-table1.md"
    table.write_text(table.read_text(encoding="utf-8").replace("±", "+-", 1), encoding="utf-8")
    (copy / "results/tables/squad_baseline-mini-demo-table1.csv").unlink()
    (copy / "results/plots/old-table-layer-weights.png").write_bytes(b"png")
    report = committed.check(main, copy, [SQUAD])
    assert report.differ == ("results/tables/squad_baseline-mini-demo-table1.md",)
    assert report.missing == ("results/tables/squad_baseline-mini-demo-table1.csv",)
    assert report.orphans == ("results/plots/old-table-layer-weights.png",)
    assert not report.ok


def test_write_restores_the_committed_files(tmp_path: Path) -> None:
    copy = _copy_of_squad(tmp_path)
    table = copy / "results/tables/squad_baseline-mini-demo-table1.md"
    before = table.read_bytes()
    table.write_text("edited", encoding="utf-8")
    committed.write(main, copy, [SQUAD])
    assert table.read_bytes() == before


def test_a_manifest_entry_needs_its_command_and_folder(tmp_path: Path) -> None:
    manifest = tmp_path / "committed.toml"
    manifest.write_text('[table1]\nargv = ["render", "table1"]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"committed.toml: \[table1\] needs argv and out"):
        committed.load(manifest)
    manifest.write_text('[t]\nargv = ["render", "table1"]\nout = "results"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="a stem for every command but peer"):
        committed.load(manifest)
    assert [e.name for e in committed.load()][:1] == ["table1"]
