"""Synthetic SNLI pairs of realistic size for the speed benchmark (``TaskSpec.synthetic``)."""

from __future__ import annotations

import random
from typing import Any

from tasks.common.synthetic_text import vocabulary, words
from tasks.core import Synthetic
from tasks.snli.data import SnliExample

#: Token counts drawn uniformly (inclusive).
PREMISE, HYPOTHESIS = (8, 20), (5, 11)


def examples(recipe: Any, split: str, count: int, rng: random.Random) -> list[SnliExample]:
    """``count`` pairs with labels drawn from the recipe's."""
    vocab = vocabulary(recipe)
    out: list[SnliExample] = []
    for i in range(count):
        premise = words(rng, vocab, PREMISE)
        hypothesis = words(rng, vocab, HYPOTHESIS)
        label = rng.choice(recipe.labels)
        out.append(
            SnliExample(
                f"{split}-{i}", " ".join(premise), " ".join(hypothesis), label, premise, hypothesis
            )
        )
    return out


#: The paper preset's GloVe 840B (300-d) file replaced by random vectors of its width.
SYNTHETIC = Synthetic(examples, stand_ins={"paper": ("word_vectors=random:300",)})
