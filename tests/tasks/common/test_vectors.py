"""Text embedding files converted once into a memory-mapped, content-keyed cache entry."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks.bench_glove import old_parse
from tasks.common import vectors
from tasks.common.vectors import converted, file_fingerprint, iter_text_vectors, open_vectors
from tasks.common.vocab import word_vectors
from tasks.representations import build_glove


def write_tricky(path: Path, n: int = 300, dim: int = 7) -> Path:
    """Header line, duplicates, cased/lowercased pairs, a word with spaces, odd decimals."""
    rng = np.random.default_rng(0)
    lines = [f"{n + 4} {dim}"]
    for i in range(n):
        values = rng.standard_normal(dim) * 10.0 ** rng.integers(-8, 8, dim)
        lines.append(f"w{i} " + " ".join(f"{v:.9g}" for v in values))
    lines += [
        "Paris " + " ".join(["1.000000059604644775390625000000001"] * dim),
        "paris " + " ".join(["-0"] + ["3.4028235e38"] * (dim - 1)),
        "w3 " + " ".join(["9"] * dim),  # a duplicate: the first occurrence wins
        ". . . " + " ".join(["1e-46"] * dim),  # a word with spaces (GloVe 840B)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_parsing_is_bit_identical_to_the_former_reader(tmp_path: Path) -> None:
    text = write_tricky(tmp_path / "v.txt")
    words, matrix = old_parse(text)
    blocks = list(iter_text_vectors(text, block_bytes=997))  # many small blocks
    assert [w for ws, _ in blocks for w in ws] == words
    assert np.concatenate([b for _, b in blocks]).tobytes() == matrix.tobytes()
    store = open_vectors(text, tmp_path / "cache", progress=False)
    assert store.words == words and store.matrix.tobytes() == matrix.tobytes()
    assert isinstance(store.matrix, np.memmap) and store.index["w3"] == 3


def test_word_vectors_and_glove_share_one_conversion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ELMO_BENCH_CACHE", str(tmp_path / "cache"))
    text = write_tricky(tmp_path / "v.txt")
    words, matrix = old_parse(text)
    vocab = ["Paris", "PARIS", "w3", "W5", ". . .", "nowhere"]
    table = word_vectors(str(text), vocab, lowercase=False)
    first = {w: i for i, w in reversed(list(enumerate(words)))}
    expected = np.zeros((len(vocab) + 2, matrix.shape[1]), np.float32)
    for i, w in enumerate(vocab):  # cased word, else its lowercase form, else zeros
        row = first.get(w, first.get(w.lower()))
        if row is not None:
            expected[i + 2] = matrix[row]
    assert table.numpy().tobytes() == expected.tobytes()
    entries = list((tmp_path / "cache" / "vectors").iterdir())
    assert [e.name for e in entries] == [file_fingerprint(text)]
    glove = build_glove(path=text)  # the same entry, no second conversion
    assert list((tmp_path / "cache" / "vectors").iterdir()) == entries
    ids = glove.featurize([["paris", "w3"]])["word_ids"]
    out = glove(glove.featurize([["paris", "w3"]])).tensors[0, 0]
    assert ids.tolist() == [[first["paris"] + 1, first["w3"] + 1]]
    assert out.numpy().tobytes() == matrix[[first["paris"], first["w3"]]].tobytes()
    lowered = word_vectors(str(text), ["paris", "w3"], lowercase=True)
    assert torch.equal(lowered[2:], torch.from_numpy(matrix[[first["paris"], first["w3"]]]))


def test_fingerprint_is_path_independent_and_content_sensitive(tmp_path: Path) -> None:
    text = write_tricky(tmp_path / "a.txt")
    copy = tmp_path / "elsewhere" / "renamed.txt"
    copy.parent.mkdir()
    shutil.copyfile(text, copy)
    assert file_fingerprint(copy) == file_fingerprint(text)
    folder, _ = converted(text, tmp_path / "cache", progress=False)
    assert converted(copy, tmp_path / "cache", progress=False)[0] == folder  # no new conversion
    data = bytearray(text.read_bytes())
    data[len(data) // 2] ^= 1  # same size, one bit in the middle
    copy.write_bytes(bytes(data))
    assert file_fingerprint(copy) != file_fingerprint(text)
    big = tmp_path / "big.bin"  # large files are sampled, a middle change inside a sample counts
    big.write_bytes(bytes(8 << 20))
    before = file_fingerprint(big)
    with big.open("r+b") as handle:
        handle.seek((1 << 20) + ((8 << 20) - (2 << 20)) // 63)
        handle.write(b"x")
    assert file_fingerprint(big) != before


def test_damaged_entries_are_detected_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "SAMPLE_ROWS", 4)  # rows 0, 101, 202, 303 checked on open
    text = write_tricky(tmp_path / "v.txt")
    cache = tmp_path / "cache"
    folder, _ = converted(text, cache, progress=False)
    good = (folder / "vectors.npy").read_bytes()
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["rows"] == 304 and meta["dim"] == 7 and meta["source"] == str(text.resolve())
    (folder / "vectors.npy").write_bytes(good[:-8])  # truncated
    converted(text, cache, progress=False)
    assert (folder / "vectors.npy").read_bytes() == good and "damaged" in caplog.text
    flipped = bytearray(good)
    flipped[vectors._HEADER_BYTES + 3] ^= 0xFF  # same size, a sampled row (row 0) changed
    (folder / "vectors.npy").write_bytes(bytes(flipped))
    converted(text, cache, progress=False)
    assert (folder / "vectors.npy").read_bytes() == good
    flipped = bytearray(good)
    flipped[vectors._HEADER_BYTES + 28 * 5 + 3] ^= 0xFF  # row 5: only the full check sees it
    (folder / "vectors.npy").write_bytes(bytes(flipped))
    converted(text, cache, progress=False)
    assert (folder / "vectors.npy").read_bytes() == bytes(flipped)
    converted(text, cache, verify=True, progress=False)
    assert (folder / "vectors.npy").read_bytes() == good
    assert not [p for p in cache.iterdir() if p.name.startswith(".")]  # no temp folders left


def test_errors_keep_line_numbers(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("a 1 2\nb 1 x\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:2: non-numeric"):
        open_vectors(bad, tmp_path / "cache", progress=False)
    bad.write_text("a 1 2\nb 1\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:2: 1 values, expected 2"):
        open_vectors(bad, tmp_path / "cache", progress=False)
    assert not list((tmp_path / "cache").iterdir())  # nothing half-written
    with pytest.raises(FileNotFoundError, match="no such file"):
        open_vectors(tmp_path / "missing.txt", tmp_path / "cache")
