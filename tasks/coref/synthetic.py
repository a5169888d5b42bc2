"""Synthetic coreference documents of realistic size for the speed benchmark
(``TaskSpec.synthetic``)."""

from __future__ import annotations

import random
from typing import Any

from tasks.common.synthetic_text import spans, vocabulary, words
from tasks.core import Synthetic
from tasks.coref.data import GENRES, CorefDocument

#: Sentences per document and tokens per sentence (drawn uniformly, inclusive).
SENTENCES, SENTENCE = 20, (14, 26)


def examples(recipe: Any, split: str, count: int, rng: random.Random) -> list[CorefDocument]:
    """``count`` documents of :data:`SENTENCES` sentences by two alternating speakers, one
    mention per 8 tokens on average, in clusters of three or more."""
    vocab = vocabulary(recipe)
    documents: list[CorefDocument] = []
    for i in range(count):
        sentences = tuple(words(rng, vocab, SENTENCE) for _ in range(SENTENCES))
        speakers = tuple((f"speaker{s % 2}",) * len(tokens) for s, tokens in enumerate(sentences))
        tokens = sum(len(sentence) for sentence in sentences)
        mentions = [(s.start, s.end) for s in spans(rng, tokens, tokens // 8, 3, lambda: "")]
        rng.shuffle(mentions)
        groups = max(1, len(mentions) // 3)
        clusters = tuple(tuple(sorted(mentions[g::groups])) for g in range(groups))
        genre = rng.choice(GENRES)
        documents.append(
            CorefDocument(
                f"{genre}/synthetic/00/{split}_{i:04d}", 0, genre, sentences, speakers, clusters
            )
        )
    return documents


#: The paper preset's GloVe 840B (300-d) and Turian 50-d files replaced by random vectors of
#: their widths.
SYNTHETIC = Synthetic(
    examples, stand_ins={"paper": ("word_vectors=random:300", "turian_vectors=random:50")}
)
