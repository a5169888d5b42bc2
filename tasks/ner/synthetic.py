"""Synthetic tagged sentences of realistic size for the speed benchmark
(``TaskSpec.synthetic``)."""

from __future__ import annotations

import random
from typing import Any

from tasks.common.spans import spans_to_tags
from tasks.common.synthetic_text import spans, vocabulary, words
from tasks.core import Synthetic
from tasks.ner.data import TaggedSentence

#: Token counts and entities per sentence, drawn uniformly (inclusive).
SENTENCE, ENTITIES = (8, 20), (0, 3)


def examples(recipe: Any, split: str, count: int, rng: random.Random) -> list[TaggedSentence]:
    """``count`` sentences with whole entities of 1-3 tokens in the recipe's tag encoding (or
    plain tags drawn from its labels for POS-like data)."""
    vocab = vocabulary(recipe)
    types = sorted({label.split("-", 1)[1] for label in recipe.labels if "-" in label})
    out: list[TaggedSentence] = []
    for i in range(count):
        tokens = words(rng, vocab, SENTENCE)
        if recipe.encoding is None or not types:  # plain tags (POS-like data)
            tags = tuple(rng.choices(recipe.labels, k=len(tokens)))
        else:
            entities = spans(rng, len(tokens), rng.randint(*ENTITIES), 3, lambda: rng.choice(types))
            tags = tuple(spans_to_tags(len(tokens), entities, recipe.encoding))
        out.append(TaggedSentence(tokens, tags, i + 1, f"synthetic.{split}"))
    return out


#: The paper preset reads the embedded GloVe 6B 50-d: nothing to stand in for.
SYNTHETIC = Synthetic(examples)
