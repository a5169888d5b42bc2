"""Synthetic SST sentences of realistic size for the speed benchmark (``TaskSpec.synthetic``)."""

from __future__ import annotations

import random
from typing import Any

from tasks.common.synthetic_text import vocabulary, words
from tasks.core import Synthetic
from tasks.sst5.data import TextExample

#: Token counts drawn uniformly (inclusive).
SENTENCE = (12, 26)


def examples(recipe: Any, split: str, count: int, rng: random.Random) -> list[TextExample]:
    """``count`` sentences with labels drawn from the recipe's."""
    vocab = vocabulary(recipe)
    return [
        TextExample(i + 1, words(rng, vocab, SENTENCE), rng.randrange(len(recipe.labels)))
        for i in range(count)
    ]


#: The paper preset's GloVe 840B (300-d) file replaced by random vectors of its width.
SYNTHETIC = Synthetic(examples, stand_ins={"paper": ("word_vectors=random:300",)})
