"""Synthetic SQuAD questions of realistic size for the speed benchmark (``TaskSpec.synthetic``)."""

from __future__ import annotations

import random
from typing import Any

from tasks.common.synthetic_text import joined, vocabulary, words
from tasks.core import Synthetic
from tasks.squad.data import Answer, SquadExample

#: Token counts drawn uniformly (inclusive): paragraphs, questions; questions per paragraph.
CONTEXT, QUESTION, QUESTIONS_PER_CONTEXT = (100, 180), (7, 15), 4


def examples(recipe: Any, split: str, count: int, rng: random.Random) -> list[SquadExample]:
    """``count`` questions, :data:`QUESTIONS_PER_CONTEXT` per paragraph, each answered by a span
    of 1-4 paragraph tokens."""
    vocab = vocabulary(recipe)
    out: list[SquadExample] = []
    context: tuple[str, ...] = ()
    text = ""
    offsets: tuple[tuple[int, int], ...] = ()
    for i in range(count):
        if i % QUESTIONS_PER_CONTEXT == 0:
            context = words(rng, vocab, CONTEXT)
            text, offsets = joined(context)
        question = words(rng, vocab, QUESTION)
        first = rng.randrange(len(context))
        last = min(len(context) - 1, first + rng.randint(0, 3))
        start, end = offsets[first][0], offsets[last][1]
        out.append(
            SquadExample(
                f"{split}-{i}",
                "synthetic",
                text,
                " ".join(question),
                context,
                offsets,
                question,
                (Answer(text[start:end], start),),
                (first, last),
            )
        )
    return out


#: The paper preset's GloVe 840B (300-d) file replaced by random vectors of its width.
SYNTHETIC = Synthetic(examples, stand_ins={"paper": ("word_vectors=random:300",)})
