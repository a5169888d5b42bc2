"""Coreference through the task protocol: presets, data errors, the writer → scorer round trip,
the DEMO set and a learning test through the one training loop."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest
import torch

from experiments.runner import RunOptions, train
from experiments.spec import RunSpec
from tasks import registry
from tasks.common.io import DataError, ReadStats
from tasks.coref.config import TURIAN_50D, preset
from tasks.coref.data import load_split, split_files
from tasks.coref.demo import FILES, annotate, corpus_stats, ensure_demo
from tasks.coref.evaluate import evaluate_files, main
from tasks.coref.task import GENRES, TASK, VERSION, require_turian, setup
from tests.tasks.helpers import write_lines

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
    paper, mini = preset("paper"), preset("mini")
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
        preset("mini").__class__(spans_per_word=0.0)


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


def test_written_predictions_score_as_score(recipe, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    dev = recipe.splits["dev"][:12]
    guess = {}  # a poor but valid guess: each document's first two tokens in one cluster
    for n, doc in enumerate(dev):
        guess[doc.key] = [[(0, 0), (1, 1)]] if n % 3 else [[(0, 1), (3, 3)], [(5, 5), (7, 8)]]
    path = recipe.write_predictions(guess, dev, tmp_path / "p")
    ours = recipe.score(guess, dev)
    assert 0.0 < ours["conll_f1"] < 1.0 or ours["conll_f1"] == 0.0
    assert main([f"{tmp_path / 'p'}.key_conll", str(path)]) == 0
    report = __import__("json").loads(capsys.readouterr().out)
    assert report["conll_f1"] == pytest.approx(100 * ours["conll_f1"], abs=1e-9)
    assert report["muc"]["f1"] == pytest.approx(100 * ours["muc_f1"], abs=1e-9)
    assert report["num_documents"] == 12


def test_model_predictions_round_trip(recipe, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from tasks.common.inject import Injector
    from tasks.representations import build_representation

    torch.manual_seed(0)
    model = recipe.build_model(Injector(build_representation("none"), frozenset())).eval()
    dev = recipe.splits["dev"][:5]
    with torch.no_grad():
        predictions = recipe.predict(model, dev, lambda seqs: None)
    path = recipe.write_predictions(predictions, dev, tmp_path / "m")
    official, _ = evaluate_files(f"{tmp_path / 'm'}.key_conll", path)
    assert recipe.score(predictions, dev)["conll_f1"] == pytest.approx(official.conll_f1)


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
    from tasks.common.inject import Injector
    from tasks.representations import build_representation

    model = recipe.build_model(Injector(build_representation("none"), frozenset())).train()
    for doc in recipe.splits["train"]:
        out = model(recipe.collate([doc], lambda seqs: None))
        out.loss.backward()
    batch = recipe.collate([recipe.splits["train"][1]], lambda seqs: None)
    assert int(batch.genre) == GENRES.index("bc") + 1
    assert batch.speakers[batch.mask].tolist() == [1, 1, 1, 1]
    with torch.no_grad():
        predictions = recipe.predict(model.eval(), recipe.splits["dev"], lambda seqs: None)
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


def test_demo_set_loads(tmp_path: Path) -> None:
    folder = ensure_demo(cache=tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
    stats = {s: ReadStats() for s in ("train", "dev", "test")}
    docs = {s: load_split(s, folder, stats[s]) for s in stats}
    assert [len(docs[s]) for s in ("train", "dev", "test")] == [200, 50, 50]
    every = [d for split in docs.values() for d in split]
    assert all("/demo/" in d.document_id and d.clusters for d in every)
    assert {d.genre for d in every} == {"nw", "pt"}
    assert any(s not in ("Narrator", "-") for d in every for row in d.speakers for s in row)
    assert all(d.num_tokens <= 250 and len(d.sentences) <= 10 for d in every)
    texts = {s: {" ".join(w for sent in d.sentences for w in sent) for d in docs[s]} for s in docs}
    assert not texts["train"] & texts["dev"] and not texts["train"] & texts["test"]
    assert ensure_demo(cache=tmp_path) == folder  # unpacked once
    raw = gzip.decompress(
        (Path(__file__).parents[3] / "tasks/coref/demo_data/dev.demo_gold_conll.gz").read_bytes()
    )
    assert raw.decode() == (folder / "dev.demo_gold_conll").read_text()


def test_demo_heuristic_on_a_hand_made_passage() -> None:
    text = [
        (1, tuple("Mr. Darcy looked at Elizabeth , and she smiled at him .".split())),
        (2, tuple('" I am glad , " said Elizabeth .'.split())),
    ]
    corpus = [*text] + [
        (10 + i, tuple(f"Then {n} came and {p} sat .".split()))
        for i in range(10)
        for n, p in (("Elizabeth", "she"), ("Darcy", "he"))
    ]
    stats = corpus_stats(corpus)
    doc = annotate(text, stats, "nw/demo/test/1")
    words = [w for s in doc.sentences for w in s]
    chains = sorted([" ".join(words[s : e + 1]) for s, e in c] for c in doc.clusters)
    assert chains == [["Elizabeth", "she", "I", "Elizabeth"], ["Mr. Darcy", "him"]]
    assert doc.speakers[1][1] == "Elizabeth" and doc.speakers[0][0] == "Narrator"


def test_learns_on_the_demo_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small model on 60 DEMO documents for a few epochs (< 60 s on one thread): the training
    loss falls and dev CoNLL F1 beats the trivial response (no links: 0 on every metric)."""
    monkeypatch.setitem(registry.TASKS, TASK.name, TASK)
    spec = RunSpec(
        task="coref",
        task_version=VERSION,
        representation="none",
        sites=(),
        dropout=0.0,
        limit=60,
        seed=0,
        overrides=("hidden=16", "ffnn_size=32", "train.epochs=4", "train.optimizer.lr=0.01"),
    )
    with tempfile.TemporaryDirectory() as work:
        outcome = train(spec, RunOptions(work_root=Path(work), progress=False, threads=1))
    losses = [r["train_loss"] for r in outcome.log]
    assert losses[-1] < losses[0]
    assert outcome.metrics["dev_conll_f1"] > 0.15, outcome.metrics


def test_unit_statistics_sum_to_the_corpus_score() -> None:
    """Per-document numerators/denominators (paired bootstrap units) give back score()."""
    from tasks.coref.task import conll_f1_from_totals

    recipe = setup("mini", ("word_vectors=random:4", "turian_vectors="), None)
    docs = recipe.splits["dev"][:6]
    # a response that keeps each gold cluster's first two mentions only
    predictions = {d.key: tuple(tuple(c)[:2] for c in d.clusters) for d in docs}
    units = recipe.unit_statistics(predictions, docs)
    totals = [sum(col) for col in zip(*units.rows, strict=True)]
    assert len(units.ids) == len(docs) and len(totals) == 12
    expected = recipe.score(predictions, docs)["conll_f1"]
    assert abs(conll_f1_from_totals(totals) - expected) < 1e-12
