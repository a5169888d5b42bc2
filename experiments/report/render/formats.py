"""Output formats: a computed table as Markdown, LaTeX (booktabs) or CSV (one line per cell)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from experiments.report.render.captions import Note, bilm_keys, bilm_names
from experiments.report.render.cells import Cell, fixed
from experiments.report.render.specs import (
    Column,
    IncreaseColumn,
    Row,
    RunsColumn,
    TableSpec,
    config_label,
    paper_comparable,
)
from experiments.run.spec import NO_REPRESENTATION, RunSpec
from experiments.run.store import RunRecord

Format = Literal["markdown", "latex", "csv"]


FORMATS: tuple[str, ...] = ("markdown", "latex", "csv")


CSV_FIELDS = (
    "table",
    "row",
    "column",
    "mean",
    "std",
    "n",
    "n_expected",
    "relative",
    "paper",
    "paper_std",
    "paper_relative",
    "missing_run_ids",
    "split",
    "paper_split",
    "preset",
    "data",
    "biLM",
    "biLM_fingerprints",
    "n_seeds_a",
    "n_seeds_b",
    "n_units",
    "difference",
    "p",
    "p_holm",
    "ci_low",
    "ci_high",
    "significant",
    "conditional",
    "df",
    "test_samples",
    "no_test",
    "stale_run_ids",
    "paper_comparable",
    "paper_incomparable_because",
    "dead_run_ids",
)


#: The widest line of a rendered Markdown or LaTeX file (prose is wrapped to it).
WIDTH = 160
#: The line that opens the part below the notes: the setup and what the runs rest on.
PROVENANCE_HEADING = "Setup and provenance:"
#: Words that would start a Markdown block (a list, a heading, a quote) at a line's start.
_BLOCK_START = ("-", "+", "*", "#", ">", "|", "=")


@dataclass(frozen=True)
class Layout:
    """A computed table in reading order, before any format.

    Attributes:
        title: one line: what is compared, on which data and split.
        essentials: one line under it: biLM, preset, seeds, the test (``""``: none).
        header: the column headers.
        body: the rows' cell texts (Δ rows included).
        notes: the numbered footnotes.
        provenance: the lines below the notes: the setup in full and what the runs rest on
            (commits, devices, biLMs, versions, epochs, sample efficiency, skips, times).
    """

    title: str
    essentials: str
    header: tuple[str, ...]
    body: tuple[tuple[str, ...], ...]
    notes: tuple[Note, ...]
    provenance: tuple[str, ...]


def wrap(text: str, first: str, rest: str, width: int = WIDTH) -> list[str]:
    """``text`` as lines of at most ``width`` characters (a longer word stays whole), the first
    prefixed ``first``, the others ``rest``; no line after the first starts with a word that
    would open a Markdown block (:data:`_BLOCK_START`, ``"1."``)."""
    lines: list[list[str]] = [[]]
    size = len(first)
    for word in text.split():
        if lines[-1] and size + 1 + len(word) > width:
            moved: list[str] = []
            while len(lines[-1]) > 1 and _opens_block(word if not moved else moved[0]):
                moved.insert(0, lines[-1].pop())
            lines.append([*moved, word])
            size = len(rest) + len(" ".join(lines[-1]))
        else:
            size += len(word) + (1 if lines[-1] else 0)
            lines[-1].append(word)
    return [(first if i == 0 else rest) + " ".join(words) for i, words in enumerate(lines)]


def _opens_block(word: str) -> bool:
    head, _, tail = word.partition(".")
    return word.startswith(_BLOCK_START) or (head.isdigit() and tail == "")


def markdown_table(layout: Layout) -> str:
    """The Markdown file: title and essentials, then the table (its first row on line 5 at
    most), the numbered notes, and the setup and provenance; prose wrapped to :data:`WIDTH`."""

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    lines = [f"**{layout.title}**" + ("  " if layout.essentials else "")]
    if layout.essentials:
        lines += wrap(f"_{layout.essentials}_", "", "")
    lines.append(line(layout.header))
    lines.append("|" + "|".join([":---"] + ["---:"] * (len(layout.header) - 1)) + "|")
    lines += [line(cells) for cells in layout.body]
    lines.append("")
    lines += numbered_notes(layout.notes)
    if layout.provenance:
        lines += ["", PROVENANCE_HEADING]
        for text in layout.provenance:
            lines += wrap(text, "- ", "  ")
    return "\n".join(lines) + "\n"


def numbered_notes(
    notes: Sequence[Note], line: Callable[[str, str, str], list[str]] = wrap
) -> list[str]:
    """The notes numbered from 1, each laid out by ``line(text, first, rest)`` (default
    :func:`wrap`) with its items as an indented list under it: the Markdown and LaTeX tables'
    notes and the peer tables' (:mod:`experiments.peer.render`)."""
    lines: list[str] = []
    for number, note in enumerate(notes, 1):
        indent = " " * len(f"{number}. ")
        lines += line(note.text, f"{number}. ", indent)
        for item in note.items:
            lines += line(item, f"{indent}- ", f"{indent}  ")
    return lines


