"""Named reproductions read each task's defaults from its TaskSpec."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from experiments.plan.specs import base_spec
from experiments.report import reproductions
from tasks import registry
from tasks.registry import get_task
from tests.experiments import toy_task


def test_seeds_and_elmo_dropout_come_from_the_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    task = dataclasses.replace(toy_task.make_task(tmp_path), elmo_dropout=0.1, seeds=5)
    monkeypatch.setitem(registry.TASKS, task.name, task)
    assert reproductions.default_seeds("toy_elmo") == (0, 1, 2, 3, 4)
    assert base_spec(get_task("toy"), "mini", "demo", {}).dropout == 0.1
    plain = dataclasses.replace(task, elmo_dropout=0.5, seeds=3)
    monkeypatch.setitem(registry.TASKS, task.name, plain)
    assert reproductions.default_seeds("toy_baseline") == (0, 1, 2)
    assert base_spec(get_task("toy"), "mini", "demo", {}).dropout == 0.5


def test_task_spec_checks_its_defaults(tmp_path: Path) -> None:
    task = toy_task.make_task(tmp_path)
    with pytest.raises(ValueError, match="elmo_dropout"):
        dataclasses.replace(task, elmo_dropout=1.0)
    with pytest.raises(ValueError, match="seeds"):
        dataclasses.replace(task, seeds=0)


def test_cove_reproduction_columns_and_paper_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``<task>_cove``: CoVe last layer and λ = 1 beside ELMo; without weights the CoVe
    columns are left out and the caption says which files to pass."""
    task = toy_task.make_task(tmp_path)
    monkeypatch.setitem(registry.TASKS, task.name, task)
    cove = {"weights": "w.pth", "glove_path": "g.txt"}
    (table,) = reproductions.tables("toy_cove", "mini", "demo", (0, 1), {}, cove_config=cove)
    labels = [c.label for c in table.columns]
    assert labels == ["Baseline", "CoVe, last layer", "CoVe, λ=1", "ELMo", "Increase"]
    specs = reproductions.expected_specs(table)
    coves = [s for s in specs if s.representation == "cove"]
    assert len(specs) == 8 and len(coves) == 4  # 4 run columns × 2 seeds
    assert {(s.mix.mode, s.mix.lam) for s in coves} == {("last", 0.0), ("all", 1.0)}
    assert all(s.representation_config == cove and s.sites == ("input",) for s in coves)
    assert table.paper_split is None  # the toy task has no CoVe numbers in paper.toml
    (bare,) = reproductions.tables("toy_cove", "mini", "demo", (0,), {})
    assert [c.label for c in bare.columns] == ["Baseline", "ELMo", "Increase"]
    assert bare.caption[-1] == reproductions.COVE_MISSING


def test_cove_paper_numbers_carry_their_split() -> None:
    from experiments.report.render import load_paper

    cove = load_paper()["cove"]
    assert {task: cove[task]["split"] for task in ("sst5", "snli", "srl")} == {
        "sst5": "test",
        "snli": "dev",
        "srl": "dev",
    }


def test_whole_tables_take_their_rows_seeds_and_splits_from_the_tasks() -> None:
    """table1: every task, each with its own seeds (NER and SST-5: 5) and split (SQuAD dev,
    the others test); table2 / cove: the tasks of the paper's table; --tasks restricts."""
    assert reproductions.table_tasks("table1") == list(registry.TASKS)
    assert reproductions.table_tasks("table2") == ["squad", "snli", "srl"]
    assert reproductions.table_tasks("cove") == ["snli", "srl", "sst5"]
    assert reproductions.table_tasks("table1", ["ner", "squad"]) == ["squad", "ner"]
    with pytest.raises(KeyError, match="unknown task"):
        reproductions.table_tasks("table1", ["nope"])
    with pytest.raises(KeyError, match="one task"):
        reproductions.table_tasks("squad_elmo", ["squad"])
    (t1,) = reproductions.tables("table1", "mini", "demo", None, {}, tasks=["squad", "ner"])
    by_task = {row.base.task: row for row in t1.rows}
    assert by_task["squad"].seeds == tuple(range(registry.TASKS["squad"].seeds))
    assert by_task["ner"].seeds == (0, 1, 2, 3, 4)
    assert by_task["squad"].split == "dev" and by_task["ner"].split == "test"
    assert by_task["ner"].base.eval_splits == ("dev", "test")
    assert by_task["ner"].metric.key == "test_f1" and by_task["ner"].label.startswith(
        "NER (F1; test)"
    )
    assert "(dev: squad; test: ner; preset mini)" in t1.title
    assert "0, 1, 2, 3, 4 (5 per cell: ner)" in " ".join(t1.caption)
    (one,) = reproductions.tables("table1", "mini", "demo", (0,), {}, tasks=["squad", "ner"])
    assert {row.seeds for row in one.rows} == {(0,)}
    (t2,) = reproductions.tables("table2", "mini", "demo", None, {})
    assert {row.base.task for row in t2.rows} == {"squad", "snli", "srl"}
    assert {c.versus for c in t2.columns if hasattr(c, "versus")} == {None, "Baseline"}
    (cove,) = reproductions.tables("cove", "mini", "demo", (0,), {}, cove_config={"weights": "w"})
    splits = {row.base.task: row.split for row in cove.rows}
    assert splits == {"snli": "dev", "srl": "dev", "sst5": "test"}


