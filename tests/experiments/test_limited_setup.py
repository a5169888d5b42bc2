"""A run's ``--limit`` reaches the task's reader (``setup_data`` builds the recipe through
``TaskSpec.build_recipe``): a streaming reader stops after the first examples, so a malformed line
far below them does not stop the run, and the run's splits are those a full read cut to the limit
gives; a task without ``setup_limited`` reads everything and is cut as before."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from experiments.plan.specs import base_spec, baseline
from experiments.run.resolve import resolve
from experiments.run.setup import setup_data
from experiments.run.spec import RunSpec
from tasks.common.io import DataError
from tasks.registry import get_task


def limited(data: Path, limit: int | None, task: str = "sst5") -> RunSpec:
    """The task's ``mini`` baseline on ``data`` with ``--limit``."""
    spec = baseline(base_spec(get_task(task), "mini", str(data), {}, ()))
    return dataclasses.replace(spec, limit=limit, eval_splits=("dev", "test"))


def test_a_streaming_reader_gets_the_limit_and_gives_the_same_first_examples(
    tmp_path: Path,
) -> None:
    good, bad = tmp_path / "good", tmp_path / "bad"
    shutil.copytree(get_task("sst5").demo(), good)
    shutil.copytree(good, bad)
    with (bad / "train.txt").open("a", encoding="utf-8") as handle:
        handle.write("(3 (2 unbalanced\n")
    full = setup_data(resolve(limited(good, 3)), 0.5).splits
    assert {s: len(v) for s, v in full.items()} == {"train": 3, "dev": 3, "test": 3}
    assert setup_data(resolve(limited(bad, 3)), 0.5).splits == full  # stops before the tail
    with pytest.raises(DataError):
        setup_data(resolve(limited(bad, None)), 0.5)


def test_a_task_without_a_limited_setup_is_cut_after_a_full_read(tmp_path: Path) -> None:
    task = get_task("ner")
    assert task.setup_limited is None
    data = tmp_path / "data"
    shutil.copytree(task.demo(), data)
    run = setup_data(resolve(limited(data, 4, "ner")), 0.5)
    full = task.setup("mini", [], str(data)).splits
    assert run.splits == {s: list(full[s])[:4] for s in run.splits}
    assert len(run.recipe.splits["train"]) == len(full["train"])  # every sentence was read


def test_predict_rebuilds_a_streamed_run_as_it_was_trained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A streamed run's vocabulary holds the words it read, which sizes its embedding: the
    rebuilt model of ``predict`` reads the data as the run did, so the weights fit it and the
    run's own dev sentences get the labels it wrote."""
    from experiments.cli import main
    from experiments.run.store import ResultsStore
    from tasks.sst5.data import iter_trees
    from tests.experiments.helpers import cli_dirs

    tiny = ["encoder_hidden=8", "integrator_hidden=8", "pre_encode_dim=8", "output_dims=[8,8]"]
    argv = ["run", "sst5", "--repr", "none", "--limit", "6", "--max-epochs", "1", "--set", *tiny]
    assert main([*argv, *cli_dirs(tmp_path)]) == 0  # GloVe vectors: the reader streams
    (run_id,) = ResultsStore(tmp_path / "store").run_ids("sst5")
    trees = list(iter_trees(get_task("sst5").demo() / "dev.txt"))[:6]
    source = tmp_path / "sentences.txt"
    source.write_text("".join(" ".join(tree.tokens) + "\n" for tree in trees), encoding="utf-8")
    out = tmp_path / "labels.txt"
    where = ["--store", str(tmp_path / "store"), "--work", str(tmp_path / "work")]
    where += ["--cache", str(tmp_path / "cache"), "--device", "cpu"]
    argv = ["predict", run_id, "--input", str(source), "--format", "tokenized", "--out", str(out)]
    capsys.readouterr()
    assert main([*argv, *where]) == 0, capsys.readouterr().err
    written = tmp_path / "store" / "sst5" / run_id / "predictions-dev.txt"
    assert out.read_text().splitlines() == written.read_text().splitlines()
