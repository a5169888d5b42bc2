"""The real sets registry (``experiments/data/real_sets.toml``) and ``--data real`` tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.cli.errors import UsageError
from experiments.cli.training import validate_specs
from experiments.data import real_sets
from experiments.plan.specs import base_spec
from experiments.report import reproductions
from experiments.report.render import paper_comparable
from tasks import registry
from tasks.registry import get_task


def test_registry_names_registered_tasks_splits_and_distinct_folders() -> None:
    sets = real_sets.real_sets()
    assert {s.task for s in sets} <= set(registry.TASKS)
    assert len({s.folder for s in sets}) == len(sets) == len({s.name for s in sets})
    for item in sets:
        assert item.data == f"shared:{item.folder}"
        assert item.eval_splits == (("dev", "test") if item.split == "test" else ("dev",))
    assert [s.task for s in real_sets.real_sets(["ner"])] == ["ner"] * sum(
        s.task == "ner" for s in sets
    )


def test_bad_registry_entries_name_their_section(tmp_path: Path) -> None:
    path = tmp_path / "sets.toml"
    path.write_text('[a]\ntask = "coref"\nlabel = "A"\nsplit = "dev"\n')
    with pytest.raises(ValueError, match=r"\[a\] lacks 'folder'"):
        real_sets.real_sets(path=path)
    path.write_text('[b]\ntask = "nope"\nlabel = "B"\nfolder = "x"\nsplit = "dev"\n')
    with pytest.raises(ValueError, match=r"\[b\] task 'nope'"):
        real_sets.real_sets(path=path)


def test_data_labels_resolve_against_the_shared_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ELMO_BENCH_SHARED", str(tmp_path))
    assert real_sets.shared_data_root() == tmp_path / "data"
    assert real_sets.data_path("demo") is None
    assert real_sets.data_path("shared:real/x") == str(tmp_path / "data" / "real" / "x")
    assert real_sets.data_path("/my/folder") == "/my/folder"
    sets = real_sets.real_sets()
    assert len(real_sets.missing_sets(sets)) == len(sets)
    (tmp_path / "data" / sets[0].folder).mkdir(parents=True)
    assert str(tmp_path / "data" / sets[0].folder) not in real_sets.missing_sets(sets)


def test_real_tables_have_a_row_per_set_on_its_folder_and_split() -> None:
    sets = real_sets.real_sets(family="real")
    assert len(sets) < len(real_sets.real_sets())  # the paper's own sets make no --data real row
    table = reproductions.compare_table(("hf", {}), ("elmo", {}), "mini", "real", (0, 1), {})
    assert [row.base.data for row in table.rows] == [s.data for s in sets]
    for row, item in zip(table.rows, sets, strict=True):
        assert row.base.task == item.task and row.split == item.split
        assert row.base.eval_splits == item.eval_splits
        assert row.base.overrides[: len(item.overrides)] == item.overrides
        assert row.metric.key.startswith(f"{item.split}_") and item.label in row.label
        assert not paper_comparable(table, row)[0]
    assert table.paper_split is None
    caption = " ".join(table.caption)
    assert all(s.reference in caption for s in sets)
    (t1,) = reproductions.tables("table1", "mini", "real", (0,), {}, tasks=["coref"])
    coref_sets = [s for s in sets if s.task == "coref"]
    assert len(t1.rows) == len(coref_sets) * len(registry.TASKS["coref"].table_rows)


def test_the_paper_data_table_has_a_row_per_paper_set_with_its_preset_changes() -> None:
    sets = real_sets.real_sets(family="paper")
    assert {s.name for s in sets} == {"conll2003", "sst"}
    (table,) = reproductions.tables("paper-data", "paper", "demo", (0, 1, 2), {})
    assert [row.base.data for row in table.rows] == [s.data for s in sets]
    assert [c.label for c in table.columns][:2] == ["Baseline", "ELMo"]
    assert all(c.versus == "Baseline" for c in table.columns[1:])  # type: ignore[union-attr]
    for row, item in zip(table.rows, sets, strict=True):
        assert row.base.preset == "paper" and row.base.eval_splits == ("dev", "test")
        assert sorted(row.base.overrides) == sorted(item.changes("paper"))
        assert row.metric.key.startswith("test_")
    caption = " ".join(table.caption)
    assert "90.15" in caption and "89.91" in caption and "train.epochs=25" in caption
    (mini,) = reproductions.tables("paper-data", "mini", "demo", (0,), {})
    ner = next(r for r in mini.rows if r.base.task == "ner")
    assert "train.epochs=25" not in ner.base.overrides  # the cap is the paper preset's


def test_real_is_refused_for_one_run_and_missing_folders_are_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = base_spec(get_task("sst5"), "mini", "real", {})
    with pytest.raises(UsageError, match="shared:FOLDER"):
        validate_specs([base])
    monkeypatch.setenv("ELMO_BENCH_SHARED", str(tmp_path))
    shared = base_spec(get_task("sst5"), "mini", "shared:dev/sentence_polarity", {})
    with pytest.raises(UsageError, match="ELMO_BENCH_SHARED") as caught:
        validate_specs([shared])
    assert str(tmp_path / "data" / "dev" / "sentence_polarity") in str(caught.value)
    assert f"real-data fetch --out {tmp_path / 'data'}" in str(caught.value)  # how to get it


def test_compare_real_without_shared_exits_2_naming_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from experiments.__main__ import main

    monkeypatch.setenv("ELMO_BENCH_SHARED", str(tmp_path))
    args = ["compare", "--repr", "bilm-random", "--data", "real", "--tasks", "sst5"]
    assert main([*args, "--store", str(tmp_path / "s"), "--seeds", "0", "--quiet"]) == 2
    assert "sentence_polarity" in capsys.readouterr().err


def test_reproduce_real_shares_its_runs_with_compare_and_dynamic() -> None:
    """``reproduce real``: baseline, ELMo (tested against it), the random-weight biLM and
    MiniLM (tested against ELMo), 3 seeds per set; its MiniLM and ELMo runs are exactly those
    of ``compare --repr hf --data real`` and ``reproduce dynamic --data real`` (one set of
    runs serves all three tables)."""
    (table,) = reproductions.tables("real", "mini", "demo", None, {})
    assert table.seeds == (0, 1, 2) and table.paper_split is None
    assert [c.label for c in table.columns] == [
        "Baseline",
        "ELMo",
        "biLM, random weights",
        "all-MiniLM-L6-v2 (hf)",
    ]
    assert [c.versus for c in table.columns] == [None, "Baseline", "ELMo", "ELMo"]
    assert all(c.paper_key is None for c in table.columns)
    compare = reproductions.compare_table(("hf", {}), ("elmo", {}), "mini", "real", (0, 1, 2), {})
    (dynamic,) = reproductions.tables("dynamic", "mini", "real", (0, 1, 2), {})
    ours = {s.run_id for s in reproductions.expected_specs(table)}
    assert {s.run_id for s in reproductions.expected_specs(compare)} <= ours
    static = dynamic.columns[0]
    assert {s.run_id for r in dynamic.rows for s in dynamic.expected(r, static)} <= ours
    with pytest.raises(ValueError, match="real sets"):
        reproductions.tables("real", "mini", "/my/data", None, {})


def test_wall_time_lines_give_medians_and_the_machine() -> None:
    from types import SimpleNamespace

    (table,) = reproductions.tables("real", "mini", "demo", (0, 1, 2), {}, tasks=["sst5"])
    row, elmo = table.rows[0], table.columns[1]
    records = [
        SimpleNamespace(
            run_id=spec.run_id,
            timings={"wall_s": wall},
            provenance=SimpleNamespace(cpu="AMD EPYC (AVX2)", device="cpu, 1 thread"),
        )
        for spec, wall in zip(table.expected(row, elmo), (100.0, 300.0, 200.0), strict=True)
    ]
    (line,) = reproductions.wall_time_lines(table, records)
    assert "AMD EPYC (AVX2), cpu, 1 thread" in line
    assert "dev/sentence_polarity: ELMo 200" in line


def test_records_name_shared_files_and_the_home_folder_portably(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ELMO_BENCH_SHARED", str(tmp_path / "shared"))
    root = tmp_path / "shared" / "data"
    source = f"{root}/real/propbank-srl/train/**/*gold_conll, {Path.home()}/mine/dev.txt"
    assert real_sets.portable_source(source) == (
        "shared:real/propbank-srl/train/**/*gold_conll, ~/mine/dev.txt"
    )
    # a Hub name, a relative path and a folder beside the root (not below it) stay as they are
    beside = f"{tmp_path}/shared/database/x.txt"
    assert real_sets.portable_source(f"glue/sst2, data/x.txt, {beside}") == (
        f"glue/sst2, data/x.txt, {beside}"
    )


def test_committed_records_name_no_machine_folder() -> None:
    # read-stats.json sources once held the absolute path of the machine that ran them
    repo = Path(__file__).resolve().parents[2]
    for path in (repo / "results").rglob("read-stats.json"):
        text = path.read_text(encoding="utf-8")
        assert '"source": "/' not in text, path


def test_a_named_table_leaves_out_the_sets_it_names_and_says_why(tmp_path: Path) -> None:
    sets = real_sets.real_sets(family="real")
    out = [s for s in sets if s.left_out_reason("adapt") is not None]
    assert [s.name for s in out] == ["litbank-coref"]  # fine-tuning over whole documents
    (adapt,) = reproductions.tables("adapt", "mini", "real", (0, 1, 2), {})
    assert [row.base.data for row in adapt.rows] == [s.data for s in sets if s not in out]
    caption = " ".join(adapt.caption)
    assert f"Left out: {out[0].label} (litbank-coref): a fine-tuned or LoRA encoder" in caption
    (directions,) = reproductions.tables("directions", "mini", "real", (0, 1, 2), {})
    assert [row.base.data for row in directions.rows] == [s.data for s in sets]
    assert "Left out" not in " ".join(directions.caption)
    with pytest.raises(KeyError, match="no real set of coref has a row in adapt"):
        reproductions.tables("adapt", "mini", "real", (0,), {}, tasks=["coref"])
    path = tmp_path / "sets.toml"
    entry = '[a]\ntask = "coref"\nlabel = "A"\nfolder = "x"\nsplit = "dev"\n'
    path.write_text(entry + 'left_out_of = "adapt"\n')
    with pytest.raises(ValueError, match=r"\[a\] left_out_of is not a table of reasons"):
        real_sets.real_sets(path=path)
    path.write_text(entry + 'left_out_of = { adapt = "" }\n')
    with pytest.raises(ValueError, match=r"\[a\] left_out_of: each table needs a reason"):
        real_sets.real_sets(path=path)
    path.write_text(entry + 'family = "other"\n')
    with pytest.raises(ValueError, match=r"\[a\] family 'other'"):
        real_sets.real_sets(path=path)
    path.write_text(entry + 'preset_overrides = { paper = "train.epochs=2" }\n')
    with pytest.raises(ValueError, match=r"\[a\] preset_overrides is not preset = \[changes\]"):
        real_sets.real_sets(path=path)
