"""The one vocabulary / word-vector / padding module."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tasks.common.vocab import (
    PAD,
    UNK,
    TokenIds,
    char_vocabulary,
    index,
    require_word_vectors,
    word_vectors,
)


def test_index_and_char_vocabulary_start_at_two() -> None:
    assert index(["b", "a", "b"]) == {"a": 2, "b": 3}
    assert char_vocabulary(["aab", "b"], min_count=2) == {"a": 2, "b": 3}
    assert char_vocabulary(["aab", "b", "b"], min_count=3) == {"b": 2}


def test_token_ids_pad_shapes_mask_and_unknowns() -> None:
    ids = TokenIds({"the": 2, "cat": 3}, {"t": 2, "h": 3}, lowercase=True, max_word_chars=3)
    words, chars, mask = ids.pad([["The", "dog"], [], ["cat"]])
    assert words.tolist() == [[2, UNK], [PAD, PAD], [3, PAD]]
    assert mask.tolist() == [[True, True], [False, False], [True, False]]
    assert chars.shape == (3, 2, 3)
    assert chars[0, 0].tolist() == [UNK, 3, UNK]  # "The": T unknown (chars are cased)
    assert chars[1].eq(PAD).all()


def test_paper_vectors_never_fall_back() -> None:
    with pytest.raises(FileNotFoundError, match="--glove"):
        require_word_vectors("glove-840b")
    with pytest.raises(FileNotFoundError, match="glove.840B"):
        word_vectors("glove-840b", ["a"], lowercase=False)


def test_random_vectors_are_fixed_by_source() -> None:
    a = word_vectors("random:4", ["x", "y"], lowercase=False)
    assert a.shape == (4, 4) and a[:2].eq(0).all()
    assert torch.equal(a, word_vectors("random:4", ["x", "y"], lowercase=False))


def test_cased_word_vectors_fall_back_to_lowercase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """document-qa's FixedWordEmbedder: the cased word, else its lowercase form, else zeros."""
    monkeypatch.setenv("ELMO_BENCH_CACHE", str(tmp_path / "cache"))
    glove = tmp_path / "tiny.txt"
    glove.write_text("the 1 2\nParis 3 4\nparis 5 6\nrome 7 8\n")
    table = word_vectors(str(glove), ["Paris", "paris", "Rome", "The", "Oslo"], lowercase=False)
    assert table.tolist() == [
        [0.0, 0.0],  # padding
        [0.0, 0.0],  # unknown
        [3.0, 4.0],  # Paris: cased vector
        [5.0, 6.0],
        [7.0, 8.0],  # Rome → rome
        [1.0, 2.0],  # The → the
        [0.0, 0.0],  # Oslo: OOV
    ]
