"""Synthetic SRL sentences of realistic size for the speed benchmark (``TaskSpec.synthetic``)."""

from __future__ import annotations

import random
from typing import Any

from tasks.common.conll2012 import Sentence, SrlFrame
from tasks.common.spans import Span
from tasks.common.synthetic_text import vocabulary, words
from tasks.core import Synthetic
from tasks.srl.data import SrlExample, srl_instances

#: Token counts and predicates per sentence, drawn uniformly (inclusive).
SENTENCE, PREDICATES = (15, 35), (1, 4)


def examples(recipe: Any, split: str, count: int, rng: random.Random) -> list[Any]:
    """At least ``count`` predicate instances (whole sentences; training keeps the first
    ``count``). The recipe's sentences of ``split`` are replaced by the synthetic ones: its
    scorer regroups the instances over them."""
    vocab = vocabulary(recipe)
    roles = sorted({t[2:] for t in recipe.labels if t.startswith("B-")} - {"V"}) or ["ARG0"]
    sentences: list[Sentence] = []
    instances = 0
    while instances < count:
        tokens = words(rng, vocab, SENTENCE)
        n = len(tokens)
        frames = []
        for p in sorted(rng.sample(range(n), rng.randint(*PREDICATES))):
            arguments = [Span(p, p, "V")]
            if p > 0:
                arguments.insert(0, Span(rng.randrange(p), p - 1, rng.choice(roles)))
            if p < n - 1:
                arguments.append(Span(p + 1, rng.randrange(p + 1, n), rng.choice(roles)))
            frames.append(SrlFrame(p, tuple(arguments)))
        dash = ("-",) * n
        sentences.append(
            Sentence(
                "nw/synthetic/00/0000",
                0,
                len(sentences),
                0,
                len(sentences) + 1,
                tokens,
                dash,
                ("*",) * n,
                dash,
                dash,
                dash,
                dash,
                (),
                tuple(frames),
            )
        )
        instances += len(frames)
    recipe.sentences[split] = sentences
    out = [SrlExample(instance, split) for instance in srl_instances(sentences)]
    return out[:count] if split == "train" else out


#: The paper preset's GloVe 6B 100-d file replaced by random vectors of its width.
SYNTHETIC = Synthetic(examples, stand_ins={"paper": ("word_vectors=random:100",)})
