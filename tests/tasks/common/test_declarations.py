"""The shared tails of every task's ``demo.py`` and ``peer.py``: declarations run by
:mod:`tasks.common.demo` and :mod:`tasks.common.peer`."""

from __future__ import annotations

import gzip
import importlib
import sys
import types
from pathlib import Path

import pytest

from tasks.common.demo import DemoCommand, DemoSet, content_hash, gzipped
from tasks.common.peer import GLOVE_ONLY, peer_adapter

TASKS = ("squad", "snli", "srl", "coref", "ner", "sst5")


def test_a_demo_set_names_and_unpacks_its_committed_files(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt.gz").write_bytes(gzip.compress(b"alpha\n"))
    demo = DemoSet("toy", data, gzipped(["a.txt"]), {"NOTE": "DEMO"})
    assert demo.committed == {"a.txt": "a.txt.gz"}
    assert demo.content_hash() == content_hash(data, ["a.txt.gz"])
    out = demo.ensure(tmp_path / "c")
    assert out == tmp_path / "c" / f"toy-demo-{demo.content_hash()}"
    assert (out / "a.txt").read_text() == "alpha\n" and (out / "NOTE").read_text() == "DEMO"
    other = tmp_path / "other"  # another folder of the same files: the same name
    other.mkdir()
    (other / "a.txt.gz").write_bytes((data / "a.txt.gz").read_bytes())
    assert demo.content_hash(other) == demo.content_hash()
    assert demo.ensure(tmp_path / "c", other) == out


@pytest.mark.parametrize("task", TASKS)
def test_every_task_declares_its_committed_demo_set(task: str) -> None:
    demo = importlib.import_module(f"tasks.{task}.demo")
    assert demo.DEMO.task == task and demo.DEMO.data_dir == demo.DATA_DIR
    assert all((demo.DATA_DIR / name).is_file() for name in demo.DEMO.committed.values())
    assert demo.content_hash() == content_hash(demo.DATA_DIR, demo.DEMO.committed.values())


def _command(written: list[tuple[str, str, int, dict[str, int]]], **kw: object) -> DemoCommand:
    def write(corpus: str, out: str, seed: int, sizes: dict[str, int]) -> list[Path]:
        written.append((corpus, out, seed, sizes))
        if sizes["train"] > 100:
            raise ValueError("the corpus gives only 100 train sentences")
        return [Path(out) / "train.gz"]

    return DemoCommand(
        "toy", "Write a toy set.", {"train": 10, "dev": 2}, "sentences", write, "DEMO", **kw
    )


def test_a_demo_command_parses_writes_and_prints(capsys: pytest.CaptureFixture[str]) -> None:
    written: list[tuple[str, str, int, dict[str, int]]] = []
    assert _command(written).main(["--corpus", "c", "--out", "o", "--seed", "3", "--dev", "5"]) == 0
    assert written == [("c", "o", 3, {"train": 10, "dev": 5})]
    assert capsys.readouterr().out == f"wrote {Path('o') / 'train.gz'} (DEMO)\n"
    with pytest.raises(SystemExit):  # no --seed without seed=True
        _command(written, seed=False).main(["--corpus", "c", "--out", "o", "--seed", "3"])
    assert _command(written, seed=False).main(["--corpus", "c", "--out", "o"]) == 0
    assert written[-1] == ("c", "o", 0, {"train": 10, "dev": 2})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dev", "0"], "--train and --dev must be >= 1"),
        (["--train", "200"], "the corpus gives only 100 train sentences"),
    ],
)
def test_a_demo_command_refuses_bad_sizes(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _command([], minimum=1).main(["--corpus", "c", "--out", "o", *args])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith(message)


def test_a_peer_adapter_takes_its_modules_five_names(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("toy_peer")
    module.SOURCE, module.CHANGES = "a file", ("a change",)
    module.write_data = lambda recipe, folder: {}
    module.config = lambda files, inputs, run, recipe: {}
    module.predictions = lambda outputs, examples: []
    monkeypatch.setitem(sys.modules, "toy_peer", module)
    peer = peer_adapter("toy_peer", model="m", packages=("p",), output_keys=("k",), metric_key="f1")
    assert (peer.source, peer.changes, peer.config) == ("a file", ("a change",), module.config)
    assert (peer.write_data, peer.predictions) == (module.write_data, module.predictions)
    assert (peer.overrides, peer.batch_size, peer.native_scale) == ((), None, 1.0)
    del module.predictions
    with pytest.raises(AttributeError):
        peer_adapter("toy_peer", model="m", packages=(), output_keys=(), metric_key="f1")


@pytest.mark.parametrize("task", TASKS)
def test_every_task_declares_its_peer_from_its_own_module(task: str) -> None:
    peer = importlib.import_module(f"tasks.{task}.peer")
    assert (peer.PEER.source, peer.PEER.changes) == (peer.SOURCE, peer.CHANGES)
    assert peer.PEER.write_data is peer.write_data and peer.PEER.config is peer.config
    assert peer.PEER.predictions is peer.predictions
    assert task == "ner" or peer.PEER.overrides[: len(GLOVE_ONLY)] == GLOVE_ONLY
