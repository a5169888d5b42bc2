"""Small on-disk fixtures for every registered representation (no downloads); for the task
contract a tiny frozen representation, the ``represent`` callables and the trivial systems each
task's learning check must beat."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from bilm import StatePolicy, save_checkpoint
from tasks.core import Represent
from tasks.representations import COVE_HIDDEN, COVE_INPUT, Layers, Representation
from tests.bilm.helpers import tiny_bilm

#: Words of the tiny GloVe files (includes a word with a space, as GloVe 840B has).
GLOVE_WORDS = ("the", "cat", "sat", "on", "mat", ".", "Hello", "world", "a", ". . .")

SENTENCES = [
    ["The", "cat", "sat", "on", "the", "mat", "."],
    ["Hello", "world"],
    [],
    ["a", "much", "longer", "sentence", "with", "unknown", "words", "than", "the", "others", "!"],
]

ODD_SENTENCES = [
    ["😀", "🇫🇷", "e\u0301", "\u200b", "\x00", "\x07tab\t", "\u202eRTL"],
    ["\ud800", "x" * 1000, "ﬁ", "İstanbul", "日本語", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"],
    [""],
]


def write_tiny_checkpoint(folder: Path, seed: int = 0) -> Path:
    """A tiny random biLM saved with :func:`bilm.save_checkpoint`."""
    return save_checkpoint(tiny_bilm(seed=seed), folder / f"tiny-bilm-{seed}.safetensors")


def write_glove_text(
    path: Path, dim: int, seed: int = 0, words: tuple[str, ...] = GLOVE_WORDS
) -> Path:
    """A GloVe-format text file (``.gz`` when the name ends so)."""
    rng = np.random.default_rng(seed)
    lines = [w + " " + " ".join(f"{v:.6f}" for v in rng.standard_normal(dim)) + "\n" for w in words]
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(lines).encode("utf-8")
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def write_cove_state(path: Path, seed: int = 0) -> Path:
    """A state dict with the exact layout of ``nn.LSTM(300, 300, 2, bidirectional=True)``."""
    torch.manual_seed(seed)
    lstm = nn.LSTM(COVE_INPUT, COVE_HIDDEN, num_layers=2, bidirectional=True)
    torch.save(lstm.state_dict(), path)
    return path


def write_hdf5_features(
    path: Path, representation: Representation, sentences: Sequence[Sequence[str]]
) -> Path:
    """``representation``'s layers over ``sentences`` in the ``python -m bilm embed`` layout
    (a dataset per sentence, ``sentence_to_index``), written with h5py directly so that tokens
    a text file cannot carry (tabs, lone surrogates, empty tokens) are kept. Empty sentences
    get no entry (the ``hdf5`` representation needs none)."""
    import h5py

    index: dict[str, str] = {}
    with h5py.File(path, "w") as sink:
        for i, sentence in enumerate(s for s in sentences if s):
            layers = representation(representation.featurize([sentence])).tensors  # (L, 1, n, D)
            sink.create_dataset(str(i), data=layers[:, 0].numpy(), dtype="float32")  # (L, n, D)
            index[" ".join(sentence)] = str(i)
        text = sink.create_dataset("sentence_to_index", (1,), dtype=h5py.string_dtype())
        text[0] = json.dumps(index)
    return path


# ------------------------------------------------------------------------ task contract helpers
class HashedTokens:
    """A small frozen representation for task tests: each token string gets a fixed vector.

    Layer 0 is a row of a fixed random table picked by the token's hash, layer 1 its ``tanh``;
    padded positions are exactly 0. A token's vectors depend on nothing else (not its
    neighbours, the batch or the padding), so any change of a task model's output under
    padding is the model's.
    """

    name, trainable = "hashed-tokens", False
    state_policy: StatePolicy = "reset"  # no state
    context_free_layers = 0  # claims nothing (no feature cache in these tests)
    buckets = 4096

    def __init__(self, output_dim: int = 3, num_layers: int = 2) -> None:
        self.output_dim, self.num_layers = output_dim, num_layers
        g = torch.Generator().manual_seed(0)
        self.table = torch.randn(self.buckets + 1, output_dim, generator=g)  # (buckets + 1, dim)
        self.table[0] = 0.0  # id 0 = padding

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        """``ids`` ``(batch, time)``: a bucket per token (0 at padding), and the mask."""
        time = max((len(s) for s in sentences), default=0)
        ids = torch.zeros(len(sentences), time, dtype=torch.long)  # (batch, time)
        for i, sentence in enumerate(sentences):
            for t, token in enumerate(sentence):
                digest = hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8)
                ids[i, t] = 1 + int.from_bytes(digest.digest(), "little") % self.buckets
        return {"ids": ids, "mask": ids > 0}

    def __call__(self, features: Mapping[str, Tensor]) -> Layers:
        vectors = self.table[features["ids"]]  # (batch, time, dim), 0 at padding
        layers = [vectors if k % 2 == 0 else torch.tanh(vectors) for k in range(self.num_layers)]
        return Layers(torch.stack(layers), features["mask"])  # (num_layers, batch, time, dim)

    def fingerprint(self) -> str:
        return f"{self.name}-{self.num_layers}x{self.output_dim}"

    def to(self, device: object) -> HashedTokens:
        return self


def represent_with(representation: Representation | None) -> Represent:
    """The ``represent`` callable a recipe collates with: the representation run live, or for
    the baseline (``None``) empty layers."""
    if representation is None:
        return lambda sequences: Layers.empty([len(s) for s in sequences])
    return lambda sequences: representation(representation.featurize(sequences))


# ----------------------------------------------------- trivial systems a trained model must beat
def majority_pair_accuracy(recipe: Any, limit: int) -> float:
    """SNLI: the share of the most common label among the first ``limit`` dev pairs."""
    dev = recipe.splits["dev"][:limit]
    return max(Counter(ex.label for ex in dev).values()) / len(dev)


def majority_training_label_accuracy(recipe: Any, limit: int) -> float:
    """SST-5: dev accuracy of always answering the most common label of the first ``limit``
    training examples (the balanced dev roots give it 20 %)."""
    majority = Counter(ex.label for ex in recipe.splits["train"][:limit]).most_common(1)[0][0]
    dev = recipe.splits["dev"]
    return sum(ex.label == majority for ex in dev) / len(dev)


def capitalised_person_f1(recipe: Any, limit: int) -> float:
    """NER: F1 of tagging every capitalised non-initial word as a one-word person."""
    dev = recipe.splits["dev"][:limit]
    guess = [
        ["U-PER" if i and token[:1].isupper() else "O" for i, token in enumerate(ex.tokens)]
        for ex in dev
    ]
    return float(recipe.score(guess, dev)["f1"])


def adjacent_guess(examples: Sequence[Any]) -> dict[tuple[int, int], tuple[str, ...]]:
    """SRL: a trivial tagger, ARG0 = the token before the verb, ARG1 = the token after."""
    predictions = {}
    for ex in examples:
        n, v = len(ex.tokens), ex.instance.predicate_index
        tags = ["O"] * n
        tags[v] = "B-V"
        if v > 0:
            tags[v - 1] = "B-ARG0"
        if v + 1 < n:
            tags[v + 1] = "B-ARG1"
        predictions[ex.key] = tuple(tags)
    return predictions


def adjacent_guess_f1(recipe: Any, limit: int) -> float:
    """SRL: F1 of :func:`adjacent_guess` on the first ``limit`` dev instances."""
    dev = recipe.splits["dev"][:limit]
    return float(recipe.score(adjacent_guess(dev), dev)["f1"])


def fixed_span_f1(recipe: Any, limit: int) -> float:
    """SQuAD: the best F1 of answering every question with the same token span (first token
    0–29, up to 5 tokens long), on the first ``limit`` dev questions."""
    dev = recipe.splits["dev"][:limit]
    best = 0.0
    for first in range(30):
        for last in range(first, first + 5):
            guess = {
                ex.qid: ex.span_text(
                    min(first, len(ex.context_tokens) - 1), min(last, len(ex.context_tokens) - 1)
                )
                for ex in dev
            }
            best = max(best, float(recipe.score(guess, dev)["f1"]))
    return best


def no_links_conll_f1(recipe: Any, limit: int) -> float:
    """Coreference: CoNLL F1 of the response without any cluster (0 on every metric)."""
    dev = recipe.splits["dev"][:limit]
    return float(recipe.score({}, dev)["conll_f1"])
