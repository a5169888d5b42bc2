"""The one demo unpacker."""

from __future__ import annotations

import gzip
import logging
from pathlib import Path

import pytest

from tasks.common.demo import content_hash, unpack_demo
from tasks.sst5.demo import ensure_demo as sst5_demo


def test_unpacks_once_into_a_content_named_folder(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt.gz").write_bytes(gzip.compress(b"alpha\n"))
    (data / "NOTE").write_text("plain")
    files = {"sub/a.txt": "a.txt.gz", "NOTE": "NOTE"}
    out = unpack_demo("toy", data, files, {"README": "DEMO"}, cache=tmp_path / "c")
    assert out.name == f"toy-demo-{content_hash(data, files.values())}"
    assert (out / "sub" / "a.txt").read_text() == "alpha\n"
    assert (out / "NOTE").read_text() == "plain" and (out / "README").read_text() == "DEMO"
    stamp = (out / "sub" / "a.txt").stat().st_mtime_ns  # an intact copy is not rewritten
    assert unpack_demo("toy", data, files, {"README": "DEMO"}, cache=tmp_path / "c") == out
    assert (out / "sub" / "a.txt").stat().st_mtime_ns == stamp
    (data / "a.txt.gz").write_bytes(gzip.compress(b"beta\n"))  # changed data: a new folder
    assert unpack_demo("toy", data, files, cache=tmp_path / "c") != out


def test_a_changed_cached_copy_is_rebuilt_from_the_bundled_files_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt.gz").write_bytes(gzip.compress(b"alpha\nbeta\n"))
    files = {"a.txt": "a.txt.gz"}
    out = unpack_demo("toy", data, files, {"README": "DEMO"}, cache=tmp_path / "c")
    (out / "a.txt").write_text("alpha\nBETA\n")  # an edited label
    (out / "README").write_text("")  # a damaged notice
    with caplog.at_level(logging.WARNING, logger="tasks.common.demo"):
        assert unpack_demo("toy", data, files, {"README": "DEMO"}, cache=tmp_path / "c") == out
    assert (out / "a.txt").read_text() == "alpha\nbeta\n"
    assert (out / "README").read_text() == "DEMO"
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2 and all("\n" not in line for line in warned)
    assert str(out / "a.txt") in warned[0] and str(data / "a.txt.gz") in warned[0]
    assert str(out / "README") in warned[1]


def test_an_edited_sst5_demo_dev_file_is_restored_before_it_is_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = sst5_demo(cache=tmp_path)
    bundled = (folder / "dev.txt").read_bytes()
    lines = bundled.decode("utf-8").splitlines(keepends=True)
    for i in (0, 1):  # two root labels changed, as in the audit
        lines[i] = f"({(int(lines[i][1]) + 1) % 5}{lines[i][2:]}"
    (folder / "dev.txt").write_text("".join(lines), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="tasks.common.demo"):
        assert sst5_demo(cache=tmp_path) == folder
    assert (folder / "dev.txt").read_bytes() == bundled
    assert any(str(folder / "dev.txt") in r.getMessage() for r in caplog.records)


def test_an_installation_without_the_demo_files_says_what_is_missing_and_how_to_go_on(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt.gz").write_bytes(gzip.compress(b"alpha\n"))
    files = {"a.txt": "a.txt.gz", "b.txt": "b.txt.gz"}  # b.txt.gz was not installed
    with pytest.raises(FileNotFoundError, match="DEMO set of toy is not in this installation") as e:
        unpack_demo("toy", data, files, cache=tmp_path / "c")
    assert str(data / "b.txt.gz") in str(e.value) and "--data DIR" in str(e.value)
    assert str(data / "a.txt.gz") not in str(e.value)
    assert not (tmp_path / "c").exists()  # nothing unpacked
