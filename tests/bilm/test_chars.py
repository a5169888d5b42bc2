import pytest
import torch

from bilm.chars import MAX_CHARS, batch_to_ids, word_to_char_ids


def test_official_examples() -> None:
    # bilm-tf tests: "th" → [258, 116, 104, 259, 260, ...] raw, i.e. +1 here.
    assert word_to_char_ids("th")[:5] == [259, 117, 105, 260, 261]
    # allennlp elmo_indexer_test: <S> / </S> after the +1 shift.
    assert word_to_char_ids("<S>") == [259, 257, 260] + [261] * 47
    assert word_to_char_ids("</S>") == [259, 258, 260] + [261] * 47


def test_every_slot_filled_and_in_range() -> None:
    for word in ["a", "naïve", "日本語", "🙂", "tab\there", "\x00\x1f", "x" * 80]:
        ids = word_to_char_ids(word)
        assert len(ids) == MAX_CHARS
        assert all(1 <= i <= 261 for i in ids)


def test_long_token_truncated_to_48_bytes_even_mid_character() -> None:
    word = "é" * 30  # 60 bytes; 48 bytes = 24 full characters
    ids = word_to_char_ids(word)
    body = ids[1:49]
    assert bytes(i - 1 for i in body) == word.encode("utf-8")[:48]
    assert ids[49] == 260  # end-of-word marker (259 + 1) in the last slot

    cut = ("a" + "é" * 30).encode("utf-8")[:48]  # ends in the middle of a 2-byte character
    ids = word_to_char_ids("a" + "é" * 30)
    assert bytes(i - 1 for i in ids[1:49]) == cut


def test_lone_surrogates_are_dropped_like_encode_ignore() -> None:
    assert word_to_char_ids("a\udcffb") == word_to_char_ids("ab")
    assert word_to_char_ids("\udcff")[:3] == [259, 260, 261]  # empty word: BOW, EOW, pad


def test_batch_to_ids_pads_with_zero_tokens() -> None:
    ids = batch_to_ids([["a", "b", "c"], [], ["d"]])
    assert ids.shape == (3, 3, 50) and ids.dtype == torch.long
    assert (ids[1] == 0).all() and (ids[2, 1:] == 0).all() and (ids[0] > 0).all()
    assert batch_to_ids([]).shape == (0, 0, 50)
    assert batch_to_ids([[], []]).shape == (2, 0, 50)


def test_batch_to_ids_rejects_strings() -> None:
    with pytest.raises(TypeError, match="list of token lists"):
        batch_to_ids("a sentence")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sentence 1 is a string"):
        batch_to_ids([["ok"], "not tokens"])  # type: ignore[list-item]
