"""Layer probes (experiments/analyses/probes.py): readers, the linear POS probe, the WSD 1-NN, the
demo."""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import torch

from experiments.analyses import probes
from experiments.analyses.probes import (
    ProbeConfig,
    ProbeDataError,
    TaggedSentence,
    WsdExample,
    most_frequent_sense,
    nearest_sense,
    read_pos_conll,
    read_wsd_jsonl,
)
from tasks.representations import Layers


class LookupRepresentation:
    """Two layers: 0 = a fixed vector per word type (``table``), 1 = noise seeded by the
    sentence and position (carries no information about the word)."""

    num_layers = 2
    name = "lookup"

    def __init__(self, table: Mapping[str, Sequence[float]], dim: int) -> None:
        self.table, self.output_dim = table, dim

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, object]:
        return {"sentences": [list(s) for s in sentences]}

    def __call__(self, features: Mapping[str, object]) -> Layers:
        sentences: list[list[str]] = features["sentences"]  # type: ignore[assignment]
        time = max((len(s) for s in sentences), default=0)
        out = torch.zeros(2, len(sentences), time, self.output_dim)  # (L, batch, time, dim)
        mask = torch.zeros(len(sentences), time, dtype=torch.bool)  # (batch, time)
        for b, sentence in enumerate(sentences):
            for t, word in enumerate(sentence):
                out[0, b, t] = torch.tensor(self.table[word])
                seed = sum(map(ord, " ".join(sentence))) * 31 + t  # differs per sentence
                out[1, b, t] = torch.randn(
                    self.output_dim, generator=torch.Generator().manual_seed(seed)
                )
                mask[b, t] = True
        return Layers(out, mask)


# ------------------------------------------------------------------------------- readers
def test_read_pos_conll(tmp_path: Path) -> None:
    path = tmp_path / "pos.txt"
    path.write_text(
        "-DOCSTART- -X- O\n\nThe DT B-NP\ncat NN I-NP\n\n\nsat VBD B-VP\n. . O", encoding="utf-8"
    )
    assert read_pos_conll(path) == [
        TaggedSentence(("The", "cat"), ("DT", "NN")),
        TaggedSentence(("sat", "."), ("VBD", ".")),
    ]
    assert read_pos_conll(path, tag_col=2)[0].tags == ("B-NP", "I-NP")


def test_read_pos_conll_error_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("The DT\ncat\n", encoding="utf-8")
    with pytest.raises(ProbeDataError, match=rf"{path}:2: expected at least 2 columns"):
        read_pos_conll(path)


def test_read_wsd_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "wsd.jsonl"
    rows = [
        {"tokens": ["A", "Bank", "."], "index": 1, "sense": "bank.n.1", "split": "train"},
        {
            "tokens": ["x"],
            "index": 0,
            "sense": "s",
            "lemma": "y",
            "split": "test",
            "first_sense": "s0",
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    assert read_wsd_jsonl(path) == [
        WsdExample(("A", "Bank", "."), 1, "bank.n.1", "bank", "train"),
        WsdExample(("x",), 0, "s", "y", "test", "s0"),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"tokens": ["a"], "index": 3, "sense": "s", "split": "train"}', "'index' 3"),
        ('{"tokens": ["a"], "index": 0, "sense": "s", "split": "dev"}', "'split' must be"),
        ('{"tokens": ["a"], "index": 0, "split": "train"}', "missing key 'sense'"),
        ("[1, 2]", "expected a JSON object"),
        ("{oops", "not JSON"),
    ],
)
def test_read_wsd_jsonl_errors_name_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "wsd.jsonl"
    good = '{"tokens": ["a"], "index": 0, "sense": "s", "split": "train"}'
    path.write_text(f"{good}\n{line}\n", encoding="utf-8")
    with pytest.raises(ProbeDataError, match=rf"{path}:2: .*{message}"):
        read_wsd_jsonl(path)


# ----------------------------------------------------------------------------- POS probe
def test_linear_probe_learns_separable_data() -> None:
    generator = torch.Generator().manual_seed(0)
    centres = torch.randn(3, 4, generator=generator) * 5  # (classes, dim)
    labels = torch.arange(60) % 3  # (60,)
    x = centres[labels] + 0.1 * torch.randn(60, 4, generator=generator)  # (60, dim)
    config = ProbeConfig(steps=30)
    accuracy = probes.linear_probe_accuracy(x[:45], labels[:45], x[45:], labels[45:], 3, config)
    assert accuracy == 1.0
    # unseen test labels (id >= num_classes) can never be right
    unseen = torch.full((15,), 3)
    assert probes.linear_probe_accuracy(x[:45], labels[:45], x[45:], unseen, 3, config) == 0.0


def test_pos_probe_per_layer() -> None:
    tags = {"the": "DT", "a": "DT", "cat": "NN", "dog": "NN", "runs": "VB", "sits": "VB"}
    onehot = {"DT": [1.0, 0.0, 0.0], "NN": [0.0, 1.0, 0.0], "VB": [0.0, 0.0, 1.0]}
    rep = LookupRepresentation({w: onehot[t] for w, t in tags.items()}, dim=3)
    sentences = [[d, n, v] for d in ("the", "a") for n in ("cat", "dog") for v in ("runs", "sits")]
    sentences += [[n, v, d] for d, n, v in sentences[:4]]  # other word orders
    data = [TaggedSentence(tuple(s), tuple(tags[w] for w in s)) for s in sentences]
    accuracies = probes.pos_probe(rep, data[:8], data[8:], ProbeConfig(steps=20, batch_size=3))
    assert len(accuracies) == 2  # one per layer
    assert accuracies[0] == 1.0  # the informative layer
    assert accuracies[1] < 1.0  # noise


