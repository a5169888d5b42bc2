"""``benchmarks/bench_tasks.py``: the synthetic data have the sizes it claims, the phase shares
add up, and ``--quick`` runs one small task end to end (the figures are not checked, only that
each is measured)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from benchmarks import bench_tasks
from tasks.common.spans import tags_to_spans
from tasks.common.synthetic_text import spans as synthetic_spans
from tasks.common.vocab import TokenIds, pad_labels
from tasks.core import TrainConfig
from tasks.coref import synthetic as coref_synthetic
from tasks.ner import synthetic as ner_synthetic
from tasks.squad import synthetic as squad_synthetic

WORDS = {w: i + 2 for i, w in enumerate(["alpha", "beta", "gamma", "delta", "of", "the"])}


def _recipe(batch_size: int = 4, batching: str = "examples", **extra: object) -> SimpleNamespace:
    """What the synthetic builders read of a recipe: vocabulary, labels, batching."""
    config = TrainConfig(batching=batching, batch_size=batch_size)  # type: ignore[arg-type]
    return SimpleNamespace(words=WORDS, train_config=config, **extra)


def test_squad_examples_have_paragraph_sizes_and_consistent_spans() -> None:
    splits = bench_tasks.synthetic_splits("squad", _recipe(), batches=3)
    low, high = squad_synthetic.CONTEXT
    assert len(splits["train"]) == len(splits["dev"]) == 12
    for ex in splits["train"]:
        assert low <= len(ex.context_tokens) <= high
        assert all(
            ex.context[s:e] == t
            for t, (s, e) in zip(ex.context_tokens, ex.context_offsets, strict=True)
        )
        assert ex.span_text(*ex.span) == ex.answers[0].text
        assert ex.context[ex.answers[0].start :].startswith(ex.answers[0].text)


def test_ner_tags_encode_whole_entities_in_the_recipes_scheme() -> None:
    recipe = _recipe(labels=["O", "B-PER", "I-PER", "L-PER", "U-PER"], encoding="BIOUL")
    splits = bench_tasks.synthetic_splits("ner", recipe, batches=5, seed=3)
    low, high = ner_synthetic.SENTENCE
    spans = 0
    for ex in splits["train"] + splits["dev"]:
        assert low <= len(ex.tokens) <= high and len(ex.tags) == len(ex.tokens)
        spans += len(tags_to_spans(ex.tags, "BIOUL"))
    assert spans > 0


def test_coref_documents_hold_about_400_tokens_in_clusters_of_three() -> None:
    recipe = _recipe(batch_size=1, batching="document")
    splits = bench_tasks.synthetic_splits("coref", recipe, batches=2)
    assert len(splits["train"]) == len(splits["dev"]) == 2
    for doc in splits["train"]:
        assert len(doc.sentences) == coref_synthetic.SENTENCES
        assert 300 <= doc.num_tokens <= 500
        assert all(len(cluster) >= 3 for cluster in doc.clusters)
        mentions = sorted(m for cluster in doc.clusters for m in cluster)
        assert all(a[1] < b[0] for a, b in zip(mentions, mentions[1:], strict=False))  # no overlaps


def test_the_data_are_a_function_of_the_seed() -> None:
    recipe = _recipe(labels=("0", "1", "2", "3", "4"))
    first = bench_tasks.synthetic_splits("sst5", recipe, batches=2, seed=1)
    assert first == bench_tasks.synthetic_splits("sst5", recipe, batches=2, seed=1)
    assert first != bench_tasks.synthetic_splits("sst5", recipe, batches=2, seed=2)


def test_spans_never_overlap() -> None:
    rng = random.Random(0)
    for _ in range(50):
        spans = synthetic_spans(rng, 12, 6, 3, lambda: "X")
        assert all(a.end < b.start for a, b in zip(spans, spans[1:], strict=False))
        assert all(0 <= s.start <= s.end < 12 for s in spans)


def test_a_task_without_synthetic_data_or_a_preset_is_listed_as_not_timed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--list`` prints every setting of the registered tasks; a task that declares no
    synthetic data (the toy task of ``tests/experiments/toy_task.py``) and a preset a task lacks
    are named, not measured."""
    from tests.experiments.toy_task import registered

    with registered(tmp_path / "toy"):
        bench_tasks.main(["--list", "--tasks", "all", "--device", "cpu"])
    out = capsys.readouterr().out
    assert "squad paper live cpu" in out and "sst5 mini cached cpu" in out
    assert "toy: not timed (it declares no synthetic data" in out
    assert "toy mini" not in out


