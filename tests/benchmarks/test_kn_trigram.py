"""The interpolated Kneser-Ney trigram baseline of benchmarks/kn_trigram.py."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from benchmarks.kn_trigram import KneserNeyTrigram, perplexity
from bilm.vocab import Vocabulary

TOY = [
    "the cat sat on the mat".split(),
    "the dog sat on the log".split(),
    "a cat saw the dog".split(),
    "the cat sat on the log".split(),
    "a dog sat".split(),
    "the bird sang".split(),
]
# "zebra" is out of vocabulary in the toy text below; "unseen" is in the vocabulary, never seen.
VOCAB = Vocabulary(
    ["<S>", "</S>", "<UNK>", "the", "cat", "sat", "on", "mat", "dog", "log", "a", "saw"]
    + ["bird", "sang", "unseen"]
)


def _total(model: KneserNeyTrigram, context: list[int]) -> float:
    return sum(math.exp(model.logprob(w, context)) for w in range(len(VOCAB)))


@pytest.mark.parametrize("reverse", [False, True])
def test_distributions_sum_to_one(reverse: bool) -> None:
    model = KneserNeyTrigram.fit(TOY + [["zebra", "sat"]], VOCAB, reverse=reverse)
    ids = VOCAB.encode
    start = VOCAB.eos_id if reverse else VOCAB.bos_id
    contexts = [
        [],  # unigram level
        [start],  # first word of a sentence
        [start, *ids(["the"])],  # seen trigram context
        ids(["the", "cat"]),
        ids(["sat", "on"]),
        ids(["on", "the"]),
        ids(["cat", "the"]),  # unseen trigram context, seen bigram context
        ids(["unseen", "unseen"]),  # unseen everywhere: unigram level
        [VOCAB.unk_id],
        [start, VOCAB.unk_id],
    ]
    for context in contexts:
        assert abs(_total(model, context) - 1.0) < 1e-9, context
    assert model.tokens == sum(len(s) + 1 for s in TOY) + 3
    assert all(0 < d <= 1 for d in model.discounts)


def test_seen_trigram_beats_unseen() -> None:
    model = KneserNeyTrigram.fit(TOY, VOCAB)
    on_the = VOCAB.encode(["on", "the"])
    mat, log, cat = VOCAB.encode(["mat", "log", "cat"])
    assert model.logprob(mat, on_the) > model.logprob(cat, on_the)  # "on the cat" unseen
    assert model.logprob(log, on_the) > model.logprob(mat, on_the)  # seen twice vs once
    # Unseen in any context: the uniform share only, but never zero.
    unseen = VOCAB.id("unseen")
    assert model.logprob(unseen, on_the) < model.logprob(cat, on_the)
    assert math.isfinite(model.logprob(unseen, on_the))
    # The first word uses the start boundary as its only context.
    the, a = VOCAB.encode(["the", "a"])
    assert model.logprob(the, [VOCAB.bos_id]) > model.logprob(a, [VOCAB.bos_id])
    assert model.logprob(the, [VOCAB.bos_id]) > model.logprob(cat, [VOCAB.bos_id])


def test_backward_model_reads_reversed_sentences() -> None:
    model = KneserNeyTrigram.fit(TOY, VOCAB, reverse=True)
    assert (model.start_id, model.end_id) == (VOCAB.eos_id, VOCAB.bos_id)
    # Backward, "mat" is followed by "the" ("the mat" read right to left).
    mat, the, on = VOCAB.encode(["mat", "the", "on"])
    assert model.logprob(the, [VOCAB.eos_id, mat]) > model.logprob(on, [VOCAB.eos_id, mat])
    # Sentences end with <S> in the backward direction.
    sang, bird = VOCAB.encode(["sang", "bird"])
    after = [sang, bird, the]
    assert model.logprob(VOCAB.bos_id, after) > model.logprob(VOCAB.eos_id, after)
    with pytest.raises(ValueError, match="reverse"):
        perplexity(model, TOY, VOCAB, reverse=False)


def test_training_text_beats_shuffled_words() -> None:
    text = TOY * 3
    model = KneserNeyTrigram.fit(text, VOCAB)
    rng = random.Random(0)
    words = [w for s in text for w in s]
    rng.shuffle(words)
    shuffled, i = [], 0
    for s in text:
        shuffled.append(words[i : i + len(s)])
        i += len(s)
    train = perplexity(model, text, VOCAB)
    mixed = perplexity(model, shuffled, VOCAB)
    assert train["tokens"] == mixed["tokens"] == sum(len(s) + 1 for s in text)
    assert train["perplexity"] < 0.5 * mixed["perplexity"]
    for direction in (True, False):
        back = KneserNeyTrigram.fit(text, VOCAB, reverse=direction)
        assert (
            perplexity(back, text, VOCAB, reverse=direction)["perplexity"]
            < perplexity(back, shuffled, VOCAB, reverse=direction)["perplexity"]
        )


def test_perplexity_matches_logprob_sum_and_counts_unk() -> None:
    model = KneserNeyTrigram.fit(TOY, VOCAB)
    sentence = ["the", "zebra", "sat"]
    ids = [VOCAB.bos_id, *VOCAB.encode(sentence), VOCAB.eos_id]
    nll = -sum(model.logprob(ids[i], ids[:i]) for i in range(1, len(ids)))
    result = perplexity(model, [sentence], VOCAB)
    assert result["tokens"] == 4 and result["unk"] == 1
    assert result["perplexity"] == pytest.approx(math.exp(nll / 4), rel=1e-12)
    # The vectorised and the scalar paths agree.
    lp = model.logprobs(np.array(ids[1:]), np.array([-1, *ids[:-2]]), np.array(ids[:-1]))
    assert -lp.sum() == pytest.approx(nll, rel=1e-12)
