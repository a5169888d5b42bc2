"""Coreference through the task protocol: presets, data errors, gold clusters scoring 100 and the
evaluator's per-metric report on written files, documents without mentions (the shared
properties, learning included, are in tests/contract/test_tasks.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from tasks.common.io import DataError, ReadStats
from tasks.coref.config import TURIAN_50D
from tasks.coref.data import load_split, split_files
from tasks.coref.demo import ensure_demo
from tasks.coref.evaluate import evaluate_files, main
from tasks.coref.task import GENRES, TASK, VERSION, CorefRecipe, require_turian, setup
from tasks.representations import Layers
from tests.tasks.helpers import run_cli, write_lines

TINY = ("word_vectors=random:4", "hidden=4", "char_filters=2", "ffnn_size=8", "feature_size=4")


@pytest.fixture(scope="module")
def recipe():  # type: ignore[no-untyped-def]
    return setup("mini", TINY, None)


def _line(doc: str, i: int, word: str, coref: str, speaker: str = "A") -> str:
    return f"{doc} 0 {i} {word} - - - - - {speaker} * {coref}"


def _document(doc: str, sentences: list[list[tuple[str, str]]]) -> list[str]:
    lines = [f"#begin document ({doc}); part 000"]
    for sentence in sentences:
        lines += [_line(doc, i, w, c) for i, (w, c) in enumerate(sentence)]
        lines.append("")
    return [*lines, "#end document"]


def test_presets_and_task_spec() -> None:
    paper, mini = TASK.configure("paper", ()), TASK.configure("mini", ())
    assert (paper.hidden, paper.ffnn_size, paper.ffnn_depth, paper.feature_size) == (
        200,
        150,
        2,
        20,
    )
    assert (paper.char_widths, paper.char_filters, paper.char_dim) == ((3, 4, 5), 50, 8)
    assert (paper.max_span_width, paper.spans_per_word, paper.max_antecedents) == (10, 0.4, 250)
    assert (paper.lexical_dropout, paper.dropout, paper.max_training_sentences) == (0.5, 0.2, 50)
    t = paper.train
    assert (t.batching, t.optimizer.lr, t.clip_norm) == ("document", 1e-3, 5.0)
    assert (t.schedule.kind, t.schedule.factor, t.schedule.every) == ("exponential", 0.999, 100)
    assert paper.turian_vectors == TURIAN_50D and mini.turian_vectors == ""
    assert mini.max_antecedents == 50 and mini.hidden == 32
    assert TASK.version == VERSION and TASK.presets == ("mini", "paper")
    assert TASK.default_sites == frozenset({"input"}) and TASK.elmo_dropout == 0.5
    assert TASK.default_mix.lam == 0.0 and not TASK.default_mix.layer_norm
    assert TASK.metric.key == "conll_f1"
    with pytest.raises(ValueError, match="spans_per_word"):
        TASK.configure("mini", ()).__class__(spans_per_word=0.0)


def test_paper_preset_names_the_missing_vector_files() -> None:
    with pytest.raises(FileNotFoundError, match="--glove"):
        setup("paper", (), None)
    with pytest.raises(FileNotFoundError, match="--turian"):
        setup("paper", ("word_vectors=random:4",), None)
    require_turian("")  # explicitly without Turian vectors
    paper = setup("paper", ("word_vectors=random:4", "turian_vectors=random:2"), None)
    assert [v.shape[1] for v in paper.vectors] == [4, 2]


def test_gold_clusters_as_a_response_score_100(recipe, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    dev = recipe.splits["dev"]
    gold = {doc.key: [list(c) for c in doc.clusters] for doc in dev}
    path = recipe.write_predictions(gold, dev, tmp_path / "predictions-dev")
    ours = recipe.score(gold, dev)
    key = ensure_demo() / "dev.demo_gold_conll"
    official, _ = evaluate_files(key, path)
    for metric in (official.muc, official.b_cubed, official.ceafe):
        assert metric.f1 == pytest.approx(1.0) and metric.recall == pytest.approx(1.0)
    assert ours["conll_f1"] == pytest.approx(1.0) == official.conll_f1
    assert key.read_text() == Path(f"{tmp_path / 'predictions-dev'}.key_conll").read_text()


def test_the_evaluator_reports_each_metric_and_the_documents(
    recipe: CorefRecipe, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The written key and response of 12 documents: the CLI's MUC, B³ and CEAF-e entries are
    ``score()``'s and it counts the documents (CoNLL F1 of a whole split: the task contract)."""
    dev = recipe.splits["dev"][:12]
    guess = {}  # a poor but valid guess: each document's first two tokens in one cluster
    for n, doc in enumerate(dev):
        guess[doc.key] = [[(0, 0), (1, 1)]] if n % 3 else [[(0, 1), (3, 3)], [(5, 5), (7, 8)]]
    path = recipe.write_predictions(guess, dev, tmp_path / "p")
    ours = recipe.score(guess, dev)
    status, report, _ = run_cli(main, [f"{tmp_path / 'p'}.key_conll", str(path)], capsys)
    assert status == 0 and report["num_documents"] == 12
    assert report["conll_f1"] == pytest.approx(100 * ours["conll_f1"], abs=1e-9)
    for name in ("muc", "bcub", "ceafe"):
        assert report[name]["f1"] == pytest.approx(100 * ours[f"{name}_f1"], abs=1e-9), name


