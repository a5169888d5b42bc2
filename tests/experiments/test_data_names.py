"""Registered data sets by name (``experiments/plan/specs.py``): ``run TASK --data NAME`` builds
the spec the set tables build for the set (so a run and a table share their records), a set of
another task is one line naming its task, every other ``--data`` value reads as before, tables
refuse a name, and ``data list`` / ``run --help`` name every set."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from experiments.cli import build_parser, main, runs, sweep
from experiments.cli.errors import UsageError
from experiments.cli.options import task_data
from experiments.cli.tables import _tables
from experiments.data.real_sets import RealSet, real_sets
from experiments.plan.specs import DataChoice, PlanError, data_choice
from experiments.report.reproductions import expected_specs
from experiments.run.spec import RunSpec
from tasks.registry import TASKS, get_task
from tests.conftest import REPO
from tests.experiments.helpers import cli_dirs


def _spec(*argv: str) -> RunSpec:
    """The first spec ``run``/``sweep ARGV`` would train (nothing runs)."""
    command = runs if argv[0] == "run" else sweep
    specs, _ = command.train_specs(build_parser().parse_args(list(argv)))
    return specs[0]


def _set(name: str) -> RealSet:
    (item,) = [s for s in real_sets() if s.name == name]
    return item


# ------------------------------------------------------------------------------ resolution
def test_a_name_brings_its_label_changes_and_scored_splits() -> None:
    spec = _spec("run", "ner", "--data", "conll2000-chunking", "--seeds", "0")
    assert spec.data == "shared:dev/conll2000"
    assert spec.overrides == ("dev_from_train=1000",)  # no official dev split
    assert spec.eval_splits == ("dev", "test")  # scored on test
    coref = _spec("run", "coref", "--data", "litbank-coref", "--seeds", "0")
    assert (coref.data, coref.overrides, coref.eval_splits) == (
        "shared:real/litbank-coref",
        ("train.epochs=5",),
        ("dev",),  # the test documents are held back
    )
    for preset in ("mini", "paper"):
        for item in real_sets():
            spec = _spec("run", item.task, "--data", item.name, "--config", preset, "--seeds", "0")
            assert spec.data == item.data, item.name
            assert spec.overrides == tuple(sorted(item.changes(preset))), (item.name, preset)
            assert spec.eval_splits == item.eval_splits, item.name


def test_every_name_is_the_spec_its_set_table_builds() -> None:
    """``run TASK --data NAME`` trains a run of ``reproduce real`` (or ``paper-data``) in
    either preset: its id is among the table's."""
    parser = build_parser()
    for preset in ("mini", "paper"):
        ids = {}
        for table in ("real", "paper-data"):
            (built,) = _tables(parser.parse_args(["render", table, "--config", preset]))
            ids[table] = {s.run_id for s in expected_specs(built)}
        for item in real_sets():
            spec = _spec("run", item.task, "--data", item.name, "--config", preset, "--seeds", "0")
            table = "paper-data" if item.family == "paper" else "real"
            assert spec.run_id in ids[table], (item.name, preset)


def test_the_users_set_comes_after_the_sets_changes() -> None:
    assert DataChoice("x", ("a=1", "b=2")).overrides(["b=3", "c=4"]) == ["a=1", "b=3", "c=4"]
    spec = _spec(
        "run", "ner", "--data", "conll2000-chunking", "--set", "hidden=8", "dev_from_train=500"
    )
    assert spec.overrides == ("dev_from_train=500", "hidden=8")  # the user's value wins
    paper = _spec("run", "ner", "--data", "conll2003", "--config", "paper")
    assert paper.overrides == ("train.epochs=25",)  # the paper preset's own cap
    capped = _spec(
        "run", "ner", "--data", "conll2003", "--config", "paper", "--set", "train.epochs=2"
    )
    assert capped.overrides == ("train.epochs=2",)
    assert _spec("run", "ner", "--data", "conll2003").overrides == ()  # mini: none
    sst = _spec("run", "sst5", "--data", "sst", "--set", "hidden=8")
    assert sst.overrides == tuple(sorted([*_set("sst").changes("mini"), "hidden=8"]))


