"""The documentation: the README stays a front page, and the site (``mkdocs.yml``, what ``nox -s
docs`` builds) builds with ``--strict``, so a broken link, a page left out of the navigation or an
unresolved API reference fails the default test run. ``docs/hooks.py`` lets pages link repository
files outside ``docs/``; a small site of its own shows that a broken such link still fails."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

README_LINES = 150  # the README is a front page; the reference lives in docs/


def _mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about its end of life
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_readme_is_a_front_page() -> None:
    """At most ``README_LINES`` lines, and every file it links exists (it is not in the site)."""
    text = (REPO / "README.md").read_text("utf-8")
    lines = text.splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines; move reference to docs/"
    targets = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if ":" not in t]
    assert "docs/index.md" in targets
    assert [t for t in targets if t and not (REPO / t).exists()] == []


def test_site_builds_strict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = _mkdocs_build(REPO / "mkdocs.yml", site)
    assert done.returncode == 0, done.stderr[-4000:]
    api = (site / "api-bilm" / "index.html").read_text("utf-8")
    assert 'id="bilm.Elmo"' in api and 'id="bilm.load_official"' in api  # generated reference
    assert (site / "repo" / "results" / "README.md").is_file()  # a linked repository file


def test_a_broken_link_outside_docs_fails(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "present.txt").write_text("here\n")
    hook = REPO / "docs" / "hooks.py"
    (tmp_path / "mkdocs.yml").write_text(f"site_name: t\nhooks:\n  - {hook}\n")
    page = tmp_path / "docs" / "index.md"
    page.write_text("# t\n\n[present](../present.txt)\n")
    done = _mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "site" / "repo" / "present.txt").read_text() == "here\n"
    page.write_text("# t\n\n[present](../present.txt) [absent](../absent.md)\n")
    done = _mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0 and "../absent.md" in done.stderr, done.stderr[-2000:]


def test_readme_peer_figures_are_the_summarys() -> None:
    """Every final-epoch ``Δ (p)`` of the README's table beside allennlp is a line of
    ``results/peer/summary.md`` (the committed-results check keeps that file what the records
    give), so the front page cannot drift from the records."""
    text = (REPO / "README.md").read_text("utf-8")
    table = text[text.index("| task: model (data, epochs) |") :].split("\n\n")[0]
    summary = (REPO / "results" / "peer" / "summary.md").read_text("utf-8")
    finals = set(re.findall(r"\| ([+-]\d+\.\d+) \((\d\.\d{3})\*?\) \|", summary))
    cited = re.findall(r"([+−-]\d+\.\d+) \((\d\.\d{3})\)", table)
    assert len(cited) >= 10
    missing = [f"{d} ({p})" for d, p in cited if (d.replace("−", "-"), p) not in finals]
    assert not missing, f"README.md's peer table cites figures summary.md lacks: {missing}"


def test_every_summary_line_off_target_points_at_an_entry_that_names_its_variant() -> None:
    """A line of ``results/peer/summary.md`` off any target links its task's deviations entry,
    and that entry (the README table row with the anchor) names the line's variant
    (``KEY=VALUE``), so every candidate cause that was measured is written where it is read."""
    summary = (REPO / "results" / "peer" / "summary.md").read_text("utf-8")
    lines = [line for line in summary.splitlines() if re.match(r"\| [A-Z0-9]+: `", line)]
    assert lines
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        task, row, targets, link = cells[0].split(":")[0].lower(), cells[3], cells[8], cells[9]
        within, epochs = cells[6].split(" of ")
        if "**no**" not in targets and within == epochs:
            assert link == "–", line
            continue
        assert link == f"[{task} deviations](../../tasks/{task}/README.md#reference-parity)", line
        readme = (REPO / "tasks" / task / "README.md").read_text("utf-8")
        entry = next(r for r in readme.splitlines() if 'id="reference-parity"' in r)
        for variant in re.findall(r"\+ (\S+=\S*)", row):
            assert variant in entry, f"tasks/{task}/README.md's entry does not name {variant}"
