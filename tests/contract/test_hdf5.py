"""The ``hdf5`` representation beyond the R1–R6 contract (``TestHdf5`` in test_representations.py):
a file written by ``python -m bilm embed`` gives the ``elmo`` representation's layers, sentences
are matched by their text and refused when missing or of another length, the fingerprint follows
the content, and the layers go through the feature cache."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from bilm.__main__ import main as bilm_main
from bilm.pretrained import default_checkpoint_path
from tasks.features.feature_cache import FeatureCache
from tasks.representations import Hdf5FeaturesError, Layers, build_representation
from tests.conftest import REPO
from tests.contract.helpers import SENTENCES, write_hdf5_features

#: Sentences a whitespace-tokenized text file carries unchanged (an empty line included).
PLAIN = [*SENTENCES, ["A", "second", "sentence", ",", "with", "commas", "."]]


def _run(rep: object, sentences: list[list[str]]) -> Layers:
    return rep(rep.featurize(sentences))  # type: ignore[attr-defined,operator]


def _write(path: Path, datasets: dict[str, np.ndarray], index: dict[str, str]) -> Path:
    """A file in the embed layout with the given datasets and ``sentence_to_index``."""
    with h5py.File(path, "w") as sink:
        for key, data in datasets.items():
            sink.create_dataset(key, data=data, dtype="float32")
        sink.create_dataset("sentence_to_index", (1,), dtype=h5py.string_dtype())[0] = json.dumps(
            index
        )
    return path


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m bilm embed`` of :data:`PLAIN` with the shipped small biLM."""
    folder = tmp_path_factory.mktemp("embed")
    text = folder / "sentences.txt"
    text.write_text("".join(" ".join(s) + "\n" for s in PLAIN), encoding="utf-8")
    out = folder / "features.hdf5"
    argv = ["embed", "--input", str(text), "--output", str(out), "--quiet", "--device", "cpu"]
    assert bilm_main([*argv, "--batch-size", "2"]) == 0
    return out


def test_layers_equal_the_elmo_representation(embedded: Path) -> None:
    rep = build_representation("hdf5", path=embedded)
    elmo = build_representation("elmo", checkpoint=default_checkpoint_path())
    assert (rep.num_layers, rep.output_dim) == (elmo.num_layers, elmo.output_dim)
    ours, theirs = _run(rep, PLAIN), _run(elmo, PLAIN)
    assert torch.equal(ours.mask, theirs.mask)
    torch.testing.assert_close(ours.tensors, theirs.tensors, atol=1e-5, rtol=0)


def test_a_missing_sentence_is_an_error_naming_it_and_the_file(embedded: Path) -> None:
    rep = build_representation("hdf5", path=embedded)
    with pytest.raises(Hdf5FeaturesError, match=r"features\.hdf5: sentence 'The cat sat down'"):
        rep.featurize([["Hello", "world"], ["The", "cat", "sat", "down"]])


def test_a_sentence_of_another_length_is_an_error(tmp_path: Path) -> None:
    two, three = np.ones((2, 2, 4), np.float32), np.ones((2, 3, 4), np.float32)  # (L, n, D)
    path = _write(tmp_path / "f.hdf5", {"0": two, "1": three}, {"a b c": "0", "x y z": "1"})
    rep = build_representation("hdf5", path=path)
    with pytest.raises(Hdf5FeaturesError, match=r"f\.hdf5: sentence 'a b c' has 3 tokens but .*2"):
        _run(rep, [["a", "b", "c"]])  # the file's tokens were split otherwise
    with pytest.raises(Hdf5FeaturesError, match=r"'x y z' has 2 tokens but .*3"):
        _run(rep, [["x y", "z"]])  # same text, a token with a space: caught by the count


def test_layout_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        build_representation("hdf5", path=tmp_path / "missing.hdf5")
    with h5py.File(tmp_path / "bare.hdf5", "w") as sink:
        sink.create_dataset("0", data=np.zeros((3, 1, 2), np.float32))
    with pytest.raises(Hdf5FeaturesError, match=r"bare\.hdf5: no 'sentence_to_index'"):
        build_representation("hdf5", path=tmp_path / "bare.hdf5")
    path = _write(tmp_path / "gap.hdf5", {"0": np.zeros((3, 1, 2))}, {"a": "0", "b": "1"})
    with pytest.raises(Hdf5FeaturesError, match=r"gap\.hdf5: .*lacks: \['1'\]"):
        build_representation("hdf5", path=path)


def test_two_dimensional_datasets_are_one_layer(tmp_path: Path) -> None:
    """``bilm embed --layers top|average`` writes ``(tokens, dim)``."""
    data = np.arange(6, dtype=np.float32).reshape(2, 3)  # (tokens, dim)
    rep = build_representation(
        "hdf5", path=_write(tmp_path / "top.hdf5", {"0": data}, {"x y": "0"})
    )
    assert (rep.num_layers, rep.output_dim) == (1, 3)
    out = _run(rep, [["x", "y"], []])
    assert torch.equal(out.tensors[0, 0], torch.from_numpy(data))
    assert out.tensors.shape == (1, 2, 2, 3) and torch.count_nonzero(out.tensors[0, 1]) == 0


def test_fingerprint_follows_the_content_not_the_path_or_time(tmp_path: Path) -> None:
    data = {"0": np.ones((1, 1, 2), np.float32)}
    path = _write(tmp_path / "a.hdf5", data, {"x": "0"})
    first = build_representation("hdf5", path=path).fingerprint()
    copy = tmp_path / "b.hdf5"
    shutil.copyfile(path, copy)
    assert build_representation("hdf5", path=copy).fingerprint() == first
    stat = path.stat()
    with h5py.File(path, "r+") as handle:  # same size, same modification time, other values
        handle["0"][0, 0, 0] = 5.0
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size
    assert build_representation("hdf5", path=path).fingerprint() != first


def test_through_the_feature_cache_and_pickled(tmp_path: Path) -> None:
    elmo = build_representation("elmo", checkpoint=default_checkpoint_path())
    path = write_hdf5_features(tmp_path / "f.hdf5", elmo, PLAIN)
    rep = build_representation("hdf5", path=path)
    cache = FeatureCache.build(rep, PLAIN, tmp_path / "cache", progress=False, dtype="float32")
    direct = _run(rep, PLAIN)
    looked_up = cache.lookup(list(range(len(PLAIN))))
    torch.testing.assert_close(looked_up.tensors, direct.tensors, atol=0, rtol=0)
    copy = pickle.loads(pickle.dumps(rep))  # a DataLoader worker's copy opens its own file
    torch.testing.assert_close(_run(copy, PLAIN).tensors, direct.tensors, atol=0, rtol=0)


def test_importing_the_registry_does_not_import_h5py() -> None:
    code = "import sys, tasks.representations; sys.stderr.write(str('h5py' in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert done.stderr == "False"