def test_eval_split_given_replaces_the_sets() -> None:
    dev = _spec("run", "ner", "--data", "conll2000-chunking", "--eval-split", "dev")
    assert dev.eval_splits == ("dev",) and dev.overrides == ("dev_from_train=1000",)
    test = _spec("run", "ner", "--data", "litbank-entities", "--eval-split", "test")
    assert test.eval_splits == ("dev", "test")


def test_a_sweeps_table_is_on_the_sets_split(tmp_path: Path) -> None:
    args = build_parser().parse_args(["sweep", "sst5", "--data", "sentence-polarity"])
    specs, group = sweep.train_specs(args)
    assert sweep.table_split(args, specs) == "test"
    assert group.startswith("sweep-sst5-sentence-polarity-")
    args = build_parser().parse_args(["sweep", "sst5", "--data", "demo"])
    assert sweep.table_split(args, sweep.train_specs(args)[0]) == "dev"


# ------------------------------------------------------------------------------ the rule
def test_a_set_of_another_task_is_one_line_naming_its_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("run", "sweep"):
        argv = [command, "sst5", "--data", "conll2000-chunking", "--seeds", "0"]
        assert main([*argv, *cli_dirs(tmp_path)]) == 2
        assert capsys.readouterr().err == (
            "error: --data conll2000-chunking is read by the ner task (biLSTM-CRF): "
            "run ner --data conll2000-chunking\n"
        )
    with pytest.raises(PlanError, match=r"read by the sst5 task \(BCN\): run sst5 --data sst$"):
        data_choice("sst", get_task("ner"), "mini")
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize(
    "value",
    ["demo", "hf:eriktks/conll2003", "shared:dev/conll2000", "./conll2000-chunking", "my-data"],
)
def test_folders_demo_hf_and_shared_read_as_before(value: str) -> None:
    spec = _spec("run", "ner", "--data", value, "--seeds", "0")
    assert (spec.data, spec.overrides, spec.eval_splits) == (value, (), ("dev",))
    assert task_data(value) == value == task_data(value, sets=True)
    assert data_choice(value, get_task("ner"), "mini") == DataChoice(value)


def test_a_bare_name_is_the_set_even_beside_a_folder_of_that_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "conll2000-chunking").mkdir()
    assert _spec("run", "ner", "--data", "conll2000-chunking").data == "shared:dev/conll2000"
    assert "the folder conll2000-chunking here is --data ./conll2000-chunking" in (
        capsys.readouterr().err
    )
    assert _spec("run", "ner", "--data", "./conll2000-chunking").data == "./conll2000-chunking"
    # a per-task TOML file keeps a name as the set's, joins a folder to its own folder
    toml = tmp_path / "sub" / "data.toml"
    toml.parent.mkdir()
    toml.write_text('[data]\nner = "conll2000-chunking"\nsst5 = "polarity"\n', encoding="utf-8")
    assert task_data(str(toml), sets=True) == {
        "ner": "conll2000-chunking",
        "sst5": str(tmp_path / "sub" / "polarity"),
    }
    assert _spec("run", "ner", "--data", str(toml)).data == "shared:dev/conll2000"
    inline = _spec("run", "ner", "--data", "ner=conll2000-chunking,sst5=demo")
    assert inline.data == "shared:dev/conll2000" and inline.eval_splits == ("dev", "test")