def test_sample_efficiency_table_is_figure_1() -> None:
    table = reproductions.sample_efficiency_table("mini", "demo", (0,), {})
    assert [(r.base.task, r.base.train_fraction) for r in table.rows] == [
        (task, fraction) for task in ("snli", "srl") for fraction in (0.001, 0.01, 0.1, None)
    ]
    assert [(c.label, c.versus) for c in table.columns] == [
        ("Baseline", None),
        ("ELMo", "Baseline"),
    ]
    assert "0.1 % of train" in table.rows[0].label and table.split == "dev"
    specs = reproductions.expected_specs(table)
    assert len(specs) == 16 and {s.representation for s in specs} == {"none", "elmo"}
    with pytest.raises(ValueError, match="fractions"):
        reproductions.sample_efficiency_table("mini", "demo", (0,), {}, fractions=(0.0,))


def test_row_seeds_are_each_task_s_own_count(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every table's rows take their seed count from the task (SNLI: 5 runs in the paper, as
    its TaskSpec says); nothing in ``named`` fixes a count per task."""
    for name in ("table1", "table2", "table3", "cove"):
        (table,) = reproductions.tables(name, "mini", "demo", None, {})
        for row in table.rows:
            assert row.seeds == tuple(range(registry.TASKS[row.base.task].seeds)), (name, row)
    for seeds in (5, 2):
        snli = dataclasses.replace(registry.TASKS["snli"], seeds=seeds)
        monkeypatch.setitem(registry.TASKS, "snli", snli)
        (t2,) = reproductions.tables("table2", "mini", "demo", None, {})
        assert {r.seeds for r in t2.rows if r.base.task == "snli"} == {tuple(range(seeds))}
        assert f"({seeds} per cell" in " ".join(t2.caption)
        assert reproductions.default_seeds("snli_elmo") == tuple(range(seeds))
        specs = reproductions.expected_specs(
            reproductions.tables("snli_elmo", "mini", "demo", None, {})[0]
        )
        assert sorted({s.seed for s in specs}) == list(range(seeds))


def test_dynamic_table_tests_per_token_weights_against_each_tasks_static_mix() -> None:
    """``reproduce dynamic``: every task on Table 1's split, the task's own λ and sites (so the
    static column is Table 1's ELMo column); the dynamic column differs from it in the mix mode
    only and is tested against it."""
    (table,) = reproductions.tables("dynamic", "mini", "demo", (0, 1), {})
    assert [row.base.task for row in table.rows] == list(registry.TASKS)
    assert table.paper_split is None
    assert [row.metric.key.split("_")[0] for row in table.rows] == [
        registry.TASKS[row.base.task].table_split for row in table.rows
    ]
    static, dynamic = table.columns
    assert dynamic.versus == static.label and static.paper_key is dynamic.paper_key is None
    for row in table.rows:
        (a, _), (b, _) = table.expected(row, static), table.expected(row, dynamic)
        assert a.mix.mode == "all" and b.mix.mode == "dynamic"
        assert dataclasses.replace(b, mix=a.mix) == a  # nothing else differs
        assert a.mix.lam == registry.TASKS[row.base.task].default_mix.lam


def test_bilm_table_tests_warm_carry_and_fine_tuning_against_reset() -> None:
    """``reproduce bilm``: every task on Table 1's split; the reset column is Table 1's ELMo
    run (so it is reused), warm and carry differ from it in the state policy only, the
    fine-tuned column in its biLM configuration only; each is tested against reset."""
    config = {"checkpoint": "lm.pt"}
    (table,) = reproductions.tables("bilm", "mini", "demo", (0, 1), config)
    (t1,) = reproductions.tables("table1", "mini", "demo", (0, 1), config)
    assert [row.base.task for row in table.rows] == list(registry.TASKS)
    reset, warm, carry, tuned = table.columns
    assert [c.versus for c in table.columns] == [None, reset.label, reset.label, reset.label]
    elmo = next(c for c in t1.columns if getattr(c, "label", "") == "ELMo")
    for row in table.rows:
        (base, _) = table.expected(row, reset)
        assert base.state == "reset" and "finetune" not in base.representation_config
        t1_row = next(r for r in t1.rows if r.base.task == row.base.task)
        assert base.run_id == t1.expected(t1_row, elmo)[0].run_id
        for column, state in ((warm, "warm"), (carry, "carry")):
            (spec, _) = table.expected(row, column)
            assert dataclasses.replace(spec, state="reset") == base and spec.state == state
        (spec, _) = table.expected(row, tuned)
        assert spec.representation_config == {**config, "finetune": 1.0}
        assert dataclasses.replace(spec, representation_config=config) == base
    assert any(line.startswith("Fine-tuned biLM: the biLM first") for line in table.caption)
    assert not any("not fine-tuned on the task's text" in line for line in table.caption)


def test_paper_preset_fine_tunes_the_biLM_where_the_paper_did() -> None:
    """Paper A.1: the paper preset's ELMo runs fine-tune the biLM on the task's text for the
    tasks declared so (``TaskSpec.finetune_presets``), unless ``finetune`` is given (``0``: no
    fine-tuning); mini never does by default; the caption names which tasks did."""
    tuned = {n for n, t in registry.TASKS.items() if t.finetune_for("paper")}
    assert tuned == {"squad", "snli", "ner", "sst5"}
    for name in registry.TASKS:
        paper = base_spec(get_task(name), "paper", "demo", {"checkpoint": "x"})
        want = {"checkpoint": "x", "finetune": 1.0} if name in tuned else {"checkpoint": "x"}
        assert paper.representation_config == want, name
        off = base_spec(get_task(name), "paper", "demo", {"checkpoint": "x", "finetune": 0.0})
        assert off.representation_config == {"checkpoint": "x"}, name
        assert "finetune" not in base_spec(get_task(name), "mini", "demo", {}).representation_config
        two = base_spec(get_task(name), "mini", "demo", {"finetune": 2.0})
        assert two.representation_config == {"finetune": 2.0}
    line = reproductions.finetune_line(
        [base_spec(get_task(n), "paper", "demo", {}) for n in registry.TASKS]
    )
    assert "squad, snli" in line and "not fine-tuned: srl, coref" in line


def test_tables_name_the_representation_and_the_data_they_compare() -> None:
    """A column names the model (``all-MiniLM-L6-v2 (hf)``, a factory by its name),
    a row the data set whenever it is not the bundled DEMO set."""
    from experiments.report.reproductions import data_name
    from tasks.representations import representation_label

    assert representation_label("hf") == "all-MiniLM-L6-v2 (hf)"
    assert representation_label("hf", {"model": "/m/bert-base-cased", "revision": "v1"}) == (
        "bert-base-cased@v1 (hf)"
    )
    assert representation_label("pkg.reps:MyRep") == "MyRep (pkg.reps)"
    assert representation_label("hdf5", {"path": "/x/feats.hdf5"}) == "feats.hdf5 (hdf5)"
    assert representation_label("bilm-random") == "biLM, random weights"
    assert data_name("demo") is None
    assert data_name("/data/subj") == "subj"
    assert data_name("hf:SetFit/subj") == "SetFit/subj"
    assert data_name("shared:dev/sentence_polarity") == "Sentence polarity (BCN, 2 classes)"
    base = base_spec(get_task("sst5"), "mini", "demo", {}, ())
    (demo,) = reproductions.rows("sst5", base, "test")
    assert demo.label == "SST-5 (accuracy) — DEMO data"
    (row,) = reproductions.rows("sst5", dataclasses.replace(base, data="/data/subj"), "test")
    assert row.label == "SST-5 task model on subj (accuracy)"


def test_adapt_table_tests_each_mode_against_the_same_representation_frozen() -> None:
    """``reproduce adapt``: ELMo's frozen column is Table 1's ELMo run (reused); each trained
    column differs from its representation's frozen one by ``adapt`` alone, and is tested
    against it; MiniLM's columns likewise."""
    config = {"checkpoint": "lm.pt"}
    (table,) = reproductions.tables("adapt", "mini", "demo", (0, 1), config)
    (t1,) = reproductions.tables("table1", "mini", "demo", (0, 1), config)
    assert [row.base.task for row in table.rows] == list(registry.TASKS)
    elmo = next(c for c in t1.columns if getattr(c, "label", "") == "ELMo")
    columns = table.columns
    assert len(columns) == 6
    for frozen, tuned, lora in (columns[:3], columns[3:]):
        assert frozen.versus is None and tuned.versus == lora.versus == frozen.label
        for row in table.rows:
            (base, _) = table.expected(row, frozen)
            assert "adapt" not in base.representation_config
            for column, mode in ((tuned, "finetune"), (lora, "lora")):
                (spec, _) = table.expected(row, column)
                assert spec.representation_config == {**base.representation_config, "adapt": mode}
                plain = dataclasses.replace(spec, representation_config=base.representation_config)
                assert plain == base
    row = table.rows[0]
    t1_row = next(r for r in t1.rows if r.base.task == row.base.task)
    assert table.expected(row, columns[0])[0].run_id == t1.expected(t1_row, elmo)[0].run_id
    assert table.expected(row, columns[3])[0].representation == "hf"


def test_directions_table_tests_each_direction_against_both() -> None:
    config = {"checkpoint": "lm.pt"}
    (table,) = reproductions.tables("directions", "mini", "demo", (0,), config)
    both, forward, backward = table.columns
    assert (forward.versus, backward.versus) == (both.label, both.label)
    for row in table.rows:
        (base,) = table.expected(row, both)
        assert base.representation_config == config
        for column, direction in ((forward, "forward"), (backward, "backward")):
            (spec,) = table.expected(row, column)
            assert spec.representation_config == {**config, "directions": direction}
