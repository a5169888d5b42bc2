"""The NER DEMO set: the committed files load (IOB1, four types); the generator is
deterministic, types names by corpus cues and holds some names out of training."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tasks.common.spans import tags_to_spans
from tasks.ner import demo
from tasks.ner.data import detect_scheme, read_columns


def test_demo_set_loads_from_the_committed_files(tmp_path: Path) -> None:
    folder = demo.ensure_demo(cache=tmp_path)
    assert "NOT CoNLL-2003" in (folder / demo.NOTICE_FILE).read_text()
    assert demo.ensure_demo(cache=tmp_path) == folder  # unpacked once
    counts = {}
    for split, name in demo.FILES.items():
        sentences = list(read_columns(folder / name))
        assert len(sentences) == demo.DEFAULT_SIZES[split]
        assert detect_scheme(s.tags for s in sentences) == "IOB1"
        counts[split] = {sp.label for s in sentences for sp in tags_to_spans(s.tags, "IOB1")}
    assert counts["train"] == {"PER", "LOC", "ORG", "MISC"}


def test_demo_generator_is_deterministic_and_types_by_corpus_cues(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(demo, "HOLD_OUT_BELOW", 10**9)  # every name may be held out
    people, places = ["Emma", "Harriet", "Moses", "Elinor"], ["Jerusalem", "Babylon", "Egypt"]
    rng = random.Random(0)
    corpus = []
    for _ in range(4000):
        a, b = rng.sample(people, 2)
        corpus.append(
            f"And {a} said unto {b} that the house in {rng.choice(places)} was good .".split()
        )
    sizes = {"train": 50, "dev": 20, "test": 20}
    first = demo.generate(corpus, 0, sizes)
    assert first == demo.generate(corpus, 0, sizes)
    tagged = {
        " ".join(tokens[s.start : s.end + 1]): s.label
        for split in sizes
        for tokens, tags in first[split]
        for s in tags_to_spans(tags, "IOB1")
    }
    assert {tagged[p] for p in people} == {"PER"} and {tagged[p] for p in places} == {"LOC"}
    assert "And" not in tagged  # sentence-initial, lowercase elsewhere: not name-like
    assert [len(first[s]) for s in sizes] == [50, 20, 20]
    held_out = {n for n in tagged if demo._held_out(n, 1)}
    assert held_out  # the hash holds some of these names out...
    train_names = {
        " ".join(tokens[s.start : s.end + 1])
        for tokens, tags in first["train"]
        for s in tags_to_spans(tags, "IOB1")
    }
    assert not held_out & train_names  # ...and training never sees them
