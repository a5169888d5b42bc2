"""Every committed table and plot is what HEAD renders from the committed records
(``results/committed.toml``, :mod:`experiments.report.committed`)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from experiments.cli import main
from experiments.report import committed

SQUAD = committed.Entry(
    "squad_baseline",
    ("render", "squad_baseline", "--store", "results/runs"),
    "results",
    "squad_baseline-mini-demo",
    "runs of older result versions",
)


@pytest.fixture(scope="module")
def report() -> committed.Report:
    return committed.check(main)


def test_every_committed_table_and_plot_is_what_head_renders(report: committed.Report) -> None:
    """Byte for byte, every entry of the manifest; no committed table or plot without one."""
    problems = report.problems()
    assert not problems, "\n".join(
        [*problems, "re-render: nox -s committed_results -- --render-only"]
    )


def test_no_committed_table_rests_on_stale_records(report: committed.Report) -> None:
    assert not report.stale, "\n".join(f"{n}: {why}" for n, why in report.stale.items())


def test_the_real_set_tables_were_checked(report: committed.Report) -> None:
    """The tables over the real sets render only where the sets are (``../shared/data``, or the
    copy ``python -m experiments real-data fetch`` builds): skipped with the reason elsewhere."""
    if report.skipped:
        pytest.skip("; ".join(f"{n}: {why}" for n, why in report.skipped.items()))


def test_an_entry_over_absent_real_sets_is_skipped_not_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the real sets a real-set entry is neither rendered (its rows would be missing)
    nor counted as an orphan's owner-less files; re-rendering it in place is refused."""
    monkeypatch.setenv("ELMO_BENCH_SHARED", str(tmp_path / "nowhere"))
    real = committed.Entry(
        "real", ("render", "real", "--data", "real", "--store", "results/real/runs"),
        "results/real", "real-mini-real",
    )  # fmt: skip
    assert real.needs_real_sets and not SQUAD.needs_real_sets
    report = committed.check(main, committed.REPO, [real])
    assert report.ok or not report.differ  # nothing compared
    assert not report.differ and not report.missing
    assert "real-data fetch" in report.skipped["real"]
    assert committed.committed_of(real) and not set(report.orphans) & committed.committed_of(real)
    with pytest.raises(RuntimeError, match="cannot re-render real"):
        committed.write(main, committed.REPO, [real])


def _copy_of_squad(root: Path) -> Path:
    copy = root / "repo"
    shutil.copytree(committed.REPO / "results/runs/squad", copy / "results/runs/squad")
    for folder in ("tables", "plots"):
        (copy / "results" / folder).mkdir(parents=True)
        for path in (committed.REPO / "results" / folder).glob(f"{SQUAD.stem}-*"):
            shutil.copyfile(path, copy / "results" / folder / path.name)
    return copy


def test_check_finds_a_changed_a_missing_and_an_orphan_file(tmp_path: Path) -> None:
    copy = _copy_of_squad(tmp_path)
    assert committed.check(main, copy, [SQUAD]).ok
    table = copy / "results/tables/squad_baseline-mini-demo-table1.md"
    table.write_text(table.read_text(encoding="utf-8").replace("±", "+-", 1), encoding="utf-8")
    (copy / "results/tables/squad_baseline-mini-demo-table1.csv").unlink()
    (copy / "results/plots/old-table-layer-weights.png").write_bytes(b"png")
    report = committed.check(main, copy, [SQUAD])
    assert report.differ == ("results/tables/squad_baseline-mini-demo-table1.md",)
    assert report.missing == ("results/tables/squad_baseline-mini-demo-table1.csv",)
    assert report.orphans == ("results/plots/old-table-layer-weights.png",)
    assert not report.ok


def test_write_restores_the_committed_files(tmp_path: Path) -> None:
    copy = _copy_of_squad(tmp_path)
    table = copy / "results/tables/squad_baseline-mini-demo-table1.md"
    before = table.read_bytes()
    table.write_text("edited", encoding="utf-8")
    committed.write(main, copy, [SQUAD])
    assert table.read_bytes() == before


