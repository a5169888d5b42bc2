"""Official artifacts from files: published ELMo by name (cache, pinned digest, offline error)
and GloVe text converted once into a memory-mapped matrix keyed by the file's fingerprint."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch

from bilm import pretrained
from tasks.representations import build_glove
from tasks.representations.glove import converted_glove, glove_fingerprint


def write_glove(path: Path) -> Path:
    path.write_text("The 1 2 3\nthe 4 5 6\ncat 0.5 0.5 0.5\n", encoding="utf-8")
    return path


def test_glove_text_is_converted_once_and_keeps_case(tmp_path: Path) -> None:
    text = write_glove(tmp_path / "glove.840B.300d.txt")
    cache = tmp_path / "cache"
    npy, vocab = converted_glove(text, cache)
    assert npy.parent.name == glove_fingerprint(text)  # content-keyed, path-independent
    stamp = npy.stat().st_mtime_ns
    assert converted_glove(text, cache) == (npy, vocab) and npy.stat().st_mtime_ns == stamp
    glove = build_glove(path=text, cache_dir=cache)  # cased: 840B keeps "The" and "the" apart
    layers = glove(glove.featurize([["The", "the", "dog"]]))
    torch.testing.assert_close(
        layers.tensors[0, 0], torch.tensor([[1.0, 2, 3], [4, 5, 6], [0, 0, 0]])
    )
    assert isinstance(np.load(npy, mmap_mode="r"), np.memmap)
    text.write_text("The 7 8 9\n", encoding="utf-8")  # a changed file gets a new conversion
    assert converted_glove(text, cache)[0] != npy


def test_published_elmo_is_cached_pinned_and_offline_errors_name_url_and_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "server"
    source.mkdir()
    (source / "a_options.json").write_text("{}")
    (source / "a_weights.hdf5").write_bytes(b"weights")
    model = pretrained.PublishedModel(
        pretrained.PublishedFile((source / "a_options.json").as_uri()),
        pretrained.PublishedFile((source / "a_weights.hdf5").as_uri()),
        "test",
    )
    monkeypatch.setitem(pretrained.PUBLISHED, "test", model)
    cache = tmp_path / "cache"
    options, weights = pretrained.published_files("test", cache)
    assert weights.read_bytes() == b"weights"
    assert (cache / "a_weights.hdf5.sha256").read_text().strip() == pretrained.sha256_of(weights)
    weights.write_bytes(b"corrupt")  # a damaged cache file is fetched again ...
    assert pretrained.published_files("test", cache)[1].read_bytes() == b"weights"
    (source / "a_weights.hdf5").write_bytes(b"changed upstream")  # ... and must match the pin
    weights.write_bytes(b"corrupt")
    with pytest.raises(pretrained.ChecksumError):
        pretrained.published_files("test", cache)

    def offline(*args: object, **kwargs: object) -> None:
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(FileNotFoundError) as error:
        pretrained.published_files("original", tmp_path / "empty")
    message = str(error.value)
    assert pretrained.PUBLISHED["original"].options.url in message
    assert str(tmp_path / "empty" / "elmo_2x4096_512_2048cnn_2xhighway_options.json") in message
    assert "--elmo OPTIONS.json WEIGHTS.hdf5" in message
