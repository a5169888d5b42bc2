"""Citations a reader can follow: no code, docs page or committed result cites the design notes
the project was built from (they are not in the repository) or a tracker's issue number; they cite
the paper's section, a reference implementation's file at a commit, or a page of ``docs/``."""

from __future__ import annotations

import re
import subprocess

from tests.conftest import REPO

#: The notes' names and issue numbers ("issue #23", "issues #20", "(#34)"), however they are cut.
UNREADABLE = re.compile(r"TASKS_SPEC|ELMO_SPEC|STYLE\.md|STYLE §|[Ii]ssues? #\d+|\(#\d+[),]")
#: The tracked text a reader meets: the packages, benchmarks, scripts, tests, docs, results.
SUFFIXES = (".py", ".md", ".toml", ".txt", ".yml", ".cfg", ".jsonnet", ".sh", ".csv")


def unreadable_citations(paths: list[str]) -> list[str]:
    """``path:line: text`` of every line of ``paths`` (relative to the repository) that cites
    what a reader cannot open."""
    hits = []
    for rel in paths:
        text = (REPO / rel).read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if UNREADABLE.search(line):
                hits.append(f"{rel}:{number}: {line.strip()[:120]}")
    return hits


def test_the_pattern_finds_each_kind_of_unreadable_citation() -> None:
    for line in ("see TASKS_SPEC §3.4", "ELMO_SPEC §2", "STYLE.md §3", "(issue #23)", "(#34)"):
        assert UNREADABLE.search(line), line
    for line in ("paper §3.4, A.6", "docs/peer.md", "e2e-coref @53c4116", "a known issue", "#1"):
        assert not UNREADABLE.search(line), line


def test_nothing_tracked_cites_the_notes_or_an_issue_number() -> None:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    this = "tests/test_citations.py"
    paths = [p for p in listed if p.endswith(SUFFIXES) and p != this and (REPO / p).is_file()]
    assert len(paths) > 300
    hits = unreadable_citations(paths)
    assert not hits, "cite the paper, a file at a commit or a docs page instead:\n" + "\n".join(
        hits[:40]
    )
