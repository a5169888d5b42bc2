"""SQuAD through the task protocol: recipe pieces, the official scorer, and a learning test."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections import Counter
from pathlib import Path

import pytest

from experiments.runner import RunOptions, train
from experiments.spec import RunSpec
from tasks.common.vocab import UNK
from tasks.registry import get_task
from tasks.squad.config import preset
from tasks.squad.data import SquadExample
from tasks.squad.evaluate import evaluate_files
from tasks.squad.task import VERSION, question_char_vocabulary, setup

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


def _long(ex: SquadExample, n: int) -> SquadExample:
    """``ex`` with its context repeated up to ``n`` tokens (offsets repeated along)."""
    reps = -(-n // len(ex.context_tokens))
    return dataclasses.replace(
        ex,
        context_tokens=(ex.context_tokens * reps)[:n],
        context_offsets=(ex.context_offsets * reps)[:n],
    )


def test_paper_preset_keeps_whole_paragraphs(recipe) -> None:  # type: ignore[no-untyped-def]
    assert preset("paper").max_context_tokens is None  # document-qa: no doc_size_th for SQuAD
    assert preset("mini").max_context_tokens == 200
    paper = setup("paper", ("word_vectors=random:4",), None)
    assert paper.truncated == 0 and len(paper.splits["train"]) == len(recipe.splits["train"])
    long = _long(paper.splits["dev"][0], 900)
    assert paper.size(long) == 900 and len(paper.sequences([long])[0]) == 900
    assert paper.collate([long], lambda seqs: None).context_words.shape[1] == 900
    assert recipe.size(long) == 200  # mini still cuts


def test_char_vocabulary_cut_off_in_setup() -> None:
    assert preset("paper").char_min_count == preset("mini").char_min_count == 49
    cut = setup("mini", (*TINY, "char_min_count=100"), None)
    counts: Counter[str] = Counter()
    for ex in cut.splits["train"]:  # training questions only, the context once per question
        for tok in (*ex.context_tokens, *ex.question_tokens):
            counts.update(tok)
    assert set(cut.chars) == {c for c, n in counts.items() if n >= 100}
    rare = sorted(c for c, n in counts.items() if n < 100)
    assert rare  # the demo set has characters seen fewer than 100 times...
    assert cut.ids.char_ids(rare[0] + "a")[:2] == [UNK, cut.chars["a"]]  # ...they are unknown


def test_char_vocabulary_counts_per_question() -> None:
    @dataclasses.dataclass
    class Ex:
        context_tokens: tuple[str, ...]
        question_tokens: tuple[str, ...]

    paragraph = ("ab", "b")
    train = [Ex(paragraph, ("c",)), Ex(paragraph, ("cd",))]
    vocab = question_char_vocabulary(train, lambda ex: ex.context_tokens, 2)  # type: ignore[arg-type]
    # a: 2 (the paragraph once per question), b: 4, c: 2, d: 1 (below the cut-off)
    assert vocab == {"a": 2, "b": 3, "c": 4}
    assert question_char_vocabulary(train, lambda ex: ex.context_tokens, 3) == {"b": 2}  # type: ignore[arg-type]


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