def test_a_manifest_entry_needs_its_command_and_folder(tmp_path: Path) -> None:
    manifest = tmp_path / "committed.toml"
    manifest.write_text('[table1]\nargv = ["render", "table1"]\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"committed.toml: \[table1\] needs argv and out"):
        committed.load(manifest)
    manifest.write_text('[t]\nargv = ["render", "table1"]\nout = "results"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="a stem for every command but peer"):
        committed.load(manifest)
    assert [e.name for e in committed.load()][:1] == ["table1"]


def _rows(lines: list[str]) -> list[list[str]]:
    """The body rows of the first markdown table in ``lines``, cells stripped."""
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def _figure(cell: str) -> str:
    """A committed cell without its run count and ‡/† marks: ``81.7 ± 5.5``."""
    return re.sub(r"\s*\(n=\d+\)|\s*[‡†]", "", cell)


def _test(cell: str) -> tuple[str, str, bool]:
    """Δ, the Holm-adjusted p as the README writes it, and whether it is below 0.05, from a
    committed cell such as ``8.2 / 44.8% (Holm=0.418)`` or ``5.1 (Holm<0.001✱)``."""
    found = re.fullmatch(r"(\S+)(?: / \S+%)?[ ‡]*\(Holm([=<])([\d.]+)(✱?)\)", cell)
    assert found is not None, f"not a test cell: {cell!r}"
    delta, sign, p, star = found.groups()
    return delta, f"{'< ' if sign == '<' else ''}{p}{' ✱' if star else ''}", bool(star)


DOCS = ("README.md", "docs/results.md")  # the pages that show Table 1 and the real-data rows


def _doc_table(doc: str, heading: str, table: str) -> list[list[str]]:
    """The rows of ``doc``'s table after the paragraph starting ``heading``; that paragraph
    names the result versions of the committed ``table``'s caption."""
    lines = (committed.REPO / doc).read_text("utf-8").splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
    assert at is not None, f"{doc}: no paragraph starting {heading!r}"
    rows = _rows(lines[at:])
    assert rows, f"{doc}: no table after {heading!r}"
    paragraph = " ".join(lines[at : lines.index("", at)])
    caption = " ".join((committed.REPO / table).read_text("utf-8").split())
    versions = re.search(r"result versions: (.+?) / harness", caption)
    assert versions is not None, f"{table}: no result versions in its caption"
    assert f"result versions {versions[1]}" in paragraph, (
        f"{doc} {heading}: say 'result versions {versions[1]}' as {table} does"
    )
    return rows


def _committed_rows(path: str, suffix: str = "") -> dict[str, list[str]]:
    """A committed table's rows by label (``suffix`` removed); an ``↳ Δ`` row is filed under
    its metric row's label + `` Δ``."""
    rows: dict[str, list[str]] = {}
    label = ""
    for row in _rows((committed.REPO / path).read_text("utf-8").splitlines()):
        if row[0].startswith("↳"):
            rows[f"{label} Δ"] = row
        else:
            label = row[0].removesuffix(suffix)
            rows[label] = row
    return rows


@pytest.mark.parametrize("doc", DOCS)
def test_table1_on_the_front_page_is_the_committed_table1(doc: str) -> None:
    """Every row of the page's Table 1 is the committed table's row of that task and metric
    (baseline, ELMo, increase with its Holm-adjusted p), so no page keeps figures that HEAD no
    longer renders."""
    table = "results/tables/table1-mini-demo-table1.md"
    rendered = _committed_rows(table, " — DEMO data")
    for label, *cells in _doc_table(doc, "**Table 1 on DEMO data**", table):
        assert label in rendered, f"{doc} Table 1: no row {label!r} in {table}"
        row = rendered[label]
        delta, p, _ = _test(row[5])
        expected = [_figure(row[1]), _figure(row[3]), f"{delta} ({p})"]
        assert cells == expected, f"{doc} Table 1, {label}: {cells} != {expected}"


@pytest.mark.parametrize("doc", DOCS)
def test_real_data_rows_are_the_committed_real_table(doc: str) -> None:
    """The page's real-data rows are the committed real-set table's: each representation's
    figure, ELMo's with its difference from the baseline and Holm-adjusted p (bold when below
    0.05)."""
    table = "results/real/tables/real-mini-real-real.md"
    rendered = _committed_rows(table)
    for label, *cells in _doc_table(doc, "**Real data**", table):
        assert label in rendered, f"{doc} real data: no row {label!r} in {table}"
        row = rendered[label]
        delta, p, significant = _test(rendered[f"{label} Δ"][2])
        delta = f"+{delta}" if not delta.startswith("-") else delta
        elmo = f"{_figure(row[2])} ({f'**{delta}**' if significant else delta}, {p})"
        expected = [_figure(row[1]), elmo, *(_figure(c) for c in row[3:])]
        assert cells == expected, f"{doc} real data, {label}: {cells} != {expected}"


@pytest.mark.parametrize("doc", DOCS)
def test_paper_data_rows_are_the_committed_paper_data_table(doc: str) -> None:
    """The page's rows on the paper's own data are the committed paper-data table's: each
    column's figure, the tested ones with their difference from the baseline and Holm-adjusted p
    (bold when below 0.05), ``—`` where the table has no runs yet, and the published baselines
    its caption names for the row."""
    table = "results/paper/tables/paper-data-paper-real-paper-data.md"
    rendered = _committed_rows(table)
    caption = " ".join((committed.REPO / table).read_text("utf-8").split())
    for label, *cells in _doc_table(doc, "**Table 1 on the paper's own data**", table):
        assert label in rendered, f"{doc} paper data: no row {label!r} in {table}"
        row = rendered[label]
        expected = [_figure(row[1])]
        for column, figure in enumerate(row[2:], start=2):
            if _figure(figure) == "—":
                expected.append("—")
                continue
            delta, p, significant = _test(rendered[f"{label} Δ"][column])
            delta = f"+{delta}" if not delta.startswith("-") else delta
            expected.append(f"{_figure(figure)} ({f'**{delta}**' if significant else delta}, {p})")
        assert cells[:-1] == expected, f"{doc} paper data, {label}: {cells[:-1]} != {expected}"
        task = label.rsplit(" (", 1)[0]  # the caption names the row without its metric
        published = re.search(
            rf"Published baseline on {re.escape(task)} \(\w+\): (.+?)(?= - |$)", caption
        )
        assert published is not None, f"{table}: no published baseline for {task!r}"
        for number in re.findall(r"\d+\.\d+(?: ± \d+\.\d+)?", cells[-1]):
            assert number in published[1], (
                f"{doc} paper data, {label}: {number} not in {published[1]!r}"
            )
