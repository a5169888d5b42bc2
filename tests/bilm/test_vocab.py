"""Vocabulary: bilm-tf vocab-file format, build order, round trip, errors."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bilm.corpus import SkipStats
from bilm.vocab import MAXTERMID, SPECIAL_TOKENS, Vocabulary


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def test_build_order_specials_then_descending_count_ties_by_string(tmp_path: Path) -> None:
    f1 = write(tmp_path / "a.txt", "the cat sat\nthe dog sat\n")
    f2 = write(tmp_path / "b.txt", "a the zebra\n")
    vocab = Vocabulary.build([f1, f2])
    # the 3; sat 2; a, cat, dog, zebra 1 (ties in code-point order)
    assert vocab.tokens == ("<S>", "</S>", "<UNK>", "the", "sat", "a", "cat", "dog", "zebra")
    assert (vocab.bos_id, vocab.eos_id, vocab.unk_id) == (0, 1, 2)


def test_build_min_count_and_max_size(tmp_path: Path) -> None:
    f = write(tmp_path / "a.txt", "x x x y y z\nB b\n")
    assert Vocabulary.build([f], min_count=2).tokens[3:] == ("x", "y")
    assert Vocabulary.build([f], max_size=5).tokens == (*SPECIAL_TOKENS, "x", "y")
    assert Vocabulary.build([f], max_size=3).tokens == SPECIAL_TOKENS
    with pytest.raises(ValueError, match="max_size"):
        Vocabulary.build([f], max_size=2)
    with pytest.raises(ValueError, match="min_count"):
        Vocabulary.build([f], min_count=0)


def test_build_ignores_literal_specials_and_marker(tmp_path: Path) -> None:
    f = write(tmp_path / "a.txt", f"<S> w </S> <UNK> {MAXTERMID}\n")
    assert Vocabulary.build([f]).tokens == (*SPECIAL_TOKENS, "w")


def test_build_skips_bad_lines_and_counts_them(tmp_path: Path) -> None:
    f = write(
        tmp_path / "a.txt", b"good line\n\n   \n\xff\xfe bad\nnul\x00here\n" + b"t " * 9 + b"\n"
    )
    stats = SkipStats()
    vocab = Vocabulary.build([f], max_tokens_per_line=8, stats=stats)
    assert vocab.tokens[3:] == ("good", "line")
    assert stats.as_dict() == {"empty": 2, "too_long": 1, "invalid_utf8": 1, "control_chars": 1}


def test_build_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        Vocabulary.build([tmp_path / "nope.txt"])


def test_save_load_round_trip_and_fingerprint(tmp_path: Path) -> None:
    vocab = Vocabulary([*SPECIAL_TOKENS, "the", "naïve", "日本"])
    path = tmp_path / "vocab.txt"
    vocab.save(path)
    assert path.read_text(encoding="utf-8") == "<S>\n</S>\n<UNK>\nthe\nnaïve\n日本\n"
    loaded = Vocabulary.load(path)
    assert loaded == vocab and len(loaded) == 6
    assert (
        loaded.fingerprint() == vocab.fingerprint() == hashlib.sha256(path.read_bytes()).hexdigest()
    )
    assert (
        Vocabulary([*SPECIAL_TOKENS, "a", "b"]).fingerprint()
        != Vocabulary([*SPECIAL_TOKENS, "b", "a"]).fingerprint()
    )


def test_load_skips_maxtermid_and_keeps_file_order(tmp_path: Path) -> None:
    # The official 1B-word file order: ids are line numbers, as in bilm-tf.
    path = write(tmp_path / "v.txt", f"</S>\n<S>\n{MAXTERMID}\n<UNK>\nthe\r\n,\n\n")
    vocab = Vocabulary.load(path)
    assert vocab.tokens == ("</S>", "<S>", "<UNK>", "the", ",")
    assert (vocab.bos_id, vocab.eos_id, vocab.unk_id) == (1, 0, 2)


@pytest.mark.parametrize("missing", SPECIAL_TOKENS)
def test_load_missing_special_names_file(tmp_path: Path, missing: str) -> None:
    path = write(
        tmp_path / "bad_vocab.txt", "\n".join(t for t in (*SPECIAL_TOKENS, "x") if t != missing)
    )
    with pytest.raises(ValueError, match=r"bad_vocab\.txt.*missing special") as err:
        Vocabulary.load(path)
    assert missing in str(err.value)


@pytest.mark.parametrize(
    "body", ["<S>\n</S>\n<UNK>\n\nx\n", "<S>\n</S>\n<UNK>\nx 12\n", "<S>\n</S>\n<UNK>\nx\nx\n"]
)
def test_load_rejects_malformed_lines(tmp_path: Path, body: str) -> None:
    with pytest.raises(ValueError, match="v.txt"):
        Vocabulary.load(write(tmp_path / "v.txt", body))


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="none.txt"):
        Vocabulary.load(tmp_path / "none.txt")


def test_encode_id_token() -> None:
    vocab = Vocabulary([*SPECIAL_TOKENS, "the", "cat"])
    assert vocab.encode(["the", "dog", "<S>", "cat"]) == [3, 2, 0, 4]
    assert vocab.id("cat") == 4 and vocab.id("dog") == vocab.unk_id
    assert vocab.token(3) == "the" and "cat" in vocab and "dog" not in vocab
    with pytest.raises(IndexError):
        vocab.token(5)
    with pytest.raises(ValueError, match="whitespace"):
        Vocabulary([*SPECIAL_TOKENS, "a b"])
