"""DEMO pair set: generator determinism, labelling, official format, the edits, the committed
files and their unpacking."""

from __future__ import annotations

import gzip
import json
import random
from collections import Counter
from pathlib import Path

import pytest

from tasks.snli import demo
from tasks.snli.data import SnliReader, binary_parse_tokens
from tests.conftest import shared_path

NAMES = ("Emma", "Harriet", "Knightley", "Moses", "Aaron", "Jacob")
NOUNS = ("house", "letter", "garden", "temple", "river", "morning", "city")
MODIFIERS = ("old", "little", "great", "happy", "young")


def toy_corpus(path: Path, lines: int = 3600) -> Path:
    """A made-up corpus in the corpus format (one tokenised sentence per line)."""
    rng = random.Random(0)
    out = []
    for _ in range(lines):
        a, b = rng.sample(NAMES, 2)
        neg = " not" if rng.random() < 0.2 else ""
        out.append(
            f"Then {a} saw that the {rng.choice(MODIFIERS)} {rng.choice(NOUNS)} was{neg} "
            f"{rng.choice(('good', 'happy', 'strong'))} , and {b} came to the "
            f"{rng.choice(NOUNS)} with {rng.choice(('two', 'seven'))} friends in the "
            f"{rng.choice(NOUNS)} ."
        )
    (path / "train.txt").write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def test_deterministic_balanced_and_official_format(tmp_path: Path) -> None:
    corpus = demo.read_corpus(toy_corpus(tmp_path))
    sizes = (40, 10, 10)
    made = demo.generate(corpus, 3, sizes)
    assert made == demo.generate(corpus, 3, sizes) and made != demo.generate(corpus, 4, sizes)
    lines: dict[str, set[str]] = {}
    for split, size in zip(demo.SPLITS, sizes, strict=True):
        records = made[split]
        assert len(records) == 3 * size and len({r["pairID"] for r in records}) == 3 * size
        assert Counter(r["gold_label"] for r in records) == {
            "entailment": size,
            "neutral": size,
            "contradiction": size,
        }
        lines[split] = {str(r["captionID"]) for r in records}
        for r in records:
            assert str(r["captionID"]).startswith("DEMO ") and r["annotator_labels"] == [
                r["gold_label"]
            ]
            premise = binary_parse_tokens(str(r["sentence1_binary_parse"]))
            hypothesis = binary_parse_tokens(str(r["sentence2_binary_parse"]))
            assert premise != hypothesis and r["demo_rule"]
            assert demo.detokenize(premise) == r["sentence1"]
            assert demo.detokenize(hypothesis) == r["sentence2"]
        by_premise = Counter(str(r["pairID"])[:-2] for r in records)
        assert set(by_premise.values()) == {3}  # one hypothesis of each label per premise
    assert not lines["train"] & lines["dev"] and not lines["dev"] & lines["test"]


def test_cli_writes_gzip_files_the_reader_accepts(tmp_path: Path) -> None:
    corpus = toy_corpus(tmp_path)
    out = tmp_path / "out"
    args = [
        "--corpus",
        str(corpus),
        "--out",
        str(out),
        "--train",
        "20",
        "--dev",
        "5",
        "--test",
        "5",
    ]
    assert demo.main(args) == 0
    first = [(out / f"{name}.gz").read_bytes() for name in demo.FILES]
    assert demo.main(args) == 0  # byte-identical rebuild (gzip mtime 0)
    assert first == [(out / f"{name}.gz").read_bytes() for name in demo.FILES]
    folder = demo.ensure_demo(tmp_path / "cache", out)
    counts = [len(list(SnliReader(folder / name))) for name in demo.FILES]
    assert counts == [60, 15, 15]
    with pytest.raises(ValueError, match="gives only"):
        demo.generate(demo.read_corpus(corpus), 0, (5000, 1, 1))


def test_edits(tmp_path: Path) -> None:
    lex = demo.Lexicon(demo.read_corpus(toy_corpus(tmp_path)))
    assert {"old", "little"} <= lex.modifiers and "garden" in lex.nouns
    assert {"Emma", "Moses"} <= lex.name_set
    rng = random.Random(0)
    toks = tuple("Then Emma saw that the old house was not good , and Moses came .".split())
    removed = demo.negate(toks, random.Random(1), lex, "corpus")  # removal preferred (0.8)
    assert removed is not None and "not" not in removed[0]
    plain = tuple(t for t in toks if t != "not")
    inserted = demo.negate(plain, random.Random(1), lex, "corpus")
    assert inserted is not None and inserted[0].count("not") == 1
    swapped = demo.swap_roles(toks, rng, lex, "corpus")
    assert swapped is not None and sorted(swapped[0]) == sorted(toks) and swapped[0] != toks
    shorter = demo.delete_modifier(toks, rng, lex, "corpus")
    assert shorter is not None and shorter[0] == tuple(t for t in toks if t != "old")
    an = demo.delete_modifier(tuple("He saw a little owl in it .".split()), rng, lex, "corpus")
    assert an is not None and an[0][:4] == ("He", "saw", "an", "owl")  # article follows the word
    assert demo.binary_parse(["A", "b", "c"]) == "( A ( b c ) )"
    assert demo.detokenize(["He", "did", "n't", "go", ",", "then", "."]) == "He didn't go, then."


def test_committed_files_unpack_and_read(tmp_path: Path) -> None:
    folder = demo.ensure_demo(tmp_path)
    assert folder.name == f"snli-demo-{demo.content_hash()}"
    for name, size in zip(
        demo.FILES, (demo.DEFAULT_TRAIN, demo.DEFAULT_DEV, demo.DEFAULT_TEST), strict=True
    ):
        examples = list(SnliReader(folder / name))
        assert len(examples) == 3 * size
        assert Counter(e.label for e in examples) == {
            "entailment": size,
            "neutral": size,
            "contradiction": size,
        }
    first = json.loads(
        gzip.decompress((demo.DATA_DIR / f"{demo.FILES[1]}.gz").read_bytes()).splitlines()[0]
    )
    assert first["pairID"].startswith("demo-dev-") and first["captionID"].startswith("DEMO ")
    assert demo.ensure_demo(tmp_path) == folder  # second use: already unpacked


@pytest.mark.shared
def test_committed_files_are_the_generator_output(tmp_path: Path) -> None:
    paths = demo.write(shared_path("data", "corpus"), tmp_path)
    for path in paths:
        assert path.read_bytes() == (demo.DATA_DIR / path.name).read_bytes(), path.name
