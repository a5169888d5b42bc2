"""SQuAD through the task protocol: recipe pieces, the official scorer, and a learning test."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest

from experiments.runner import RunOptions, train
from experiments.spec import RunSpec
from tasks.registry import get_task
from tasks.squad.evaluate import evaluate_files
from tasks.squad.task import VERSION, setup

TINY = ("word_vectors=random:4", "hidden=4", "char_filters=4")


@pytest.fixture(scope="module")
def recipe():  # type: ignore[no-untyped-def]
    return setup("mini", TINY, None)


def test_training_scores_with_the_official_evaluator(recipe, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dev = recipe.splits["dev"]
    predictions = {ex.qid: ex.context_tokens[0] for ex in dev}  # a poor but valid guess
    path = recipe.write_predictions(predictions, dev, tmp_path / "predictions-dev")
    assert json.loads(path.read_text()) == predictions
    ours = recipe.score(predictions, dev)
    official = evaluate_files(get_task("squad").demo() / "dev-v1.1.json", path)
    assert ours["f1"] * 100 == pytest.approx(official["f1"], abs=1e-9)
    assert ours["exact_match"] * 100 == pytest.approx(official["exact_match"], abs=1e-9)


def test_spans_beyond_the_cut_context_give_no_loss(recipe) -> None:  # type: ignore[no-untyped-def]
    cut = recipe.config.max_context_tokens
    far = [ex for ex in recipe.splits["dev"] if ex.span is not None and ex.span[1] >= cut]
    near = [ex for ex in recipe.splits["dev"] if ex.span is not None and ex.span[1] < cut]
    assert recipe.collate(near[:2], lambda seqs: None).spans is not None
    if far:  # a dev answer the cut removes: no gold spans for that batch (scoring needs none)
        assert recipe.collate([near[0], far[0]], lambda seqs: None).spans is None
    assert recipe.size(near[0]) == min(cut, len(near[0].context_tokens))


def test_presets_and_task_spec_are_consistent() -> None:
    task = get_task("squad")
    assert task.version == VERSION and task.presets == ("mini", "paper")
    assert task.table_rows[0].metric == task.metric
    with pytest.raises(ValueError, match="no preset 'huge'; choose mini, paper"):
        task.check_preset("huge")


def test_learns_on_a_few_hundred_demo_examples() -> None:
    """300 demo questions, 6 short epochs (about 45 s on 2 cores): the training loss falls and
    dev F1 beats the best fixed-position answer (the same span for every question)."""
    spec = RunSpec(
        task="squad",
        task_version=VERSION,
        representation="none",
        sites=(),
        dropout=0.0,
        limit=300,
        seed=0,
        overrides=("hidden=16", "char_filters=16", "train.epochs=6", "train.optimizer.lr=0.005"),
    )
    with tempfile.TemporaryDirectory() as work:
        outcome = train(spec, RunOptions(work_root=Path(work), progress=False))
    recipe = setup("mini", ("word_vectors=random:4",), None)
    dev = recipe.splits["dev"][:300]
    fixed = 0.0
    for first in range(30):
        for last in range(first, first + 5):
            guess = {
                ex.qid: ex.span_text(
                    min(first, len(ex.context_tokens) - 1), min(last, len(ex.context_tokens) - 1)
                )
                for ex in dev
            }
            fixed = max(fixed, recipe.score(guess, dev)["f1"])
    losses = [r["train_loss"] for r in outcome.log]
    assert losses[-1] < 0.8 * losses[0]
    assert outcome.metrics["dev_f1"] > 1.5 * fixed, (outcome.metrics, fixed)
