"""SQuAD through the task protocol: recipe pieces, the presets' context cut, the character
vocabulary and the official predictions file (the shared properties, learning included, are in
tests/contract/test_tasks.py)."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest

from tasks.common.vocab import UNK
from tasks.registry import get_task
from tasks.representations import Layers
from tasks.squad.data import SquadExample
from tasks.squad.task import TASK, VERSION, question_char_vocabulary, setup

TINY = ("word_vectors=random:4", "hidden=4", "char_filters=4")


@pytest.fixture(scope="module")
def recipe():  # type: ignore[no-untyped-def]
    return setup("mini", TINY, None)


def test_written_predictions_are_the_official_json(recipe, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dev = recipe.splits["dev"]
    predictions = {ex.qid: ex.context_tokens[0] for ex in dev}  # a poor but valid guess
    path = recipe.write_predictions(predictions, dev, tmp_path / "predictions-dev")
    assert path.suffix == ".json" and json.loads(path.read_text()) == predictions


def test_spans_beyond_the_cut_context_give_no_loss(recipe) -> None:  # type: ignore[no-untyped-def]
    cut = recipe.config.max_context_tokens
    far = [ex for ex in recipe.splits["dev"] if ex.span is not None and ex.span[1] >= cut]
    near = [ex for ex in recipe.splits["dev"] if ex.span is not None and ex.span[1] < cut]
    assert (
        recipe.collate(near[:2], lambda seqs: Layers.empty([len(x) for x in seqs])).spans
        is not None
    )
    if far:  # a dev answer the cut removes: no gold spans for that batch (scoring needs none)
        assert (
            recipe.collate(
                [near[0], far[0]], lambda seqs: Layers.empty([len(x) for x in seqs])
            ).spans
            is None
        )
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
    # document-qa: no doc_size_th for SQuAD
    assert TASK.configure("paper", ()).max_context_tokens is None
    assert TASK.configure("mini", ()).max_context_tokens == 200
    paper = setup("paper", ("word_vectors=random:4",), None)
    assert paper.truncated == 0 and len(paper.splits["train"]) == len(recipe.splits["train"])
    long = _long(paper.splits["dev"][0], 900)
    assert paper.size(long) == 900 and len(paper.sequences([long])[0]) == 900
    assert (
        paper.collate(
            [long], lambda seqs: Layers.empty([len(x) for x in seqs])
        ).context_words.shape[1]
        == 900
    )
    assert recipe.size(long) == 200  # mini still cuts


def test_char_vocabulary_cut_off_in_setup() -> None:
    paper, mini = TASK.configure("paper", ()), TASK.configure("mini", ())
    assert paper.char_min_count == mini.char_min_count == 49
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
