"""FeatureCache storage: the reduced form, direct lookups, budget + LRU eviction, full disk and
corruption (checksums)."""

from __future__ import annotations

import errno
import os
import pickle
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import Tensor

from tasks.features import feature_cache as fc
from tasks.features.feature_cache import (
    CacheError,
    CacheSpaceError,
    CorruptCacheError,
    FeatureCache,
    parse_budget,
    resolve_budget,
)
from tasks.representations import Layers, Representation, build_representation
from tests.contract.helpers import ODD_SENTENCES, SENTENCES, write_tiny_checkpoint

DATA = SENTENCES + ODD_SENTENCES + [["one"], ["two", "words"], [], SENTENCES[0]]


class Toy:
    """A cheap deterministic representation: layer 0 from the word alone, layer 1 a running sum.

    Args:
        seed: weights (changes the fingerprint).
        dim: layer width.
        unstable: add a position-dependent wobble to layer 0 while still declaring it
            context-free (a kernel whose rounding depends on the batch): the cache must stay exact.
        declare: the ``context_free_layers`` it declares.
    """

    name = "toy"
    trainable = False
    num_layers = 2
    state_policy = "reset"

    def __init__(
        self, seed: int = 0, dim: int = 8, unstable: bool = False, declare: int = 1
    ) -> None:
        self.seed, self.output_dim, self.unstable = seed, dim, unstable
        self.context_free_layers = declare
        self.calls = 0

    def featurize(self, sentences: Sequence[Sequence[str]]) -> dict[str, Tensor]:
        time = max((len(s) for s in sentences), default=0)
        ids = torch.zeros(len(sentences), time, dtype=torch.long)  # (batch, time), 0 = padding
        for b, s in enumerate(sentences):
            for t, w in enumerate(s):
                ids[b, t] = zlib.crc32(w.encode("utf-8", "surrogatepass")) % 100_003 + 1
        return {"ids": ids}

    def __call__(self, features: Mapping[str, Tensor]) -> Layers:
        self.calls += 1
        ids = features["ids"]  # (batch, time)
        mask = ids > 0  # (batch, time)
        freq = torch.arange(1, self.output_dim + 1, dtype=torch.float32)  # (dim,)
        token = torch.sin(ids[..., None].float() * freq / 7.0 + self.seed)  # (batch, time, dim)
        if self.unstable:
            wobble = torch.arange(ids.shape[1], dtype=torch.float32)[None, :, None]  # (1, T, 1)
            token = token + 1e-3 * wobble
        token = token * mask[..., None]  # (batch, time, dim)
        context = torch.cumsum(token, dim=1) * mask[..., None]  # (batch, time, dim)
        return Layers(torch.stack([token, context]), mask)  # (2, batch, time, dim)

    def fingerprint(self) -> str:
        return f"toy-{self.seed}-{self.output_dim}-{self.unstable}"

    def to(self, device: Any) -> Toy:
        return self


def _old_lookup(cache: FeatureCache, indices: Sequence[int]) -> Tensor:
    """The previous implementation (fp32 copy, then a permuted copy) over a full-form entry."""
    lengths = cache.lengths[list(indices)]
    time = int(lengths.max()) if len(indices) else 0
    out = np.zeros((len(indices), time, cache.num_layers, cache.output_dim), np.float32)
    for row, i in enumerate(indices):
        out[row, : lengths[row]] = cache.layers[cache.offsets[i] : cache.offsets[i + 1]]
    return torch.from_numpy(out).permute(2, 0, 1, 3).contiguous()  # (L, B, T, D)


ORDERS = [list(range(len(DATA))), [3, 0, 8, 1, 4, 2], [len(DATA) - 2], [2], []]


@pytest.fixture(scope="module")
def elmo(tmp_path_factory: pytest.TempPathFactory) -> Representation:
    return build_representation(
        "elmo", checkpoint=write_tiny_checkpoint(tmp_path_factory.mktemp("c"))
    )