def test_bad_input(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    # a document without mentions and a mention crossing a sentence are valid input
    empty = _document("nw/x/0", [[("A", "-"), ("b", "-")], [("c", "-")]])
    crossing = _document(
        "nw/x/1", [[("He", "(0)"), ("left", "(1")], [("home", "1)"), ("he", "(0)")]]
    )
    write_lines(data / "train.english.v4_gold_conll", [*empty, *crossing])
    stats = ReadStats()
    docs = load_split("train", data, stats)
    assert [len(d.clusters) for d in docs] == [0, 2]
    assert stats.skipped["mention crossing a sentence"] == 1
    assert docs[1].crossing_mentions() == [(1, 2)]
    # a document longer than the configured limit: an error at its header line
    with pytest.raises(DataError) as info:
        load_split("train", data, max_tokens=3)
    assert info.value.line == 8 and "max_document_tokens=3" in info.value.reason
    # an unclosed cluster bracket: an error with file and line
    write_lines(
        data / "dev.english.v4_gold_conll", _document("nw/x/2", [[("A", "(3"), ("b", "-")]])
    )
    with pytest.raises(DataError) as info:
        load_split("dev", data)
    assert "never closed" in info.value.reason and info.value.path.endswith(
        "dev.english.v4_gold_conll"
    )


def test_documents_without_mentions_train_and_predict(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    empty = _document("nw/x/0", [[("A", "-"), ("b", "-"), ("c", "-")]])
    crossing = _document(
        "bc/x/1", [[("He", "(0)"), ("left", "(1")], [("home", "1)"), ("he", "(0)")]]
    )
    for split in ("train", "dev"):
        write_lines(data / f"{split}.english.v4_gold_conll", [*empty, *crossing])
    recipe = setup("mini", TINY, str(data))
    assert set(recipe.splits) == {"train", "dev"}  # no test files: no test split
    from tasks.features.inject import Injector
    from tasks.representations import build_representation

    model = recipe.build_model(Injector(build_representation("none"), frozenset())).train()
    for doc in recipe.splits["train"]:
        out = model(recipe.collate([doc], lambda seqs: Layers.empty([len(x) for x in seqs])))
        out.loss.backward()
    batch = recipe.collate(
        [recipe.splits["train"][1]], lambda seqs: Layers.empty([len(x) for x in seqs])
    )
    assert int(batch.genre) == GENRES.index("bc") + 1
    assert batch.speakers[batch.mask].tolist() == [1, 1, 1, 1]
    with torch.no_grad():
        predictions = recipe.predict(
            model.eval(), recipe.splits["dev"], lambda seqs: Layers.empty([len(x) for x in seqs])
        )
    scores = recipe.score(predictions, recipe.splits["dev"])
    assert 0.0 <= scores["conll_f1"] <= 1.0


def test_split_folders(tmp_path: Path) -> None:
    tree = tmp_path / "conll-2012" / "development" / "data" / "english" / "annotations" / "nw"
    tree.mkdir(parents=True)
    write_lines(tree / "a.v4_gold_conll", _document("nw/a", [[("x", "-")]]))
    write_lines(tree / "a.v4_auto_conll", _document("nw/a", [[("x", "-")]]))
    found = split_files(tmp_path / "conll-2012", "dev")
    assert [p.name for p in found] == ["a.v4_gold_conll"]
    assert split_files(tmp_path, "test") == []


def _position_layers(sequences) -> Layers:  # type: ignore[no-untyped-def]
    """A stand-in representation whose value at a token is its position in its sequence."""
    lengths = [len(s) for s in sequences]
    empty = Layers.empty(lengths)
    positions = torch.arange(empty.mask.shape[1], dtype=torch.float32)  # (t,)
    tensors = (positions[None, None, :, None] * empty.mask[None, :, :, None]).expand(
        1, *empty.mask.shape, 2
    )  # (1, b, t, 2)
    return Layers(tensors.contiguous(), empty.mask)


def test_a_document_read_as_one_sequence_is_cut_back_into_its_sentences(recipe) -> None:  # type: ignore[no-untyped-def]
    doc = next(d for d in recipe.splits["train"] if len(d.sentences) >= 3)
    lengths = [len(s) for s in doc.sentences]
    whole = replace(recipe, config=replace(recipe.config, document_as_one_sequence=True))
    assert whole.sequences([doc]) == [[w for s in doc.sentences for w in s]]
    assert len(recipe.sequences([doc])) == len(lengths)
    by_sentence = recipe.collate([doc], _position_layers).layers
    by_document = whole.collate([doc], _position_layers).layers
    assert by_document.tensors.shape == by_sentence.tensors.shape  # (1, n, t, 2)
    assert torch.equal(by_document.mask, by_sentence.mask)
    offsets = [sum(lengths[:i]) for i in range(len(lengths))]
    for i, (offset, n) in enumerate(zip(offsets, lengths, strict=True)):
        expected = torch.arange(offset, offset + n, dtype=torch.float32)  # (n,)
        assert torch.equal(by_document.tensors[0, i, :n, 0], expected)
        assert torch.equal(by_sentence.tensors[0, i, :n, 0], expected - offset)
        assert not by_document.tensors[0, i, n:].any()  # padding stays 0
