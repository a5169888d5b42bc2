"""DEMO SRL set: the labelling rules on hand-made sentences, determinism, the CoNLL-2012 output
the reader accepts, the committed files and their unpacking without ../shared."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from tasks.common.demo import gzip_text
from tasks.common.io import ReadStats
from tasks.srl import demo
from tasks.srl.data import load_split_sentences, srl_instances
from tests.conftest import shared_path


def _frames(sentence: str) -> dict[str, dict[str, str]]:
    """Predicate word → {argument text: label} for a sentence of space-separated tokens."""
    tokens = sentence.split()
    return {
        tokens[f.predicate]: {" ".join(tokens[s : e + 1]): label for s, e, label in f.spans}
        for f in demo.label_sentence(tokens)
    }


def test_core_arguments_modifiers_and_shared_subjects() -> None:
    frames = _frames("Edmund smiled and shook his head in the garden .")
    assert frames["smiled"] == {"Edmund": "ARG0"}
    assert frames["shook"] == {"Edmund": "ARG0", "his head": "ARG1", "in the garden": "ARGM-LOC"}
    frames = _frames("The fame of him will not soon reach the city in the morning .")
    assert frames["reach"] == {
        "The fame of him": "ARG0",
        "will": "ARGM-MOD",
        "not": "ARGM-NEG",
        "soon": "ARGM-TMP",
        "the city": "ARG1",
        "in the morning": "ARGM-TMP",
    }


def test_passive_relative_and_saying() -> None:
    assert _frames("The letter was written by Emma .")["written"] == {
        "The letter": "ARG1",
        "by Emma": "ARG0",
    }
    assert _frames("I saw the man who loved her .")["loved"] == {
        "the man": "ARG0",
        "who": "R-ARG0",
        "her": "ARG1",
    }
    assert _frames("And he said unto Moses , Go down to Egypt .")["said"] == {
        "he": "ARG0",
        "unto Moses": "ARG2",
        "Go down to Egypt": "ARG1",
    }


def test_nouns_after_determiners_are_not_predicates() -> None:
    assert "love" not in _frames("She felt his love for them .")
    assert demo.find_predicates("to England they went".split()) == [3]


def _toy_corpus(path: Path) -> Path:
    lines = [
        "Edmund smiled and shook his head in the garden .",
        "And he said unto Moses , Go down to Egypt .",
        "The letter was written by Emma in the morning .",
        "I saw the man who loved her .",
    ]
    (path / "train.txt").write_text("\n".join(lines * 1000) + "\n", encoding="utf-8")
    return path


def test_generation_is_deterministic_and_the_reader_accepts_it(tmp_path: Path) -> None:
    corpus = _toy_corpus(tmp_path)
    sizes = {"train": 30, "development": 8, "test": 8}
    first = demo.write(corpus, tmp_path / "a", sizes)
    second = demo.write(corpus, tmp_path / "b", sizes)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    out = demo.ensure_demo(cache=tmp_path / "cache", data_dir=tmp_path / "a")
    counts = {}
    for split, folder in (("train", "train"), ("dev", "development"), ("test", "test")):
        sentences = load_split_sentences(out, split)
        assert len(sentences) == sizes[folder]
        assert all(s.document_id.startswith("demo/") for s in sentences)
        stats = ReadStats()
        counts[split] = len(list(srl_instances(sentences, stats)))
        assert counts[split] == stats.examples > 0
    with pytest.raises(ValueError, match="asked"):
        demo.generate(corpus, {"train": 10**6, "development": 1, "test": 1})


def test_committed_files_unpack_without_shared(tmp_path: Path) -> None:
    """A clone without ../shared: the committed gzip files are all the demo needs."""
    copy = tmp_path / "demo_data"
    shutil.copytree(demo.DATA_DIR, copy)
    out = demo.ensure_demo(cache=tmp_path / "cache", data_dir=copy)
    assert out.name == f"srl-demo-{demo.content_hash(copy)}"
    assert demo.ensure_demo(cache=tmp_path / "cache", data_dir=copy) == out  # cached
    for split in demo.SPLITS:
        text = (out / split / demo.FILE_NAME).read_text(encoding="utf-8")
        assert text == gzip.decompress((copy / f"{split}.v4_gold_conll.gz").read_bytes()).decode()
        assert text.startswith("#begin document (demo/")
    sizes = {s: len(load_split_sentences(out, s)) for s in ("train", "dev", "test")}
    assert sizes == {
        "train": demo.DEFAULT_SIZES["train"],
        "dev": demo.DEFAULT_SIZES["development"],
        "test": demo.DEFAULT_SIZES["test"],
    }
    assert sum(p.stat().st_size for p in copy.iterdir()) < 1_000_000  # a few hundred KB


@pytest.mark.shared
def test_committed_files_are_the_generators_output() -> None:
    corpus = shared_path("data", "corpus")
    texts = demo.generate(corpus)
    for split, text in texts.items():
        committed = (demo.DATA_DIR / f"{split}.v4_gold_conll.gz").read_bytes()
        assert gzip_text(text) == committed, split