# ------------------------------------------------------------------------ reduced form
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_reduced_form_lookups_are_bit_identical_to_the_full_form(
    elmo: Representation, tmp_path: Path, dtype: str
) -> None:
    assert elmo.context_free_layers == 1  # type: ignore[attr-defined]
    reduced = FeatureCache.build(
        elmo, DATA, tmp_path / "r", dtype=dtype, batch_size=3, progress=False
    )
    full = FeatureCache.build(
        elmo, DATA, tmp_path / "f", dtype=dtype, batch_size=3, progress=False, reduced=False
    )
    assert (reduced.form, full.form) == ("reduced", "full")
    assert reduced.path.name == full.path.name  # the form is not part of the key
    for order in ORDERS:
        a, b = reduced.lookup(order), full.lookup(order)
        assert torch.equal(a.tensors, b.tensors) and torch.equal(a.mask, b.mask)
        assert torch.equal(b.tensors, _old_lookup(full, order))  # same as before the change
    distinct = len({w for s in DATA for w in s})
    assert len(reduced.words) == distinct  # the token layer is stored once per word
    stored = reduced.context.nbytes + reduced.words.nbytes + reduced.token_rows.nbytes
    assert stored < full.layers.nbytes


def test_reduced_form_stays_exact_when_the_declared_layer_is_not_bit_stable(
    tmp_path: Path,
) -> None:
    toy = Toy(unstable=True)
    reduced = FeatureCache.build(toy, DATA, tmp_path / "r", batch_size=2, progress=False)
    full = FeatureCache.build(
        toy, DATA, tmp_path / "f", batch_size=2, progress=False, reduced=False
    )
    assert len(reduced.words) > len({w for s in DATA for w in s})  # variants were kept
    for order in ORDERS:
        assert torch.equal(reduced.lookup(order).tensors, full.lookup(order).tensors)


def test_context_free_layers_must_be_declared_sensibly(tmp_path: Path) -> None:
    assert FeatureCache.build(Toy(declare=0), DATA, tmp_path, progress=False).form == "full"
    with pytest.raises(CacheError, match="context_free_layers"):
        FeatureCache.build(Toy(declare=3), DATA, tmp_path, progress=False)
    everything = FeatureCache.build(Toy(seed=1, declare=2), DATA, tmp_path, progress=False)
    want = Toy(seed=1)
    order = ORDERS[1]
    direct = want(want.featurize([DATA[i] for i in order])).tensors.half().float()
    assert everything.context.shape[1] == 0 and torch.equal(
        everything.lookup(order).tensors, direct
    )


def test_lookup_pads_with_exact_zeros_and_pickles(elmo: Representation, tmp_path: Path) -> None:
    cache = FeatureCache.build(elmo, DATA, tmp_path, progress=False)
    got = cache.lookup([1, 2, 0])
    assert (got.tensors[:, ~got.mask] == 0).all() and got.tensors.dtype == torch.float32
    clone = pickle.loads(pickle.dumps(cache))
    assert torch.equal(clone.lookup([1, 2, 0]).tensors, got.tensors)


# ------------------------------------------------------------------------------ budget
@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("20GB", 20 * 10**9),
        ("500 MB", 500 * 10**6),
        ("1.5TiB", int(1.5 * 2**40)),
        ("2kib", 2048),
        ("1000000", 1_000_000),
        (123, 123),
        ("50%", 0.5),
        ("100%", 1.0),
        ("unlimited", None),
        (None, 0.5),
    ],
)
def test_parse_budget(text: str | int | None, value: int | float | None) -> None:
    assert parse_budget(text) == value


@pytest.mark.parametrize("text", ["", "GB", "-1GB", "20 parsecs", "0%", "150%", "0.5", -1, 0.5])
def test_parse_budget_rejects(text: Any) -> None:
    with pytest.raises(ValueError):
        parse_budget(text)


