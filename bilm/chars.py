"""Character ids for the ELMo char-CNN, exactly as the official scheme.

The scheme of allennlp v2.10.1 ``allennlp/data/token_indexers/elmo_indexer.py`` and bilm-tf
``bilm/data.py`` (the two agree).

A token is its UTF-8 bytes (invalid surrogates dropped, like ``encode("utf-8", "ignore")``),
truncated to ``max_chars - 2`` bytes, wrapped in begin/end-of-word markers and right-padded with
the padding char. All ids are shifted by +1 so that 0 means "no token here" (a padded position).
The literal strings ``"<S>"`` and ``"</S>"`` map to the sentence-boundary character ids.

Pure Python + torch, CPU only, picklable: safe to call in a ``DataLoader`` worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import torch

# Raw ids before the +1 shift (bilm-tf UnicodeCharsVocabulary, allennlp ELMoCharacterMapper).
BOS_CHAR = 256  # begin of sentence
EOS_CHAR = 257  # end of sentence
BOW_CHAR = 258  # begin of word
EOW_CHAR = 259  # end of word
PAD_CHAR = 260  # padding inside a word's 50 slots
MAX_CHARS = 50  # max_characters_per_token of every published model

BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"


@lru_cache(maxsize=1 << 16)
def _word_ids(word: str, max_chars: int) -> tuple[int, ...]:
    if word == BOS_TOKEN:
        body: bytes | list[int] = [BOS_CHAR]
    elif word == EOS_TOKEN:
        body = [EOS_CHAR]
    else:
        # "surrogatepass" would keep lone surrogates; the official code drops what cannot encode.
        body = word.encode("utf-8", "ignore")[: max_chars - 2]
    ids = [PAD_CHAR] * max_chars
    ids[0] = BOW_CHAR
    for i, b in enumerate(body, start=1):
        ids[i] = b
    ids[len(body) + 1] = EOW_CHAR
    return tuple(i + 1 for i in ids)  # +1: id 0 is reserved for padded tokens


def word_to_char_ids(word: str, max_chars: int = MAX_CHARS) -> list[int]:
    """Character ids of one token (already shifted by +1; length ``max_chars``).

    Args:
        word: the token text. ``"<S>"``/``"</S>"`` give the sentence-boundary ids.
        max_chars: slots per token including the two word markers (50 in every official model).

    Example:
        >>> word_to_char_ids("th")[:5]
        [259, 117, 105, 260, 261]
    """
    return list(_word_ids(word, max_chars))


def batch_to_ids(sentences: Sequence[Sequence[str]], max_chars: int = MAX_CHARS) -> torch.Tensor:
    """Character ids of a batch of tokenized sentences, right-padded with all-zero tokens.

    Sentence boundaries are **not** added here: :class:`bilm.BiLM` adds and removes them itself.

    Args:
        sentences: ``batch`` lists of token strings (a sentence may be empty).
        max_chars: slots per token (50 for the official models).

    Returns:
        ``LongTensor (batch, max_len, max_chars)``; ``max_len`` is 0 when every sentence is empty.
    """
    if isinstance(sentences, str):
        raise TypeError("batch_to_ids expects a list of token lists, got a string")
    max_len = max((len(s) for s in sentences), default=0)
    out = torch.zeros(len(sentences), max_len, max_chars, dtype=torch.long)
    for i, sentence in enumerate(sentences):
        if isinstance(sentence, str):
            raise TypeError(f"sentence {i} is a string; pass a list of tokens (e.g. s.split())")
        if sentence:
            out[i, : len(sentence)] = torch.tensor([_word_ids(w, max_chars) for w in sentence])
    return out  # (batch, max_len, max_chars)
