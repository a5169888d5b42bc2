"""Atomic writes (bilm.files): content replaced, or the old file intact and no temporary left."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from bilm.files import (
    atomic_path,
    atomic_write,
    save_torch,
    temporary_sibling,
    write_bytes,
    write_json,
    write_text,
)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_writes_replace_the_content(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    target.write_text("old")
    assert write_text(target, "new\n") == target
    assert target.read_text() == "new\n"
    write_bytes(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    write_json(target, {"a": [1, 2]}, indent=2)
    assert target.read_text().endswith("}\n") and json.loads(target.read_text()) == {"a": [1, 2]}
    write_json(target, {"b": 1})
    assert target.read_text() == '{"b": 1}'
    assert names(tmp_path) == ["f.txt"]


def test_save_torch_round_trip(tmp_path: Path) -> None:
    target = tmp_path / "c.pt"
    save_torch({"x": torch.arange(3)}, target)
    assert torch.equal(torch.load(target, weights_only=True)["x"], torch.arange(3))
    assert names(tmp_path) == ["c.pt"]


def test_error_in_the_block_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError, match="boom"), atomic_write(target) as handle:
        handle.write(b"half of the new")
        raise RuntimeError("boom")
    assert target.read_bytes() == b"old"
    with pytest.raises(RuntimeError, match="boom"), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("boom")
    assert target.read_bytes() == b"old"
    assert names(tmp_path) == ["f.bin"]


def test_new_file_appears_only_when_the_block_ends(tmp_path: Path) -> None:
    target = tmp_path / "new.bin"
    with atomic_write(target) as handle:
        handle.write(b"data")
        assert not target.exists()
    assert target.read_bytes() == b"data"
    with atomic_path(tmp_path / "named.bin") as tmp:
        assert tmp.parent == tmp_path and not tmp.exists()
        tmp.write_bytes(b"by name")
        assert not (tmp_path / "named.bin").exists()
    assert (tmp_path / "named.bin").read_bytes() == b"by name"


def test_temporary_names_are_hidden_siblings_and_differ(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    first, second = temporary_sibling(target), temporary_sibling(target)
    assert first != second
    assert first.parent == second.parent == tmp_path
    assert first.name.startswith(".out.json.tmp-")
    with atomic_write(target) as a, atomic_write(target) as b:  # two writers at once
        assert a.name != b.name
        a.write(b"a")
        b.write(b"b")
    assert target.read_bytes() == b"a"  # the last to finish wins; neither sees the other's file
    assert names(tmp_path) == ["out.json"]


# ------------------------------------------------------------------------------- a full disk
class FillingHandle:
    """A binary handle on which the disk fills after ``room`` bytes (``write`` raises ENOSPC,
    as a real file does), for :func:`torch.save` to write through."""

    def __init__(self, handle: Any, room: int) -> None:
        self.handle, self.room = handle, room

    def write(self, data: Any) -> int:
        size = memoryview(data).nbytes
        if size > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.room -= size
        return int(self.handle.write(data))

    def flush(self) -> None:
        self.handle.flush()


def filling_torch_save(monkeypatch: pytest.MonkeyPatch, room: int) -> None:
    """``torch.save`` to a handle whose disk fills after ``room`` bytes: torch then raises its
    own ``RuntimeError: [enforce fail at inline_container.cc] . unexpected pos``."""
    real = torch.save

    def save(obj: Any, handle: Any, *args: Any, **kwargs: Any) -> None:
        real(obj, FillingHandle(handle, room), *args, **kwargs)

    monkeypatch.setattr(torch, "save", save)


def test_a_full_disk_in_save_torch_names_the_path_and_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Torch's ``RuntimeError: [enforce fail …] unexpected pos`` said neither."""
    target = tmp_path / "c.pt"
    target.write_bytes(b"old")
    filling_torch_save(monkeypatch, room=1000)
    with pytest.raises(OSError) as info:
        save_torch({"x": torch.zeros(10_000)}, target)
    assert info.value.errno == errno.ENOSPC
    message = str(info.value)
    assert "\n" not in message and str(target) in message and "no space left" in message
    assert target.read_bytes() == b"old" and names(tmp_path) == ["c.pt"]


def test_a_full_disk_at_fsync_names_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f.txt"

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as info:
        write_text(target, "text")
    assert info.value.errno == errno.ENOSPC
    assert str(target) in str(info.value) and "no space left" in str(info.value)
    assert names(tmp_path) == []
