"""The HTML report: built from a small fabricated store, checked as parsed HTML and, when a
Chromium is installed, as rendered by a headless browser (tables filled, images decoded)."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import html
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from experiments.plan.specs import base_spec, baseline
from experiments.report import page as html_report
from experiments.report import reproductions
from experiments.report.render import load_paper, render
from experiments.run.identity import run_identity
from experiments.run.spec import RunSpec, derive
from experiments.run.store import ResultsStore, RunRecord
from tasks.registry import TASKS, get_task
from tests.experiments import toy_task
from tests.experiments.helpers import PROVENANCE

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SEEDS = (0, 1)
FRACTIONS = (0.001, 0.01, 0.1)
WANDB_URL = "https://wandb.ai/someone/elmo-bench/runs/abc123"
NOW = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def fake_record(spec: RunSpec, value: float) -> RunRecord:
    """A finished run: dev metric, epochs, per-epoch log with layer weights of its sites."""
    weights = {site: [0.2, 0.3, 0.5] if site == "input" else [0.6, 0.3, 0.1] for site in spec.sites}
    log = tuple(
        {"epoch": e, "dev_accuracy": value - 0.1 * (3 - e), "layer_weights": weights}
        for e in (1, 2, 3)
    )
    return RunRecord(
        spec=spec,
        metrics={"dev_accuracy": value, "best_epoch": 2.0, "epochs_run": 3.0},
        # the identity the run would have now: a record the report may show (a record without
        # one, or with another, is left out as stale; tests/experiments/test_reuse_cli.py)
        provenance=dataclasses.replace(
            PROVENANCE,
            git_sha="c0ffee" + "0" * 34,
            identity=run_identity(spec, device="cpu").to_dict() if spec.task in TASKS else {},
        ),
        log=log,
        timings={"started_unix": 1.7e9, "wall_s": 12.0},
    )


def fill_store(root: Path) -> ResultsStore:
    """Table 1 and 2 runs of the toy task (two seeds), part of Table 3, and Figure 1 runs."""
    store = ResultsStore(root)
    tables = reproductions.tables("table1", "mini", "demo", SEEDS, {})
    tables += reproductions.tables("table2", "mini", "demo", SEEDS, {}, tasks=["toy"])
    specs = {
        s.run_id: s for t in tables for s in reproductions.expected_specs(t) if s.task == "toy"
    }
    (t3,) = reproductions.tables("table3", "mini", "demo", (0,), {}, tasks=["toy"])
    both = [s for s in reproductions.expected_specs(t3) if s.task == "toy" and len(s.sites) == 2]
    specs.update({s.run_id: s for s in both})
    base = base_spec(get_task("toy"), "mini", "demo", {})
    for fraction in FRACTIONS:
        for spec in (base, baseline(base)):
            for seed in SEEDS:
                point = derive(spec, {"train_fraction": fraction, "seed": seed})
                specs[point.run_id] = point
    for spec in specs.values():
        value = 0.6 + 0.05 * (spec.representation != "none") + spec.seed / 100
        if spec.train_fraction is not None:
            value -= 0.2 * (1 - spec.train_fraction)
        record = fake_record(spec, value)
        if spec.representation != "none" and spec.seed == 0 and spec.train_fraction is None:
            record = dataclasses.replace(
                record, attachments={html_report.WANDB_ATTACHMENT: json.dumps({"url": WANDB_URL})}
            )
        store.put(record)
    return store


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """The report of the fabricated store (toy task registered while it is built)."""
    folder = tmp_path_factory.mktemp("report")
    with toy_task.registered(folder / "demo"):
        fill_store(folder / "store")
        path = html_report.write_report(
            folder / "store", folder / "out" / "report.html", seeds=SEEDS, now=NOW
        )
    yield path, path.read_text(encoding="utf-8")


class Collector(HTMLParser):
    """Tables (rows of cell texts, body rows only), images, headings and resource URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.images: list[str] = []
        self.resources: list[str] = []
        self.links: list[str] = []
        self.text: list[str] = []
        self._in_body = self._cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "table":
            self.tables.append([])
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self._in_body:
            self._cell = True
            self.tables[-1][-1].append("")
        elif tag == "img":
            self.images.append(values.get("src") or "")
        if tag == "a":
            self.links.append(values.get("href") or "")
        elif "src" in values or "href" in values:
            self.resources.append(values.get("src") or values.get("href") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self._in_body = False
        elif tag in ("td", "th"):
            self._cell = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell:
            self.tables[-1][-1][-1] += data


def collect(text: str) -> Collector:
    parser = Collector()
    parser.feed(text)
    parser.close()
    return parser


def test_report_holds_tables_figures_and_provenance(built: tuple[Path, str]) -> None:
    _, text = built
    page = collect(text)
    words = " ".join(page.text)
    assert len(page.tables) >= 5  # Tables 1–3, provenance, runs
    for rows in page.tables:
        assert rows and all(rows[0]), rows  # every table: a body row without empty cells
    for title in ("Table 1", "Table 2", "Table 3", "Provenance", "Runs"):
        assert title in words
    toy = [row for rows in page.tables for row in rows if row[0].startswith("Toy")]
    assert len(toy) == 3  # one row per Table 1–3
    assert "DEMO" in toy[0][1] and "65.5 ± 0.7 (n=2)" in toy[0][3]  # ELMo mean over 2 seeds
    assert not toy[0][4].strip().endswith("DEMO")  # the paper column has no DEMO badge
    assert "No runs yet: SQuAD" in words  # registered tasks without runs are listed, not empty
    for title in ("per epoch", "Figure 2", "Figure 1: Toy sample efficiency"):
        assert title in words, title
    assert len(page.images) == 3  # learning curves, Figure 2, Figure 1
    for src in page.images:
        prefix = "data:image/png;base64,"
        assert src.startswith(prefix)
        assert base64.b64decode(src[len(prefix) :]).startswith(PNG_MAGIC)
    assert all(url.startswith("#") or url.startswith("data:") for url in page.resources)
    assert WANDB_URL in page.links and all(
        url.startswith("#") or url == WANDB_URL for url in page.links
    )
    assert "c0ffee" in words and "2026-01-02 03:04:05 UTC" in words
    assert "toy (" in words  # runs per task


def test_report_in_headless_browser(built: tuple[Path, str], tmp_path: Path) -> None:
    """Chromium renders the page: every table has a body row with non-empty cells and every
    image decoded (``naturalWidth > 0``)."""
    browser = next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p),
        None,
    )
    if browser is None:
        pytest.skip("no headless browser: install Debian's chromium (.ci/run does)")
    _, text = built
    check = """<script>
window.addEventListener("load", () => {
  const tables = [...document.querySelectorAll("table")].map(t => [...t.tBodies]
    .flatMap(b => [...b.rows]).filter(r => r.cells.length > 0
      && [...r.cells].every(c => c.textContent.trim() !== "")).length);
  const images = [...document.images].map(i => i.complete ? i.naturalWidth : -1);
  const out = document.createElement("pre");
  out.id = "report-check";
  out.textContent = JSON.stringify({tables, images});
  document.body.appendChild(out);
});
</script></body>"""
    page = tmp_path / "checked.html"
    page.write_text(text.replace("</body>", check), encoding="utf-8")
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    found = re.search(r'<pre id="report-check">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stderr[-2000:]
    result = json.loads(html.unescape(found.group(1)))
    assert len(result["tables"]) >= 5 and all(n >= 1 for n in result["tables"]), result
    assert len(result["images"]) == 3 and all(w > 0 for w in result["images"]), result


def test_markdown_parsing_round_trips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks import registry

    task = toy_task.make_task(tmp_path)
    monkeypatch.setitem(registry.TASKS, task.name, task)
    (table,) = reproductions.tables("toy_elmo", "mini", "demo", (0,), {})
    records = [fake_record(s, 0.7) for s in reproductions.expected_specs(table)]
    title, captions, header, body, notes, provenance = html_report.parse_markdown_table(
        render(table, records, load_paper())
    )
    assert title == table.title and captions[0].startswith("biLM:")
    assert header[:3] == ("Task", "Baseline", "Baseline (paper)")
    assert len(body) == 1 and body[0][0].startswith("Toy") and body[0][1] == "70.0 (n=1)"
    assert notes and notes[0].startswith("Ours:") and "\n" not in notes[0]
    assert provenance[0] == table.caption[0] and any(
        p.startswith("Rests on 2 runs") for p in provenance
    )


def test_setups_follow_the_stored_specs() -> None:
    a = toy_task_spec("demo", {})
    b = toy_task_spec("/data/toy", {"checkpoint": "x.pt"})
    records = [fake_record(s, 0.5) for s in (a, b, baseline(b))]
    setups = html_report.find_setups(records)
    assert [(s.data, dict(s.rep_config)) for s in setups] == [
        ("/data/toy", {"checkpoint": "x.pt"}),
        ("demo", {}),
    ]
    assert setups[0].holds(baseline(b)) and not setups[0].holds(a)


def toy_task_spec(data: str, rep_config: dict[str, object]) -> RunSpec:
    return RunSpec(task="toy", task_version=1, data=data, representation_config=rep_config)


def test_an_online_wandb_run_link_is_stored_with_the_run(tmp_path: Path) -> None:
    """The runner keeps an online W&B run's URL as the ``wandb.json`` attachment the report
    links (offline runs have none)."""
    from experiments.run.runner import RunOptions, train
    from experiments.run.spec import RunSpec
    from experiments.run.wandb_sink import NullSink
    from tests.experiments.toy_task import registered

    class Linked(NullSink):
        class run:  # noqa: N801 - stands for a wandb Run
            url = "https://wandb.ai/me/elmo-bench/runs/abc123"

    spec = RunSpec(task="toy", task_version=1, representation="none", sites=(), dropout=0.0)
    options = RunOptions(work_root=tmp_path / "w", progress=False)
    with registered(tmp_path / "toy-demo"):
        outcome = train(dataclasses.replace(spec, max_epochs=1), options, sink=Linked())
        offline = train(dataclasses.replace(spec, max_epochs=1, seed=1), options)
    link = json.loads(outcome.predictions["wandb"].read_text(encoding="utf-8"))
    assert link == {"url": Linked.run.url} and "wandb" not in offline.predictions


def test_a_damaged_record_is_left_out_of_the_report_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One damaged record used to block the whole report."""
    with toy_task.registered(tmp_path / "demo"):
        store = ResultsStore(tmp_path / "store")
        base = base_spec(get_task("toy"), "mini", "demo", {})
        store.put(fake_record(base, 0.7))
        broken = store.put(fake_record(derive(base, {"seed": 1}), 0.6))
        (broken / "log.jsonl").write_text('{"epoch": 1', encoding="utf-8")
        page = html_report.build_report(tmp_path / "store", now=NOW)
    err = capsys.readouterr().err.splitlines()
    (warning,) = [line for line in err if line.startswith("warning:")]
    assert warning.startswith(f"warning: {broken / 'log.jsonl'}: not valid JSON (")
    assert "--rerun" in warning
    assert "1 run." in prose(page) and broken.name in prose(page)


def prose(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