def test_percentage_budget_counts_free_disk_and_the_cache(tmp_path: Path) -> None:
    FeatureCache.build(Toy(), DATA, tmp_path, progress=False)
    held = sum(p.stat().st_size for d in tmp_path.iterdir() for p in d.iterdir())
    free = fc._free_bytes(tmp_path)
    assert abs(resolve_budget("50%", tmp_path) - (free + held) // 2) < 1 << 20  # disk noise
    assert resolve_budget("10MB", tmp_path / "not" / "yet") == 10**7


# ----------------------------------------------------------------------- LRU eviction
def _entry_bytes(cache: FeatureCache) -> int:
    return sum(p.stat().st_size for p in cache.path.iterdir())


def test_lru_evicts_whole_least_recent_entries_but_never_one_in_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = [DATA[:-1] + [[f"variant{v}"]] for v in range(4)]
    first = FeatureCache.build(Toy(), data[0], tmp_path, progress=False)
    size = _entry_bytes(first)
    budget = int(2.6 * size)  # room for two entries
    first.close()
    second = FeatureCache.build(Toy(), data[1], tmp_path, progress=False, budget=budget)
    second.close()
    os.utime(first.path / "used", (1, 1))  # long ago ...
    os.utime(second.path / "used", (2, 2))
    again = FeatureCache.build(Toy(), data[0], tmp_path, progress=False, budget=budget)
    assert again.reused  # ... but this reopening makes `first` the most recent
    again.close()
    capsys.readouterr()
    third = FeatureCache.build(Toy(), data[2], tmp_path, progress=False, budget=budget)
    err = capsys.readouterr().err
    assert "evicted" in err and second.path.name in err and first.path.name not in err
    assert {p.name for p in tmp_path.iterdir()} == {first.path.name, third.path.name}

    # `third` is open (in use by this run): the least recent one, yet only `first` may go
    os.utime(third.path / "used", (1, 1))
    fourth = FeatureCache.build(Toy(), data[3], tmp_path, progress=False, budget=budget)
    err = capsys.readouterr().err
    assert first.path.name in err and third.path.name not in err
    assert {p.name for p in tmp_path.iterdir()} == {third.path.name, fourth.path.name}
    assert torch.equal(third.lookup([0, 1]).tensors, fourth.lookup([0, 1]).tensors)


def test_an_entry_over_budget_changes_nothing(tmp_path: Path) -> None:
    kept = FeatureCache.build(Toy(), DATA, tmp_path, progress=False)
    kept.close()
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(CacheSpaceError, match="nothing was changed") as info:
        FeatureCache.build(Toy(seed=2), DATA, tmp_path, progress=False, budget="1KB")
    assert info.value.errno == errno.ENOSPC
    with pytest.raises(CacheSpaceError, match="evictable"):  # all in use: cannot make room
        held = FeatureCache(kept.path)
        budget = int(1.5 * _entry_bytes(held))
        FeatureCache.build(Toy(seed=2), DATA, tmp_path, progress=False, budget=budget)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# -------------------------------------------------------------------------- full disk
@pytest.mark.parametrize("where", ["pwrite", "fallocate"])
def test_a_full_disk_mid_write_leaves_the_previous_state_intact(
    elmo: Representation, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    previous = FeatureCache.build(elmo, DATA[:5], tmp_path, progress=False)
    expected = previous.lookup(range(5)).tensors
    files = {p: p.read_bytes() for p in previous.path.iterdir() if p.name != "used"}
    calls = {"n": 0}
    real_pwrite = os.pwrite

    def pwrite(fd: int, data: Any, offset: int) -> int:
        calls["n"] += 1
        if calls["n"] > 4:  # a few rows made it, then the disk filled up
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_pwrite(fd, data, offset)

    def fallocate(fd: int, offset: int, size: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    if where == "pwrite":
        monkeypatch.setattr(fc.os, "pwrite", pwrite)
    else:
        monkeypatch.setattr(fc.os, "posix_fallocate", fallocate)
    with pytest.raises(CacheSpaceError, match="existing entries are intact") as info:
        FeatureCache.build(elmo, DATA, tmp_path, batch_size=2, progress=False)
    assert info.value.errno == errno.ENOSPC
    assert where != "pwrite" or calls["n"] > 4
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == [previous.path.name]  # no partial entry left
    assert {p: p.read_bytes() for p in previous.path.iterdir() if p.name != "used"} == files
    reopened = FeatureCache(previous.path)  # verifies every checksum
    assert torch.equal(reopened.lookup(range(5)).tensors, expected)
    assert FeatureCache.build(elmo, DATA, tmp_path, progress=False).lookup([0]).tensors.numel()


# ------------------------------------------------------------------------- corruption
class CountingToy(Toy):
    """A :class:`Toy` counting its calls (it declares the same context-free layer)."""


def _flip(path: Path, where: float) -> None:
    data = bytearray(path.read_bytes())
    data[min(len(data) - 1, int(where * len(data)))] ^= 0x10
    path.write_bytes(bytes(data))


def _truncate(path: Path, where: float) -> None:
    with open(path, "r+b") as f:
        f.truncate(int(where * path.stat().st_size))


def _spy_load(loaded: list[str]) -> Any:
    """``np.load`` that records what it opens."""
    real_load = np.load

    def spy(file: Any, *args: Any, **kwargs: Any) -> Any:
        loaded.append(str(file))
        return real_load(file, *args, **kwargs)

    return spy


@pytest.mark.parametrize("form", ["reduced", "full"])
@pytest.mark.parametrize("damage", ["flip-header", "flip-data", "truncate"])
def test_a_corrupted_entry_is_detected_never_read_and_rebuilt(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    form: str,
    damage: str,
) -> None:
    reduced = form == "reduced"
    cache = FeatureCache.build(CountingToy(), DATA, tmp_path, progress=False, reduced=reduced)
    expected = cache.lookup(range(len(DATA))).tensors
    names = [n for n in cache.meta["files"]] + ["meta.json"]
    cache.close()
    for name in names:
        path = cache.path / name
        pristine = path.read_bytes()
        if damage == "truncate":
            _truncate(path, 0.6)
        else:
            _flip(path, 0.02 if damage == "flip-header" else 0.9)
        loaded: list[str] = []
        monkeypatch.setattr(fc.np, "load", _spy_load(loaded))
        with pytest.raises(CorruptCacheError, match="checksum|bytes|unreadable"):
            FeatureCache(cache.path)
        assert loaded == []  # nothing of the damaged entry was read
        monkeypatch.undo()
        rep = CountingToy()
        rebuilt = FeatureCache.build(rep, DATA, tmp_path, progress=False, reduced=reduced)
        assert rep.calls > 0 and not rebuilt.reused, name
        assert "rebuilding" in capsys.readouterr().err
        assert torch.equal(rebuilt.lookup(range(len(DATA))).tensors, expected)
        assert (rebuilt.path / name).read_bytes() == pristine
        rebuilt.close()
    assert [p.name for p in tmp_path.iterdir()] == [cache.path.name]


def test_an_old_format_entry_is_rebuilt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cache = FeatureCache.build(Toy(), DATA, tmp_path, progress=False)
    cache.close()
    meta = cache.path / "meta.json"
    meta.write_text(meta.read_text().replace(fc.FORMAT, "elmo-bench-feature-cache/1"))
    rep = Toy()
    again = FeatureCache.build(rep, DATA, tmp_path, progress=False)
    assert rep.calls > 0 and not again.reused and "format" in capsys.readouterr().err


# ------------------------------------------------------------------------------ runner
def test_make_represent_passes_the_budget(tmp_path: Path) -> None:
    from experiments.run.runner import RunOptions, make_represent

    assert RunOptions(cache_budget="20GB").cache_budget == "20GB"
    with pytest.raises(CacheSpaceError):
        make_represent(Toy(), DATA, tmp_path, progress=False, cache_budget="1KB")  # type: ignore[arg-type]
    represent = make_represent(Toy(), DATA, tmp_path, progress=False, cache_budget="unlimited")  # type: ignore[arg-type]
    toy = Toy()
    got = represent([DATA[1], DATA[0]])
    want = toy(toy.featurize([DATA[1], DATA[0]]))
    torch.testing.assert_close(got.tensors, want.tensors, atol=2e-3, rtol=1e-3)


def test_make_represent_runs_a_carry_representation_live(tmp_path: Path) -> None:
    """A ``carry`` representation's vectors depend on the batches before them: it is never
    cached (no entry is written, every call reaches the representation)."""
    from experiments.run.runner import make_represent

    class Carrying(Toy):
        state_policy = "carry"

    rep = Carrying()
    represent = make_represent(rep, DATA, tmp_path, progress=False)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == [] and rep.calls == 0
    got = represent([DATA[0]])
    assert rep.calls == 1
    torch.testing.assert_close(got.tensors, Toy()(Toy().featurize([DATA[0]])).tensors)
