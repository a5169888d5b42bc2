"""SQuAD through the task protocol: recipe pieces, the presets' context cut, the character
vocabulary and the official predictions file (the shared properties, learning included, are in
tests/contract/test_tasks.py)."""

from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from collections import Counter
from pathlib import Path

import pytest
import torch

from tasks.common.vocab import UNK
from tasks.registry import get_task
from tasks.representations import Layers
from tasks.squad import task as squad_task
from tasks.squad.data import CONTEXT_CUT, SquadExample
from tasks.squad.model import attention_bytes, longest_fitting_context
from tasks.squad.task import TASK, VERSION, ContextTooLong, question_char_vocabulary, setup

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


# --- contexts cut at max_context_tokens, contexts too long for the memory ----------------------


def _long_dev(folder: Path, extra_words: int) -> tuple[Path, str]:
    """The DEMO set in ``folder`` with ``extra_words`` words appended to the first dev
    paragraph (its answers keep their offsets); returns the folder and a question id of it."""
    folder.mkdir()
    demo = TASK.demo()
    shutil.copy(demo / "train-v1.1.json", folder / "train-v1.1.json")
    dev = json.loads((demo / "dev-v1.1.json").read_text(encoding="utf-8"))
    paragraph = dev["data"][0]["paragraphs"][0]
    paragraph["context"] += " and so on" * (extra_words // 3)
    (folder / "dev-v1.1.json").write_text(json.dumps(dev), encoding="utf-8")
    return folder, paragraph["qas"][0]["id"]


def test_cut_dev_contexts_are_reported_at_set_up_and_stored_with_the_read_stats(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder, qid = _long_dev(tmp_path / "data", 3000)
    with caplog.at_level(logging.WARNING, logger="tasks.squad.task"):
        recipe = setup("mini", TINY, str(folder))
    dev = recipe.read_stats["dev"]
    n = dev.skipped[CONTEXT_CUT]
    longest = max(len(ex.context_tokens) for ex in recipe.splits["dev"])
    assert n == sum(len(ex.context_tokens) > 200 for ex in recipe.splits["dev"]) >= 1
    words = f"{n} of 250 contexts truncated to 200 tokens (max {longest:,}, question "
    assert longest > 3000 and words in dev.as_dict()["variant"]  # what read-stats.json stores
    assert dev.skipped_share() == 0.0 and CONTEXT_CUT not in recipe.read_stats["train"].skipped
    (line,) = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert line.startswith(f"squad dev: {words}") and "--set max_context_tokens=N" in line


def test_a_context_too_long_for_the_memory_is_refused_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from experiments.run.resolve import resolve
    from experiments.run.setup import RunOptions, set_up
    from experiments.run.spec import RunSpec

    folder, _ = _long_dev(tmp_path / "data", 3000)
    monkeypatch.setattr(squad_task, "available_memory", lambda device: 10**9)  # 1 GB
    overrides = (*TINY, "max_context_tokens=null")
    spec = RunSpec(task="squad", task_version=VERSION, representation="none", sites=(),
                   dropout=0.0, overrides=overrides, data=str(folder))  # fmt: skip
    options = RunOptions(work_root=tmp_path / "w", device="cpu", progress=False)
    with pytest.raises(ContextTooLong) as info:
        set_up(resolve(spec), options)
    message = str(info.value)
    dev = [ex for ex in setup("paper", overrides, str(folder)).splits["dev"]]
    longest = max(dev, key=lambda ex: len(ex.context_tokens))
    n = len(longest.context_tokens)
    batch = 250 % 32  # the size-sorted evaluation plan: the longest context ends the last batch
    need = attention_bytes(batch, n, training=False)
    fits = longest_fitting_context(batch, 10**9, training=False)
    assert message.startswith(f"{folder / 'dev-v1.1.json'}: question {longest.qid!r} has a ")
    assert f"context of {n:,} tokens: an evaluation batch of {batch} padded to it" in message
    assert f"needs at least {need / 1e9:,.1f} GB (5 × {batch} × {n:,}² × 4 bytes" in message
    assert "more than the 1.0 GB available on cpu" in message
    assert f"--set max_context_tokens=N (at most {fits:,} fits this batch)" in message
    assert not (tmp_path / "w").exists()  # refused before the run's work folder was made
    monkeypatch.setattr(squad_task, "available_memory", lambda device: None)  # unknown: no check
    setup("mini", TINY, str(folder)).check_fits({"dev": dev}, torch.device("cpu"))


def test_available_memory_of_the_cpu_is_the_machines_available_ram() -> None:
    available = squad_task.available_memory(torch.device("cpu"))
    assert available is not None and 0 < available
    assert squad_task.available_memory(torch.device("meta")) is None


def test_shared_paragraphs_collate_each_paragraph_once(recipe) -> None:  # type: ignore[no-untyped-def]
    by_paragraph: dict[str, list[SquadExample]] = {}
    for ex in recipe.splits["train"]:
        by_paragraph.setdefault(ex.context, []).append(ex)
    a, b = [qs for qs in by_paragraph.values() if len(qs) >= 2][:2]
    chunk = [a[0], b[0], a[1], b[1]]
    seen: list[int] = []

    def represent(seqs):  # type: ignore[no-untyped-def]
        seen.append(len(seqs))
        return Layers.empty([len(x) for x in seqs])

    config = dataclasses.replace(recipe.config, shared_paragraphs=True)
    shared = dataclasses.replace(recipe, config=config)
    batch = shared.collate(chunk, represent)
    plain = recipe.collate(chunk, represent)
    assert batch.context_index is not None and batch.context_index.tolist() == [0, 1, 0, 1]
    assert plain.context_index is None and seen == [2, 4, 4, 4]  # contexts, questions; twice
    assert torch.equal(batch.context_words[batch.context_index], plain.context_words)
    assert torch.equal(batch.context_mask[batch.context_index], plain.context_mask)
    assert batch.spans is not None and torch.equal(batch.spans, plain.spans)
