"""The one demo unpacker."""

from __future__ import annotations

import gzip
from pathlib import Path

from tasks.common.demo import content_hash, unpack_demo


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
    (out / "sub" / "a.txt").write_text("kept")  # a second use does not rewrite
    assert unpack_demo("toy", data, files, {"README": "DEMO"}, cache=tmp_path / "c") == out
    assert (out / "sub" / "a.txt").read_text() == "kept"
    (data / "a.txt.gz").write_bytes(gzip.compress(b"beta\n"))  # changed data: a new folder
    assert unpack_demo("toy", data, files, cache=tmp_path / "c") != out
