"""Output names (docs/runs.md): a command's standard request keeps its plain file name
(the committed tables' names), any other request adds a short hash of its runs, so no request
overwrites another's table; re-rendering one request rewrites its own file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from experiments.cli import build_parser, main
from experiments.cli.analyses import REPORT_OUT, report_path
from experiments.cli.naming import output_stem, request_hash
from experiments.cli.sweep import train_specs
from tests.experiments.helpers import cli_dirs
from tests.experiments.toy_task import registered

HASHED = re.compile(r"-[0-9a-f]{8}-")


def test_request_hash_is_short_stable_and_order_free() -> None:
    assert request_hash(["b", "a", "a"]) == request_hash(["a", "b"])
    assert re.fullmatch(r"[0-9a-f]{8}", request_hash(["a"]))
    assert request_hash(["a"]) != request_hash(["b"])
    standard = lambda: ["a", "b"]  # noqa: E731
    assert output_stem("t-mini-demo", {"b", "a"}, standard, "demo") == "t-mini-demo"
    assert output_stem("t-mini-demo", {"a"}, standard, "demo") == f"t-mini-demo-{request_hash('a')}"
    # --exclude-dead changes the numbers, a data folder may share its name with another
    assert output_stem("t", {"a", "b"}, standard, "demo", exclude_dead=True) != "t"
    assert output_stem("t", {"a", "b"}, standard, "/data/conll") != "t"


def test_two_sweeps_with_as_many_runs_get_different_names(tmp_path: Path) -> None:
    def group(*argv: str) -> str:
        return train_specs(build_parser().parse_args(["sweep", "toy", *argv, *cli_dirs(tmp_path)]))[
            1
        ]

    with registered(tmp_path / "toy-demo"):
        smoke = group("--repr", "none", "--seeds", "0,1", "--limit", "20", "--max-epochs", "1")
        real = group("--repr", "none", "--seeds", "0,1")
        again = group("--repr", "none", "--seeds", "0,1")
    assert smoke.startswith("sweep-toy-demo-2runs-") and real.startswith("sweep-toy-demo-2runs-")
    assert smoke != real  # before: both sweep-toy-demo-2runs
    assert again == real  # the same request: the same file


def _tables(out: Path) -> list[str]:
    return sorted(p.name for p in (out / "tables").glob("*.md"))  # each with its .csv beside it


def test_render_options_do_not_overwrite_the_default_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dirs = ["--store", str(tmp_path / "store"), "--out", str(tmp_path / "out")]
    out = tmp_path / "out"
    assert main(["render", "table1", *dirs]) == 0
    assert _tables(out) == ["table1-mini-demo-table1.md"]  # the committed name, unchanged
    assert main(["render", "table1", "--set", "train.epochs=3", *dirs]) == 0
    assert main(["render", "table1", "--elmo", "published:original", *dirs]) == 0
    assert main(["render", "table1", "--seeds", "0", *dirs]) == 0
    names = _tables(out)
    assert len(names) == 4 and "table1-mini-demo-table1.md" in names
    assert all(HASHED.search(n) for n in names if n != "table1-mini-demo-table1.md")
    err = capsys.readouterr().err
    assert all(f"wrote {out / 'tables' / n}" in err for n in names)  # every path said
    assert main(["render", "table1", "--set", "train.epochs=3", *dirs]) == 0
    assert _tables(out) == names  # re-rendering a request rewrites its own file


def test_committed_requests_keep_their_names(tmp_path: Path) -> None:
    """The commands of noxfile.py's committed_results write the committed names (Tables 2 and
    3 with three seeds: their committed request); the default seeds then get a hash."""
    dirs = ["--store", str(tmp_path / "store"), "--out", str(tmp_path / "out")]
    assert main(["render", "table2", "--seeds", "0,1,2", *dirs]) == 0
    assert main(["render", "table3", "--seeds", "0,1,2", *dirs]) == 0
    assert main(["render", "squad_elmo", *dirs]) == 0
    assert _tables(tmp_path / "out") == [
        "squad_elmo-mini-demo-table1.md",
        "table2-mini-demo-table2.md",
        "table3-mini-demo-table3.md",
    ]
    assert main(["render", "table2", *dirs]) == 0
    assert len(_tables(tmp_path / "out")) == 4


def test_a_filtered_report_does_not_overwrite_the_whole_one() -> None:
    def path(*argv: str) -> Path:
        return report_path(build_parser().parse_args(["report", *argv]))

    assert path() == REPORT_OUT
    filtered = path("--config", "mini", "--seeds", "0")
    assert filtered.parent == REPORT_OUT.parent and filtered != REPORT_OUT
    assert re.fullmatch(r"report-[0-9a-f]{8}\.html", filtered.name)
    assert path("--seeds", "0", "--config", "mini") == filtered
    assert path("--out", "x.html", "--seeds", "0") == Path("x.html")  # an explicit file: kept
