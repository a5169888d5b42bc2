"""The SST-5 DEMO set: loads from the committed files alone, is labelled DEMO, is balanced over
the roots, and (with ../shared) is exactly what the generator writes."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import pytest

from tasks.sst5.data import SstReader, load_data
from tasks.sst5.demo import (
    DATA_DIR,
    FILES,
    NOTICE,
    NOTICE_FILE,
    binarise,
    bucket,
    ensure_demo,
    to_ptb,
    write,
)
from tests.conftest import shared_path


def test_ensure_demo_reads_only_the_committed_files(tmp_path: Path) -> None:
    folder = ensure_demo(cache=tmp_path)
    assert folder.parent == tmp_path and folder.name.startswith("sst5-demo-")
    assert "DEMO" in (folder / NOTICE_FILE).read_text() and "NOT the Stanford" in NOTICE
    assert ensure_demo(cache=tmp_path) == folder  # second use: already unpacked
    data = load_data(folder)
    assert data.layout == "trees"
    roots = {split: [ex.label for ex in v if ex.root] for split, v in data.splits.items()}
    assert {split: len(v) for split, v in roots.items()} == {"train": 2000, "dev": 500, "test": 500}
    for labels in roots.values():  # balanced roots
        assert set(Counter(labels).values()) == {len(labels) // 5}
    phrases = Counter(ex.label for ex in data.splits["train"] if not ex.root)
    assert phrases.most_common(1)[0][0] == 2  # phrases: mostly neutral, as in SST
    assert all(1 < len(ex.tokens) <= 30 for ex in data.splits["dev"])


def test_dev_and_test_text_is_unseen(tmp_path: Path) -> None:
    data = load_data(ensure_demo(cache=tmp_path))
    train = {ex.tokens for ex in data.splits["train"] if ex.root}
    for split in ("dev", "test"):
        assert not train & {ex.tokens for ex in data.splits[split]}


def test_bucket_thresholds() -> None:
    assert [bucket(x) for x in (-1, -0.5, -0.49, -0.05, 0.0, 0.05, 0.051, 0.49, 0.5, 1)] == [
        0,
        0,
        1,
        2,
        2,
        2,
        3,
        3,
        4,
        4,
    ]


def test_binarise_and_tree_format(tmp_path: Path) -> None:
    tokens = ["Love", "is", "kind", ",", "but", "war", "is", "cruel", "."]
    nodes = binarise(tokens)
    assert nodes[0] == ((0, 9), (0, 8), (8, 9))  # the final stop is split off at the root
    assert nodes[1] == ((0, 8), (0, 3), (3, 8))  # then at the comma nearest the middle
    assert len(nodes) == 2 * len(tokens) - 1
    line = to_ptb(["a", "(", "b", ")"], lambda toks: len(toks) % 5)
    path = tmp_path / "t.txt"
    path.write_text(line + "\n", encoding="utf-8")
    tree = next(iter(SstReader(path)))
    assert tree.tokens == ("a", "-LRB-", "b", "-RRB-") and tree.label == 4


@pytest.mark.slow
@pytest.mark.shared
def test_committed_files_are_the_generator_output(tmp_path: Path) -> None:
    corpus = shared_path("data", "corpus")
    pytest.importorskip("vaderSentiment")
    write(corpus, tmp_path)
    for name in FILES:
        committed = (DATA_DIR / f"{name}.gz").read_bytes()
        assert (tmp_path / f"{name}.gz").read_bytes() == committed, name
        assert gzip.decompress(committed).decode("utf-8").count("\n") in (500, 2000)
    assert (tmp_path / NOTICE_FILE).read_text() == (DATA_DIR / NOTICE_FILE).read_text()
