"""A new table is one entry of ``TABLE_KINDS``, and everything that lists tables sees it.

A copy of the checkout gets two throwaway tables, each one entry in the registry of
``experiments/report/reproductions.py`` and nothing else: ``toy-main`` (Table 1's layout
renamed, a row per task, committed with three seeds) and ``toy-sets`` (a table of the registered
sets of family ``paper``). In that copy: ``reproduce --help`` and ``render --help`` offer them,
``render toy-main`` on an empty store writes its table with every cell "not run yet" under the
plain (standard-request) name, the table's rows and seeds follow the entry, and the
committed-results machinery (``results/committed.toml``'s :class:`Entry`, :func:`check`) reads
the entry's family and compares its files.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.source_tree import copy_source, run

#: The end of the registry's tuple of entries, where the throwaway entries go.
REGISTRY_END = (
    "            record_lines=(wall_time_lines, selected_epoch_lines, dev_curve_lines),\n"
    "        ),\n    )\n}\n"
)

#: The two throwaway entries (a new table's only change).
ENTRIES = """        TableKind(
            "toy-main",
            "a throwaway table: baseline vs ELMo, every task",
            _titled(
                lambda rows, seeds, c: dataclasses.replace(
                    table1(rows, seeds), name="toy-main", title="Toy table"
                ),
                paper_split=True,
            ),
            main_only=True,
            three_seeds=True,
        ),
        TableKind(
            "toy-sets",
            "a throwaway table of the paper's data sets",
            _titled(lambda rows, seeds, c: paper_data_table(rows, seeds, c.others)),
            rows="sets",
            family="paper",
            others=("hf",),
        ),
"""

#: Run in the copy: what the table's entry gives the harness and the committed results.
CHECKS = """
import sys
from pathlib import Path

from experiments.cli import main
from experiments.cli.naming import standard_seeds
from experiments.data.real_sets import real_sets
from experiments.report import committed, reproductions
from tasks.registry import TASKS

root = Path.cwd()
assert reproductions.named_tables()[-2:] == ("toy-main", "toy-sets")
assert reproductions.table_tasks("toy-main") == list(TASKS)
readers = {s.task for s in real_sets(family="paper")}
assert reproductions.table_tasks("toy-sets") == [t for t in TASKS if t in readers]
assert standard_seeds("toy-main", "demo") == "0,1,2"
assert standard_seeds("toy-sets", "real") is None

sets = committed.Entry("toy-sets", ("render", "toy-sets"), "results", "toy-sets-mini-real")
assert sets.set_family == "paper" and sets.needs_real_sets
argv = ("render", "toy-main", "--seeds", "0,1,2", "--store", "results/runs")
entry = committed.Entry("toy-main", argv, "results", "toy-main-mini-demo")
assert entry.set_family is None and not entry.needs_real_sets

(root / "results" / "runs").mkdir(parents=True)
(root / "results" / "tables").mkdir()
written = committed.write(main, root, [entry])
table = root / "results" / "tables" / "toy-main-mini-demo-toy-main.md"
assert table in written, written
text = table.read_text(encoding="utf-8")
assert "Toy table" in text and "not run yet" in text, text
assert committed.check(main, root, [entry]).ok
table.write_text(text + "changed", encoding="utf-8")
report = committed.check(main, root, [entry])
assert report.differ == ("results/tables/toy-main-mini-demo-toy-main.md",), report
orphan = committed.check(main, root, [])
assert "results/tables/toy-main-mini-demo-toy-main.md" in orphan.orphans, orphan
print("checked")
"""


@pytest.fixture(scope="module")
def copy_with_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_source(
        tmp_path_factory.mktemp("with-table") / "src", ("bilm", "tasks", "experiments")
    )
    registry = root / "experiments" / "report" / "reproductions.py"
    text = registry.read_text(encoding="utf-8")
    assert text.endswith(REGISTRY_END), "the registry's last entry changed"
    registry.write_text(text[: -len("    )\n}\n")] + ENTRIES + "    )\n}\n", encoding="utf-8")
    return root


def _env(root: Path, home: Path) -> dict[str, str]:
    """The copy's packages first on the path (before an installed copy of the project)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "PYTHONPATH": str(root), "HOME": str(home), "ELMO_BENCH_CACHE": str(home)}


def test_the_command_line_offers_the_new_table(copy_with_table: Path, tmp_path: Path) -> None:
    env = _env(copy_with_table, tmp_path)
    for command in ("reproduce", "render"):
        shown = run([sys.executable, "-m", "experiments", command, "--help"], copy_with_table, env)
        assert "toy-main" in shown and "toy-sets" in shown and "paper-data" in shown


def test_render_naming_and_committed_results_see_the_new_table(
    copy_with_table: Path, tmp_path: Path
) -> None:
    out = run([sys.executable, "-c", CHECKS], copy_with_table, _env(copy_with_table, tmp_path))
    assert out.splitlines()[-1] == "checked"


def test_the_copy_is_not_the_checkout() -> None:
    """The throwaway tables exist only in the copy."""
    from experiments.report.reproductions import TABLE_KINDS

    assert "toy-main" not in TABLE_KINDS
    assert not (REPO / "results" / "tables" / "toy-main-mini-demo-toy-main.md").exists()