def test_tables_refuse_a_name_and_say_where_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(UsageError, match=r"run ner --data conll2000-chunking\); compare or"):
        task_data("conll2000-chunking")
    with pytest.raises(UsageError, match=r"--data sst5=sst: .*reproduce paper-data has a row"):
        task_data("ner=demo,sst5=sst")
    assert main(["compare", "--repr", "hf", "--data", "sst", *cli_dirs(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --data sst: ") and err.count("\n") == 1, err
    assert not (tmp_path / "store").exists()


# ------------------------------------------------------------------------------ discovery
def test_data_list_names_every_set_with_its_model_split_family_and_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ELMO_BENCH_SHARED", str(tmp_path))
    present = _set("sentence-polarity")
    (tmp_path / "data" / present.folder).mkdir(parents=True)
    assert main(["data", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for task in TASKS:
        (heading,) = [i for i, line in enumerate(lines) if line.startswith(f"{task} (")]
        own = [s for s in real_sets() if s.task == task]
        if not own:
            assert "no registered set" in lines[heading]
        for offset, item in enumerate(own, 1):
            line = lines[heading + offset]  # below its task's line, in registry order
            family = "paper: the paper's own data" if item.family == "paper" else "real"
            assert line.startswith(
                f"  {item.name}: {item.label}; scored on {item.split}; family {family}; "
            ), line
            if item.name == present.name:
                assert line.endswith(f"present ({tmp_path / 'data' / item.folder})")
            else:
                assert "missing: " in line and (f"--sets {item.name}" in line or "put it" in line)
                assert "present" not in line
    assert (
        f"missing: python -m experiments real-data fetch --out {tmp_path / 'data'} "
        "--sets conll2000-chunking"
    ) in "\n".join(lines)
    assert "--sets conll2003 --accept-terms conll2003" in "\n".join(lines)  # Reuters' terms
    assert sum(line.startswith("  ") for line in lines) == len(real_sets())


def test_run_and_sweep_help_list_the_names_per_task(capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("run", "sweep"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        for task in TASKS:
            names = [
                s.name + (" (paper's)" if s.family == "paper" else "")
                for s in real_sets()
                if s.task == task
            ]
            if names:
                assert f"{task}: {', '.join(names)}" in text, task
    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    assert "conll2000-chunking" not in capsys.readouterr().out  # tables take no names


# ------------------------------------------------------------------------------ identity
#: Committed records of ``reproduce real`` (mini, seed 0, ELMo) that a name must reproduce.
COMMITTED = [
    ("ner", "conll2000-chunking", "21a1c46fe6be"),
    ("ner", "litbank-entities", "e668cf9de7fe"),
    ("sst5", "sentence-polarity", "c60fd52fd500"),
    ("coref", "litbank-coref", "9e5237d5ba21"),
]


@pytest.mark.parametrize(("task", "name", "run_id"), COMMITTED)
def test_a_name_keeps_the_id_of_the_sets_committed_record(
    task: str, name: str, run_id: str
) -> None:
    spec = _spec("run", task, "--data", name, "--config", "mini", "--seed", "0")
    assert spec.run_id == run_id
    folder = REPO / "results" / "real" / "runs" / task / run_id
    stored = json.loads((folder / "spec.json").read_text(encoding="utf-8"))
    assert stored["data"] == _set(name).data and stored["seed"] == 0
    assert RunSpec.from_dict(stored) == spec
    # the id depends on what the name brings: a bare folder label would be another run
    item = _set(name)
    if item.overrides or item.split == "test":
        bare = dataclasses.replace(spec, overrides=(), eval_splits=("dev",))
        assert bare.run_id != run_id


def test_the_task_docs_give_every_set_its_run_command() -> None:
    text = (REPO / "docs" / "tasks.md").read_text(encoding="utf-8")
    for item in real_sets():
        assert f"python -m experiments run {item.task} --data {item.name} --seeds 0" in text
        mark = " ‡" if item.family == "paper" else ""
        assert f"`{item.name}`{mark}" in text, item.name  # in its task's row


def test_peer_takes_a_set_by_name_and_refuses_another_task_s(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["peer", "--task", "sst5", "--data", "conll2003"]) == 2
    err = capsys.readouterr().err
    assert "--data conll2003 is read by the ner task: peer --task ner --data conll2003" in err
