"""The download path, exercised on local file URLs (no network here)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from bilm.pretrained import PUBLISHED, ChecksumError, download, fetch_published


def test_download_verifies_and_caches(tmp_path: Path) -> None:
    src = tmp_path / "src" / "weights.hdf5"
    src.parent.mkdir()
    src.write_bytes(b"x" * 3_000_000)
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    seen: list[int] = []
    path, got = download(src.as_uri(), tmp_path / "cache", digest, lambda n, t: seen.append(n))
    assert got == digest and path.read_bytes() == src.read_bytes() and seen[-1] == 3_000_000
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["weights.hdf5"]  # no temporary
    src.write_bytes(b"changed")  # cached copy is reused without fetching
    assert download(src.as_uri(), tmp_path / "cache", digest)[1] == digest


def test_checksum_mismatch_leaves_nothing(tmp_path: Path) -> None:
    src = tmp_path / "w.hdf5"
    src.write_bytes(b"abc")
    with pytest.raises(ChecksumError, match="sha256"):
        download(src.as_uri(), tmp_path / "cache", "0" * 64)
    assert list((tmp_path / "cache").iterdir()) == []


def test_registry_names() -> None:
    assert PUBLISHED["original"].weights.url.endswith(
        "elmo_2x4096_512_2048cnn_2xhighway_weights.hdf5"
    )
    with pytest.raises(KeyError, match="known: original"):
        fetch_published("nope", "/nonexistent")
