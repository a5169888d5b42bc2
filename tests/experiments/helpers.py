"""Fake records and a tiny data set for the experiments tests (no model is trained here)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from experiments.run.spec import MixSpec, RunSpec
from experiments.run.store import Provenance, RunRecord

PROVENANCE = Provenance(
    git_sha="0" * 40,
    git_dirty=False,
    python="3.11.7",
    torch="2.13.0",
    numpy="2.0.0",
    packages={"torch": "2.13.0"},
    platform="test",
    hostname="test",
    device="cpu",
)


def make_spec(task: str = "snli", seed: int = 0, lam: float = 0.001, **changes: object) -> RunSpec:
    """A small ELMo spec."""
    fields: dict[str, object] = {
        "task": task,
        "task_version": 1,
        "sites": ("input",),
        "mix": MixSpec(lam=lam),
        "seed": seed,
        **changes,
    }
    return RunSpec(**fields)  # type: ignore[arg-type]


def make_record(spec: RunSpec, value: float = 0.5) -> RunRecord:
    """A record with one metric, two log lines with layer weights, and timings."""
    weights = {site: [0.2, 0.3, 0.5] for site in spec.sites}
    log = (
        {"epoch": 1, "dev_accuracy": value - 0.1, "layer_weights": weights},
        {"epoch": 2, "dev_accuracy": value, "layer_weights": weights},
    )
    return RunRecord(
        spec=spec,
        metrics={"accuracy": value},
        provenance=PROVENANCE,
        log=log,
        timings={"wall_s": 1.5},
    )


def fake_run(spec: RunSpec) -> RunRecord:
    """A trivial ``run_one`` (module level, so process pools and Ray can pickle it)."""
    if spec.seed < 0:
        raise RuntimeError("negative seed")
    return make_record(spec, 0.5 + spec.seed / 100)


def cli_dirs(tmp_path: Path) -> list[str]:
    """``python -m experiments`` options that keep a test's store, work, outputs and feature
    cache under ``tmp_path`` (``store``, ``work``, ``out``, ``cache``), without progress bars."""
    return [
        "--store",
        str(tmp_path / "store"),
        "--work",
        str(tmp_path / "work"),
        "--out",
        str(tmp_path / "out"),
        "--cache",
        str(tmp_path / "cache"),
        "--quiet",
    ]


#: A log line's timings: they differ between two runs of the same spec (experiments.run.runner).
TIMINGS = ("seconds", "train_cpu_s", "train_s", "peak_rss_mb")


def without_timings(log: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Log lines without their :data:`TIMINGS` (two runs of one spec then log the same)."""
    return [{k: v for k, v in line.items() if k not in TIMINGS} for line in log]


def tiny_tagging_set(tmp_path: Path) -> Path:
    """A tiny CoNLL-2003-style set (48 training and 12 dev sentences) in ``tmp_path/data``."""
    data = tmp_path / "data"
    data.mkdir()
    words = ["the", "cat", "sat", "on", "mat", "John", "ran", "to", "Paris", "today"]
    # more words than characters: ner.jsonnet's character embedding sizes itself by the word
    # vocabulary (no vocab_namespace), so a vocabulary of 10 words indexes past its end
    words += [a + b for a in words[:5] for b in ("s", "ly", "er", "ed", "ing")]
    for split, n in (("train", 48), ("dev", 12)):
        lines = []
        for i in range(n):
            sentence = [words[(i + j) % len(words)] for j in range(4 + i % 5)]
            for word in sentence:
                tag = "B-PER" if word == "John" else ("B-LOC" if word == "Paris" else "O")
                lines.append(f"{word} {tag}")
            lines.append("")
        (data / f"{split}.txt").write_text("\n".join(lines) + "\n")
    return data