_LATEX = {
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
    "±": r"$\pm$",
    "λ": r"$\lambda$",
    "−": r"$-$",
    "—": "---",
    "Δ": r"$\Delta$",
    "<": r"$<$",
    ">": r"$>$",
    "✱": r"$^{\ast}$",
    "☠": r"$^{\otimes}$",
    "†": r"\dag{}",
    "‡": r"\ddag{}",
    "↳": r"$\hookrightarrow$",
}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX.get(char, char) for char in text)


def latex_table(layout: Layout) -> str:
    """The LaTeX file (booktabs): the title and essentials as comments, the tabular, then the
    numbered notes and the setup and provenance as comments wrapped to :data:`WIDTH`."""

    def line(cells: Sequence[str]) -> str:
        return " & ".join(_latex_escape(c) for c in cells) + r" \\"

    def comment(text: str, first: str = "", rest: str = "") -> list[str]:
        return wrap(_latex_escape(text), f"% {first}", f"% {rest}")

    lines = [f"% {_latex_escape(layout.title)} (needs \\usepackage{{booktabs}})"]
    lines += comment(layout.essentials) if layout.essentials else []
    lines += [
        r"\begin{tabular}{l" + "r" * (len(layout.header) - 1) + "}",
        r"\toprule",
        line(layout.header),
        r"\midrule",
        *[line(cells) for cells in layout.body],
        r"\bottomrule",
        r"\end{tabular}",
    ]
    lines += numbered_notes(layout.notes, comment)
    if layout.provenance:
        lines.append(f"% {PROVENANCE_HEADING}")
        for text in layout.provenance:
            lines += comment(text, "- ", "  ")
    return "\n".join(lines) + "\n"


def _column_spec(table: TableSpec, row: Row, column: Column) -> RunSpec:
    """The spec of a column's first run (an increase: its minuend's)."""
    if isinstance(column, IncreaseColumn):
        runs = {c.label: c for c in table.columns if isinstance(c, RunsColumn)}
        column = runs[column.minuend]
    return table.expected(row, column)[0]


def _fingerprints(runs: Sequence[RunRecord]) -> str:
    """The short biLM fingerprints of runs with a representation, space-separated."""
    keys = {bilm_keys(r) for r in runs if r.spec.representation != NO_REPRESENTATION}
    return " ".join(sorted(bilm_names(keys).values()))


def csv_table(table: TableSpec, grid: list[list[Cell]], records: Sequence[RunRecord]) -> str:
    def num(value: float | None, decimals: int) -> str:
        return "" if value is None else fixed(round(value, decimals), decimals)

    def general(value: float | None) -> str:
        return "" if value is None else f"{value:.6g}"

    by_id = {r.run_id: r for r in records}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for row, cells in zip(table.rows, grid, strict=True):
        places, scale = row.metric.decimals + 2, row.metric.scale
        ours, paper_split = table.splits_of(row)
        comparable, why = paper_comparable(table, row)
        for column, cell in zip(table.columns, cells, strict=True):
            spec = _column_spec(table, row, column)
            prints = _fingerprints([by_id[r] for r in cell.runs])
            t = cell.test
            writer.writerow(
                [
                    table.name,
                    row.label,
                    column.label,
                    num(cell.mean, places),
                    num(cell.std, places),
                    cell.n,
                    cell.n_expected,
                    num(cell.relative, 3),
                    "" if cell.paper is None else repr(cell.paper),
                    "" if cell.paper_std is None else repr(cell.paper_std),
                    "" if cell.paper_relative is None else repr(cell.paper_relative),
                    " ".join(cell.missing),
                    ours or "",
                    paper_split or "",
                    spec.preset,
                    spec.data,
                    config_label(spec),
                    prints,
                    "" if t is None else t.seeds_a,
                    "" if t is None else t.seeds_b,
                    "" if t is None else t.units,
                    "" if t is None else num(t.difference * scale, places),
                    "" if t is None else general(t.p_value),
                    "" if t is None else general(t.adjusted_p),
                    "" if t is None else num(t.low * scale, places),
                    "" if t is None else num(t.high * scale, places),
                    "" if t is None else str(t.significant).lower(),
                    "" if t is None else str(t.conditional).lower(),
                    "" if t is None or t.df is None else f"{t.df:.1f}",
                    "" if t is None else t.samples,
                    cell.no_test or "",
                    " ".join(cell.stale),
                    str(comparable).lower(),
                    why,
                    " ".join(cell.dead),
                ]
            )
    return out.getvalue()
