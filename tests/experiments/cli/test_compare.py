"""``python -m experiments compare``: the worked example of docs/representations.md."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from experiments.cli import main
from tests.conftest import REPO
from tests.experiments.helpers import cli_dirs
from tests.experiments.toy_task import registered

DOCS = REPO / "docs" / "representations.md"


def docs_example(folder: Path) -> list[str]:
    """Write the docs' class to ``folder/my_reps.py``; return the docs' compare arguments."""
    text = DOCS.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    (block,) = [b for b in blocks if "class CharHashRepresentation" in b]
    (folder / "my_reps.py").write_text(block, encoding="utf-8")
    (command,) = re.findall(r"^PYTHONPATH=\. python -m experiments (compare .*)$", text, re.M)
    return shlex.split(command)


def test_docs_compare_example_on_the_toy_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = docs_example(tmp_path)
    argv[argv.index("--tasks") + 1] = "toy"
    with registered(tmp_path / "toy-demo"):
        assert main([*argv, "--set", "train.epochs=2", *cli_dirs(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "CharHashRepresentation (my_reps) vs ELMo (dev; preset mini)" in out
    (delta,) = [t for t in out.splitlines() if t.startswith("| ↳ Δ vs ELMo")]  # under Toy's row
    assert "(Holm" in delta.strip("|").split("|")[3]  # the difference and its Holm p
    (test,) = [t for t in out.splitlines() if t.startswith("   - Toy (")]  # the test in full
    assert (
        "CharHashRepresentation (my_reps) vs ELMo: Δ " in test and "(p=" in test and "CI [" in test
    )
    assert "Layer weights, toy (softmax s_j): ELMo input [" in out
    assert "CharHashRepresentation (my_reps) input [" in out  # two layers: its own mix
    assert "dim=64" in out and "paired bootstrap" in out


def test_bad_representations_are_refused_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, message in (
        (["--repr", "bogus"], "unknown representation 'bogus'"),
        (["--repr", "no_such_module:X"], "cannot import 'no_such_module'"),
        (["--repr", "bilm-random", "--repr-set", "nope=1"], "unknown option(s) ['nope']"),
        (["--repr", "elmo"], "both 'ELMo'"),
        (["--repr", "bilm-random", "--tasks", "nope"], "unknown task(s) ['nope']"),
    ):
        assert main(["compare", *argv, *cli_dirs(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err, err
    assert not (tmp_path / "store").exists() and not (tmp_path / "work").exists()


@pytest.mark.slow
def test_docs_compare_example_verbatim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The docs' command as printed (SST-5 DEMO, one seed): minutes."""
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main([*docs_example(tmp_path), *cli_dirs(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "SST-5" in out and "(p=" in out and "Layer weights, sst5" in out
