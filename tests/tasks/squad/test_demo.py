"""DEMO dataset: generator determinism, labelling, exact offsets, the committed files, unpacking."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from tasks.squad import demo
from tasks.squad.data import SquadReader
from tests.conftest import shared_path

NAMES = ("Emma", "Harriet", "Knightley", "Jerusalem", "Babylon", "Sussex", "Moses", "Congress")
WORDS = ("house", "letter", "garden", "people", "temple", "river", "promise", "morning", "city")


def toy_corpus(path: Path, lines: int = 3600) -> Path:
    """A made-up corpus in the corpus format (one tokenised sentence per line)."""
    rng = random.Random(0)
    out = []
    for _ in range(lines):
        name, other = rng.sample(NAMES, 2)
        out.append(
            f"And {name} said unto {other} , the {rng.choice(WORDS)} was {rng.choice(WORDS)} "
            f"in {rng.choice(NAMES)} in {rng.randint(1700, 2000)} , with "
            f"{rng.choice(('two', 'seven', '40'))} {rng.choice(WORDS)}s of her "
            f"{rng.choice(WORDS)} ."
        )
    (path / "train.txt").write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def questions(document: dict[str, object]) -> list[tuple[str, dict[str, object]]]:
    return [
        (paragraph["context"], qa)
        for article in document["data"]  # type: ignore[attr-defined]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]


def check(document: dict[str, object], split: str, size: int) -> None:
    """Labelling, sizes, unique ids and answers that are exact spans of the context."""
    assert document["version"] == "1.1"
    assert "NOT SQuAD" in document["demo_notice"]  # type: ignore[operator]
    assert "public-domain corpus" in document["demo_notice"]  # type: ignore[operator]
    assert all(a["title"].startswith("DEMO") for a in document["data"])  # type: ignore[attr-defined]
    items = questions(document)
    assert len(items) == size and len({qa["id"] for _, qa in items}) == size
    for context, qa in items:
        answers = qa["answers"]
        assert 1 <= len(answers) <= (3 if split == "dev" else 1)  # type: ignore[arg-type]
        for answer in answers:  # type: ignore[attr-defined]
            start = answer["answer_start"]
            assert answer["text"] and context[start : start + len(answer["text"])] == answer["text"]
        question = qa["question"]
        assert question.endswith("?") or question.startswith("Fill in the blank:")  # type: ignore[attr-defined]


def test_deterministic_labelled_and_exact_offsets(tmp_path: Path) -> None:
    corpus = demo.read_corpus(toy_corpus(tmp_path))
    train, dev = demo.generate(corpus, 7, 60, 30)
    assert (train, dev) == demo.generate(corpus, 7, 60, 30)
    assert demo.gzip_bytes(train) == demo.gzip_bytes(demo.generate(corpus, 7, 60, 30)[0])
    assert (train, dev) != demo.generate(corpus, 8, 60, 30)
    check(train, "train", 60)
    check(dev, "dev", 30)
    lines = {a["title"] for a in train["data"]} & {a["title"] for a in dev["data"]}  # type: ignore[index]
    assert not lines  # dev paragraphs come from other corpus lines than train paragraphs


def test_cli_writes_gzip_files_the_reader_accepts(tmp_path: Path) -> None:
    corpus = toy_corpus(tmp_path)
    out = tmp_path / "out"
    args = ["--corpus", str(corpus), "--out", str(out), "--train", "40", "--dev", "20"]
    assert demo.main(args) == 0
    first = [(out / f"{name}.gz").read_bytes() for name in demo.FILES]
    assert demo.main(args) == 0
    assert first == [(out / f"{name}.gz").read_bytes() for name in demo.FILES]  # byte-identical
    folder = demo.ensure_demo(tmp_path / "cache", out)
    assert folder.name == f"squad-demo-{demo.content_hash(out)}"
    for name, size in zip(demo.FILES, (40, 20), strict=True):
        reader = SquadReader(folder / name)
        examples = list(reader)
        assert reader.stats.examples == size and not reader.stats.skipped and not reader.repairs
        assert all(e.span_text(*e.span) == e.answers[0].text for e in examples)  # type: ignore[misc]


def test_bad_sizes(tmp_path: Path) -> None:
    corpus = demo.read_corpus(toy_corpus(tmp_path))
    with pytest.raises(ValueError, match=">= 0"):
        demo.generate(corpus, 0, -1, 0)
    with pytest.raises(ValueError, match="corpus gives only"):
        demo.generate(corpus, 0, 10**6, 0)


def test_committed_files_are_labelled_and_sized() -> None:
    for name, size in zip(demo.FILES, (demo.DEFAULT_TRAIN, demo.DEFAULT_DEV), strict=True):
        path = demo.DATA_DIR / f"{name}.gz"
        assert path.stat().st_size < 2_000_000
        document = json.loads(gzip.decompress(path.read_bytes()))
        check(document, name.split("-")[0], size)
        assert document["demo_generator"]["generator_version"] == demo.GENERATOR_VERSION


def test_ensure_demo_unpacks_once_into_a_hashed_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ELMO_BENCH_CACHE", str(tmp_path))
    folder = demo.ensure_demo()
    assert folder == tmp_path / f"squad-demo-{demo.content_hash()}"
    for name in demo.FILES:
        text = (folder / name).read_bytes()
        assert text == gzip.decompress((demo.DATA_DIR / f"{name}.gz").read_bytes())
    stamp = (folder / demo.FILES[0]).stat().st_mtime_ns
    assert demo.ensure_demo(tmp_path) == folder
    assert (folder / demo.FILES[0]).stat().st_mtime_ns == stamp


def test_committed_files_equal_the_generator_output(tmp_path: Path) -> None:
    """The committed files are exactly what the documented command writes (needs ../shared)."""
    corpus = shared_path("data", "corpus", "train.txt")
    demo.write(corpus.parent, tmp_path)
    for name in demo.FILES:
        committed = (demo.DATA_DIR / f"{name}.gz").read_bytes()
        assert (tmp_path / f"{name}.gz").read_bytes() == committed, (
            f"{name}.gz is stale: python -m tasks.squad.demo --corpus ../shared/data/corpus "
            "--out tasks/squad/demo_data"
        )