def test_shares_are_percentages_of_the_total() -> None:
    seconds = {"a": 1.0, "b": 3.0, "total": 4.0}
    assert bench_tasks.shares(seconds, ("a", "b")) == [25.0, 75.0]
    assert bench_tasks.shares({"a": 0.0, "total": 0.0}, ("a",)) == [0.0]


def test_unknown_task_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        bench_tasks.main(["--tasks", "nope"])
    assert exit_info.value.code == 2
    assert "unknown task ['nope']" in capsys.readouterr().err


def test_quick_run_measures_every_phase_of_one_small_task(tmp_path: Path) -> None:
    argv = ["--quick", "--tasks", "sst5", "--presets", "mini", "--features", "cached"]
    argv += [
        "--device",
        "cpu",
        "--json",
        str(tmp_path / "b.json"),
        "--out",
        str(tmp_path / "b.txt"),
    ]
    report = bench_tasks.main(argv)
    (result,) = report["results"]
    assert (result["task"], result["preset"], result["features"]) == ("sst5", "mini", "cached")
    assert result["batches"] == 2 and result["train_examples_per_s"] > 0
    train, evals = result["train_seconds"], result["eval_seconds"]
    assert all(train[p] >= 0 for p in bench_tasks.TRAIN_PHASES)
    assert sum(train[p] for p in bench_tasks.TRAIN_PHASES) <= train["total"] * 1.01
    assert sum(train[p] for p in bench_tasks.TRAIN_PHASES) >= train["total"] * 0.8
    assert all(evals[p] >= 0 for p in bench_tasks.EVAL_PHASES)
    assert "cache build" in result["setup_seconds"]
    assert json.loads((tmp_path / "b.json").read_text())["results"][0]["task"] == "sst5"
    text = (tmp_path / "b.txt").read_text()
    assert "sst5   mini  cached" in text
    header = text.splitlines()[:4]  # the commit, the CPU and the command, then a blank line
    assert header[0].startswith("commit: ") and header[1].startswith("CPU: ")
    assert header[2].startswith("command: python benchmarks/bench_tasks.py --quick --tasks sst5")
    assert header[3] == ""


def _pad_per_row(ids: TokenIds, seqs: list[tuple[str, ...]]) -> tuple[torch.Tensor, ...]:
    """``TokenIds.pad`` as it was before the benchmark: one lookup per token and row."""
    t = max(1, max((len(s) for s in seqs), default=0))
    words = torch.zeros(len(seqs), t, dtype=torch.long)
    chars = torch.zeros(len(seqs), t, ids.max_word_chars, dtype=torch.long)
    for i, s in enumerate(seqs):
        if s:
            words[i, : len(s)] = torch.tensor([ids.word_id(w) for w in s])
            chars[i, : len(s)] = torch.tensor([ids.char_ids(w) for w in s])
    mask = torch.arange(t)[None, :] < torch.tensor([len(s) for s in seqs])[:, None]
    return words, chars, mask


@pytest.mark.parametrize("lowercase", [False, True])
@pytest.mark.parametrize("max_chars", [1, 4])
def test_padding_once_per_distinct_word_gives_the_per_row_ids(
    lowercase: bool, max_chars: int
) -> None:
    """The overhead the benchmark found (per-token lookups in ``TokenIds.pad``) was removed
    without changing a single id: repeats, unknown words and characters, empty rows."""
    ids = TokenIds({"the": 2, "The": 3, "cat": 4}, {"t": 2, "h": 3, "e": 4}, lowercase, max_chars)
    batches: list[list[tuple[str, ...]]] = [
        [("The", "cat", "the"), (), ("théé", "cat", "The", "dog", "cat")],
        [(), ()],
        [],
        [("cat",)],
    ]
    for seqs in batches:
        for got, want in zip(ids.pad(seqs), _pad_per_row(ids, seqs), strict=True):
            assert got.dtype == want.dtype and torch.equal(got, want)


def test_padded_labels_are_the_per_row_ids() -> None:
    ids = {"O": 0, "B-PER": 1, "L-PER": 2}
    for seqs in ([("O", "B-PER", "L-PER"), (), ("X", "O")], [(), ()], []):
        want = torch.zeros(
            len(seqs), max(1, max((len(s) for s in seqs), default=0)), dtype=torch.long
        )
        for row, labels in enumerate(seqs):
            if labels:
                want[row, : len(labels)] = torch.tensor([ids.get(x, 0) for x in labels])
        got = pad_labels(seqs, ids, unknown=0)
        assert got.dtype == want.dtype and torch.equal(got, want)
    with pytest.raises(KeyError, match="X"):
        pad_labels([("O", "X")], ids)
