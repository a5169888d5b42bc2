"""FeatureCache: reuse, invalidation on either fingerprint, atomic build, fp16/fp32 round trip."""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import Tensor

from tasks.features.feature_cache import CacheError, FeatureCache, data_fingerprint
from tasks.representations import Layers, Representation, build_representation
from tests.contract.helpers import ODD_SENTENCES, SENTENCES, write_tiny_checkpoint
from tests.tasks.common.fakes import Counting

DATA = SENTENCES + ODD_SENTENCES + [["one"], ["two", "words"], []]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("ckpt")
    return write_tiny_checkpoint(folder, seed=0), write_tiny_checkpoint(folder, seed=1)


@pytest.fixture
def elmo(checkpoints: tuple[Path, Path]) -> Representation:
    return build_representation("elmo", checkpoint=checkpoints[0])


def _visible(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if not p.name.startswith("."))


@pytest.mark.parametrize(("dtype", "atol"), [("float32", 1e-6), ("float16", 2e-3)])
def test_lookup_equals_the_representation(
    elmo: Representation, tmp_path: Path, dtype: str, atol: float
) -> None:
    cache = FeatureCache.build(elmo, DATA, tmp_path, dtype=dtype, batch_size=3, progress=False)
    assert len(cache) == len(DATA) and cache.dtype == dtype
    assert cache.num_tokens == sum(map(len, DATA)) and cache.form == "reduced"
    assert cache.context.shape == (cache.num_tokens, 2, 16)  # layer 0 is stored per word
    order = [3, 0, 8, 1, 4, 2]  # arbitrary order, with empty sentences
    got = cache.lookup(order)
    want = elmo(elmo.featurize([DATA[i] for i in order]))
    assert got.tensors.dtype == torch.float32 and got.tensors.shape == want.tensors.shape
    assert torch.equal(got.mask, want.mask)
    torch.testing.assert_close(got.tensors, want.tensors, atol=atol, rtol=1e-3)
    assert cache.lookup([2]).tensors.shape == (3, 1, 0, 16)  # an empty sentence alone
    with pytest.raises(IndexError):
        cache.lookup([len(DATA)])


def test_second_build_is_a_hit(elmo: Representation, tmp_path: Path) -> None:
    first = FeatureCache.build(elmo, DATA, tmp_path, progress=False)
    counting = Counting(elmo)
    second = FeatureCache.build(counting, DATA, tmp_path, progress=False)  # type: ignore[arg-type]
    assert second.reused and not first.reused
    assert second.path == first.path and counting.calls == 0
    assert _visible(tmp_path) == [first.path.name]
    assert first.path == FeatureCache.folder_for(elmo, DATA, tmp_path)


def test_either_fingerprint_change_rebuilds(
    elmo: Representation, checkpoints: tuple[Path, Path], tmp_path: Path
) -> None:
    base = FeatureCache.build(elmo, DATA, tmp_path, progress=False)
    other_data = FeatureCache.build(elmo, DATA[:-1] + [["changed"]], tmp_path, progress=False)
    other_weights = build_representation("elmo", checkpoint=checkpoints[1])
    other_rep = FeatureCache.build(other_weights, DATA, tmp_path, progress=False)
    other_dtype = FeatureCache.build(elmo, DATA, tmp_path, dtype=torch.float32, progress=False)
    paths = {c.path for c in (base, other_data, other_rep, other_dtype)}
    assert len(paths) == 4 and not any(c.reused for c in (other_data, other_rep, other_dtype))
    assert other_data.representation_fingerprint == base.representation_fingerprint
    assert other_data.data_fingerprint != base.data_fingerprint
    assert other_rep.data_fingerprint == base.data_fingerprint
    assert other_rep.representation_fingerprint != base.representation_fingerprint


def test_data_fingerprint_sees_token_boundaries() -> None:
    assert data_fingerprint([["a b"]]) != data_fingerprint([["a", "b"]])
    assert data_fingerprint([["a"], []]) != data_fingerprint([["a"]])
    assert data_fingerprint([["\ud800"]]) == data_fingerprint([["\ud800"]])


class _Exploding:
    """Fails on its second batch, like a crash mid-build."""

    def __init__(self, inner: Representation) -> None:
        self.inner, self.calls = inner, 0
        self.name, self.num_layers, self.output_dim = inner.name, inner.num_layers, inner.output_dim
        self.trainable, self.featurize, self.fingerprint = False, inner.featurize, inner.fingerprint
        self.state_policy, self.context_free_layers = inner.state_policy, 0  # the full form

    def __call__(self, features: Mapping[str, Tensor]) -> Layers:
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("simulated crash")
        return self.inner(features)


def test_a_crash_mid_build_leaves_no_visible_cache(elmo: Representation, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="simulated crash"):
        FeatureCache.build(_Exploding(elmo), DATA, tmp_path, batch_size=2, progress=False)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []  # temp folder removed too
    stale = tmp_path / ".tmp-killed-build"  # what a SIGKILL would leave behind
    (stale / "layers.npy").parent.mkdir()
    (stale / "layers.npy").write_bytes(b"partial")
    cache = FeatureCache.build(elmo, DATA, tmp_path, batch_size=2, progress=False)
    assert not cache.reused and _visible(tmp_path) == [cache.path.name]
    with pytest.raises(CacheError, match="not a feature cache"):
        FeatureCache(stale)


def test_refuses_carry_trainable_and_empty(checkpoints: tuple[Path, Path], tmp_path: Path) -> None:
    carry = build_representation("elmo", checkpoint=checkpoints[0], state="carry")
    with pytest.raises(CacheError, match="'carry'"):
        FeatureCache.build(carry, DATA, tmp_path, progress=False)
    trainable = build_representation("elmo", checkpoint=checkpoints[0], trainable=True)
    with pytest.raises(CacheError, match="trainable"):
        FeatureCache.build(trainable, DATA, tmp_path, progress=False)
    with pytest.raises(CacheError, match="no layers"):
        FeatureCache.build(build_representation("none"), DATA, tmp_path, progress=False)
    assert not tmp_path.exists() or list(tmp_path.iterdir()) == []


def test_float16_overflow_is_an_error(tmp_path: Path) -> None:
    from tasks.representations import GloveRepresentation

    huge = GloveRepresentation(["big"], np.full((1, 2), 1e6, dtype=np.float32))
    with pytest.raises(OverflowError, match="float32"):
        FeatureCache.build(huge, [["big"]], tmp_path, progress=False)
    cache = FeatureCache.build(huge, [["big"]], tmp_path, dtype="float32", progress=False)
    assert cache.lookup([0]).tensors.max().item() == 1e6


def test_pickles_without_the_data(elmo: Representation, tmp_path: Path) -> None:
    cache = FeatureCache.build(elmo, DATA, tmp_path, progress=False)
    expected = cache.lookup([0, 1]).tensors
    blob = pickle.dumps(cache)
    assert len(blob) < 4096
    torch.testing.assert_close(pickle.loads(blob).lookup([0, 1]).tensors, expected)


def test_feeds_the_injector(elmo: Representation, tmp_path: Path) -> None:
    from tasks.features.inject import Injector, MixSpec

    cache = FeatureCache.build(elmo, DATA, tmp_path, dtype="float32", progress=False)
    injector = Injector(elmo, frozenset({"input"}), MixSpec(), dropout=0.0).eval()
    cached = injector(cache.lookup([0, 1]))["input"]
    direct = injector(injector.represent(elmo.featurize(DATA[:2])))["input"]
    torch.testing.assert_close(cached, direct, atol=1e-6, rtol=0)