# ----------------------------------------------------------------------------- WSD probe
def _brute_force(
    train: list[tuple[list[float], str, str]],
    test: list[tuple[list[float], str]],
    fallback: list[str | None],
) -> list[str | None]:
    """Centroid per (lemma, sense) with plain Python, then the highest cosine."""
    answers: list[str | None] = []
    for (vector, lemma), back in zip(test, fallback, strict=True):
        senses = list(dict.fromkeys(s for _, lem, s in train if lem == lemma))
        if not senses:
            answers.append(back)
            continue
        best, best_score = None, -math.inf
        for sense in senses:
            rows = [v for v, lem, s in train if lem == lemma and s == sense]
            centroid = [sum(c) / len(rows) for c in zip(*rows, strict=True)]
            dot = sum(a * b for a, b in zip(centroid, vector, strict=True))
            norm = math.sqrt(sum(a * a for a in centroid)) * math.sqrt(sum(b * b for b in vector))
            if dot / norm > best_score:
                best, best_score = sense, dot / norm
        answers.append(best)
    return answers


def test_nearest_sense_matches_brute_force_with_fallback() -> None:
    train = [
        ([1.0, 0.0, 0.2], "bank", "river"),
        ([0.8, 0.3, 0.0], "bank", "river"),
        ([0.0, 1.0, 0.1], "bank", "money"),
        ([0.1, 0.1, 1.0], "play", "game"),
        ([-1.0, 0.2, 0.3], "play", "drama"),
        ([-0.5, 0.9, 0.3], "play", "drama"),
    ]
    test = [
        ([0.9, 0.1, 0.0], "bank"),
        ([0.2, 0.9, 0.0], "bank"),
        ([-0.3, 0.6, 0.2], "play"),  # nearer drama's centroid (-0.75, 0.55, 0.3) than game
        ([0.3, 0.0, 0.9], "play"),
        ([1.0, 1.0, 1.0], "rock"),  # unseen lemma: the fallback
        ([1.0, 1.0, 1.0], "rock"),  # unseen, no fallback: no prediction
    ]
    fallback: list[str | None] = [None, None, None, None, "stone", None]
    expected = _brute_force(train, test, fallback)
    got = nearest_sense(
        torch.tensor([v for v, _, _ in train]),
        [lem for _, lem, _ in train],
        [s for _, _, s in train],
        torch.tensor([v for v, _ in test]),
        [lem for _, lem in test],
        fallback,
    )
    assert got == expected
    assert got == ["river", "money", "drama", "game", "stone", None]


def test_most_frequent_sense_and_wsd_probe() -> None:
    def ex(tokens: str, index: int, sense: str, split: str) -> WsdExample:
        words = tuple(tokens.split())
        return WsdExample(words, index, sense, "bank", split)

    examples = [
        ex("the bank of the river", 1, "river", "train"),
        ex("a bank of the stream", 1, "river", "train"),
        ex("money in the bank", 3, "money", "train"),
        ex("the bank of the lake", 1, "river", "test"),
        ex("cash in the bank", 3, "money", "test"),
    ]
    train, test = examples[:3], examples[3:]
    assert most_frequent_sense(train, test) == ["river", "river"]
    words = {w for e in examples for w in e.tokens}
    table = {w: [float(len(w)), float(sum(map(ord, w)) % 7), 1.0] for w in words}
    accuracies = probes.wsd_probe(LookupRepresentation(table, dim=3), examples, ProbeConfig())
    assert len(accuracies) == 2
    assert all(0.0 <= a <= 1.0 for a in accuracies)
    # layer 0 is context-free: every target "bank" has the same vector, so one sense for all
    assert accuracies[0] == 0.5


# ---------------------------------------------------------------------------------- demo
def test_demo_unpacks_and_parses(tmp_path: Path) -> None:
    paths = probes.demo_paths(cache=tmp_path)
    train, test = read_pos_conll(paths.pos_train), read_pos_conll(paths.pos_test)
    assert (len(train), len(test)) == (1600, 400)
    assert {"NN", "VBD", "DT", "IN"} <= {t for s in train for t in s.tags}
    records = read_wsd_jsonl(paths.wsd)
    assert len(records) == 1440
    assert {e.split for e in records} == {"train", "test"}
    for e in records:  # the pseudo-word hides the sense at the token layer
        assert e.tokens[e.index] == e.lemma and e.sense in e.lemma.split("|")
    assert "DEMO" in (paths.pos_train.parent / "DEMO.txt").read_text(encoding="utf-8")
    committed = gzip.decompress((probes.DEMO_DIR / "wsd.jsonl.gz").read_bytes())
    assert paths.wsd.read_bytes() == committed


def test_layers_of_cove_are_numbered_from_one() -> None:
    table = {"x": [1.0, 0.0], "y": [0.0, 1.0]}
    data = [TaggedSentence(("x", "y"), ("A", "B"))] * 2
    report = probes.run_probes(
        [("cove", lambda: LookupRepresentation(table, 2))],
        (data, data),
        None,
        ProbeConfig(steps=5),
    )
    assert [r.layer for r in report.results] == [1, 2]
    assert report.results[0].pos_accuracy == 1.0 and report.results[0].wsd_accuracy is None
    assert "| cove | 1 | 100.0 | — |" in probes.format_table(report)
