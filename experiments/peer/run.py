"""Train a task's baseline (and + ELMo) on both sides and keep per-epoch records.

One :class:`PeerRequest` (task, data, seeds, epochs, batch size, representations) becomes jobs:

* **peer jobs**, one per (representation, seed): the adapter's allennlp configuration for the
  recipe's data written as the peer's reader takes it; ``python -m allennlp train`` trains it in
  the peer's venv (:mod:`experiments.peer.venv`, built from the repository's recipe when
  missing) on one thread (every epoch's checkpoint kept; the trainer callback
  ``allennlp_side/peer_timing.py`` writes ``peer_timing.json`` with the CPU seconds of each
  training pass; ``peer_compat`` makes allennlp 2.10.1's schedulers build under torch 2.13);
  ``allennlp_epochs.py`` applies every epoch's weights to the dev split; the project's scorer
  scores those predictions and their per-unit statistics are kept. The record
  (``<out>/runs/<task>/<key>.json``) is keyed by the content of the configuration with every
  file replaced by its SHA-256, so a finished peer run is reused like the project's own runs;
  the checkpoints stay in the work folder (not committed). A killed run resumes: when its work
  folder holds a whole epoch checkpoint made with the same ``config.jsonnet``
  (:func:`resume_point`), ``allennlp train --recover`` continues after it, ``peer_timing`` puts
  back the random generators and carried states saved with it (so the run trains as an
  uninterrupted one would), the earlier output stays in ``train.log`` and the record lists the
  epochs resumed after (``resumed_after``);
* **project jobs**, one per (representation, state, seed): ``python -m experiments run`` with
  the ``paper`` preset, ``--epoch-units`` (dev unit statistics at every epoch), one thread, the
  same epochs and batch size, into the store ``<out>/project-runs`` (reused by run identity;
  bf16 runs into ``<out>/project-runs-bf16``, :func:`project_store`).

Jobs run ``max_parallel`` at a time (default 2: one per core of a 2-core machine), longest first.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bilm.bilm import STATE_POLICIES
from bilm.files import write_json
from bilm.pretrained import cache_root
from experiments.data.real_sets import data_path, portable_source, real_sets
from experiments.peer.venv import PEER_SIDE, ensure_venv, peer_env, peer_venv
from tasks.common.peer import PeerAdapter, PeerInputs, PeerRun
from tasks.core import TaskSpec
from tasks.registry import get_task

#: The project runs' precisions a peer request can ask for (``run``'s ``--precision``; fp16
#: needs CUDA and a grad scaler, and the peer trains on the CPU).
PRECISIONS = ("fp32", "bf16")

__all__ = [
    "PEER_FORMAT",
    "PRECISIONS",
    "ELMO_VARIANT_KEYS",
    "EpochPoint",
    "PeerRequest",
    "Series",
    "collect",
    "base_row",
    "complete_epochs",
    "ensure_venv",
    "fp32_row",
    "peer_venv",
    "prepare_inputs",
    "project_store",
    "resume_point",
    "resumed_after",
    "run_request",
    "variant_row",
]

#: Version of a peer record's contents (its scoring and fields): bump when a stored peer
#: record would no longer be what this code computes; records of another version are retrained.
PEER_FORMAT = 1
#: The shipped biLM, relative to the repository (the project's ELMo rows read it; the peer reads
#: its official-layout export).
SHIPPED_BILM = "bilm/data/elmo-bench-small-en.safetensors"
REPO = Path(__file__).resolve().parents[2]
#: What runs in the peer's venv (``PEER_SIDE``, never imported here): the per-epoch scorer, the
#: timing callback (``peer_timing``) and the torch 2.13 compatibility of allennlp 2.10.1
#: (``peer_compat``); the venv's recipe and import check are there too.
_EPOCHS_SCRIPT = PEER_SIDE / "allennlp_epochs.py"


@dataclass(frozen=True)
class PeerRequest:
    """What to train on both sides.

    Attributes:
        task: a registered task with a peer (``TaskSpec.peer``).
        data: the data label (``shared:dev/conll2000``, a folder); a real set's own overrides
            (``experiments/data/real_sets.toml``) are applied first.
        overrides: more task configuration changes (``--set``), both sides' data readers.
        seeds: the seeds of each side.
        epochs: epochs of every run (no early stopping).
        batch_size: instances per batch, both sides.
        representations: ``none`` (baseline) and/or ``elmo``.
        states: the project's biLM state policies of its ELMo rows; the first is compared with
            the peer (allennlp's ELMo carries the state across batches: ``carry``).
        preset: the project's preset (``paper``).
        variant: project-side changes alone (``--set`` syntax): the project's rows become
            ``<row> + KEY=VALUE …``, a candidate cause of a gap tried one change at a time
            against the same peer rows (docs/peer.md, "Finding the cause of a gap"); the peer
            runs are unchanged.
            ``elmo.KEY=VALUE`` (:data:`ELMO_VARIANT_KEYS`) changes the ELMo rows' point
            instead of the task configuration: its sites, mix or dropout (``run``'s
            ``--sites``, ``--mode``, ``--lam``, ``--layer-norm``, ``--dropout``).
        precision: the project runs' arithmetic (``run``'s ``--precision``): ``fp32``, or
            ``bf16`` autocast (fp32 weights and optimizer state), stored apart
            (:func:`project_store`) and shown as ``<row> + precision=bf16`` against the same
            allennlp rows (which stay fp32) and against the project's fp32 row.

    Raises:
        ValueError: no seed or a negative one, epochs or batch size below 1, an unknown
            representation or state, an ``elmo.`` variant with a baseline row or with an
            unknown key or value.
    """

    task: str
    data: str
    overrides: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0, 1, 2)
    epochs: int = 5
    batch_size: int = 64
    representations: tuple[str, ...] = ("none", "elmo")
    states: tuple[str, ...] = ("carry", "reset")
    preset: str = "paper"
    variant: tuple[str, ...] = ()
    precision: str = "fp32"

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        if not self.seeds or min(self.seeds) < 0:
            raise ValueError(f"seeds must be one or more integers >= 0, got {self.seeds}")
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError(
                f"epochs and batch_size must be >= 1, got {self.epochs} and {self.batch_size}"
            )
        if not self.representations or set(self.representations) - {"none", "elmo"}:
            raise ValueError(
                f"representations must be none and/or elmo, got {self.representations}"
            )
        if not self.states or set(self.states) - set(STATE_POLICIES):
            raise ValueError(f"states must be among {STATE_POLICIES}, got {self.states}")
        _, elmo = split_variant(self.variant)
        if elmo and "none" in self.representations:
            raise ValueError(
                f"--variant {' '.join(elmo)} changes the ELMo rows only: give --repr elmo"
            )

    @property
    def spec(self) -> TaskSpec:
        """The task (checked to have a peer)."""
        task = get_task(self.task)
        if task.peer is None:
            raise ValueError(
                f"task {self.task!r} has no runnable reference implementation here "
                "(TaskSpec.peer is None): its README's deviations table is the evidence"
            )
        return task

    @property
    def adapter(self) -> PeerAdapter:
        """The task's peer adapter."""
        adapter = self.spec.peer
        assert adapter is not None
        return adapter

    @property
    def all_overrides(self) -> tuple[str, ...]:
        """The real set's changes under :attr:`preset` (when ``data`` is one: its overrides,
        then the preset's own, e.g. an epoch cap), the adapter's (the shared inputs), then
        :attr:`overrides`."""
        own = [s.changes(self.preset) for s in real_sets([self.task]) if s.data == self.data]
        return (*(own[0] if own else ()), *self.adapter.overrides, *self.overrides)

    @property
    def data_label(self) -> str:
        """The data set's name: a real set's label, the bundled DEMO set as such (its numbers
        are labelled DEMO wherever they appear), else the data label itself."""
        if self.data == "demo":
            return f"DEMO {self.spec.table_rows[0].label} (generated, not its dataset)"
        for item in real_sets([self.task]):
            if item.data == self.data:
                return item.label
        return self.data


def _of_precision(name: str, precision: str) -> str:
    """``name`` for fp32, ``name-<precision>`` otherwise (a precision's own folders)."""
    return name if precision == "fp32" else f"{name}-{precision}"


def project_store(out: Path, precision: str) -> Path:
    """Where the project's runs of one precision are stored: ``out/project-runs`` (fp32) or
    ``out/project-runs-<precision>``. Precision is not part of a run's id (the same run in
    bf16 is the same experiment, run otherwise), so each precision has its own store (and its
    own work folder: a finished run's checkpoint would otherwise answer for the other)."""
    return out / _of_precision("project-runs", precision)


@dataclass(frozen=True)
class EpochPoint:
    """One side's evaluation of one run after one epoch.

    Attributes:
        epoch: 1-based.
        metric: the task's selection metric on dev (natural units), the project's scorer.
        native: the peer's own number for it (allennlp's ``get_metrics``), ``None`` for the
            project side.
        train_cpu_s: CPU seconds of the epoch's training pass (one thread).
        peak_rss_mb: the process's peak resident memory so far.
        units: ``(unit ids, rows)`` of dev's per-unit statistics (seed-aware tests).
    """

    epoch: int
    metric: float
    native: float | None
    train_cpu_s: float
    peak_rss_mb: float
    units: tuple[tuple[str, ...], list[list[float]]] | None = None


@dataclass
class Series:
    """One row of the table: one side's runs of one representation, per seed.

    Attributes:
        side: ``allennlp`` or ``project``.
        row: the row key, e.g. ``baseline``, ``elmo carry``, ``elmo reset``.
        runs: seed → the run's evaluations, in epoch order.
        sources: seed → the record that holds it (a peer key or a project run id).
    """

    side: str
    row: str
    runs: dict[int, list[EpochPoint]] = field(default_factory=dict)
    sources: dict[int, str] = field(default_factory=dict)


# --------------------------------------------------------------------------------- inputs
def _sha256(path: Path) -> str:
    """SHA-256 of a file, remembered in ``<file>.sha256`` beside it while size and mtime hold."""
    stamp = path.with_name(path.name + ".sha256")
    info = path.stat()
    key = f"{info.st_size}:{info.st_mtime_ns}"
    if stamp.is_file():
        known, _, digest = stamp.read_text(encoding="utf-8").partition(" ")
        if known == key and digest:
            return digest.strip()
    h = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    stamp.write_text(f"{key} {h.hexdigest()}\n", encoding="utf-8")
    return h.hexdigest()


def _digest(path: Path) -> str:
    """SHA-256 of a file (:func:`_sha256`), or of a folder: each file's path below it and its
    digest, in sorted order (readers such as allennlp's ``srl`` take a folder of files)."""
    if path.is_file():
        return _sha256(path)
    h = hashlib.sha256()
    for item in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix != ".sha256"):
        h.update(item.relative_to(path).as_posix().encode() + b"\0" + _sha256(item).encode())
    return h.hexdigest()


def export_glove_text(out: Path) -> Path:
    """The embedded GloVe 6B 50-d package as a GloVe text file (the peer's ``pretrained_file``):
    one ``word v1 … v50`` line per row, each value the shortest decimal that reads back as the
    same float32, so the peer starts from exactly the project's vectors. Written atomically;
    kept when present."""
    if out.is_file():
        return out
    import numpy as np

    from tasks.common.vocab import package_vectors

    store = package_vectors()
    matrix = np.asarray(store.matrix, dtype=np.float32)  # (400k, 50)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    print(f"peer: writing the GloVe text file {out} ({len(store.words):,} words)", flush=True)
    with tmp.open("w", encoding="utf-8") as handle:
        for word, row in zip(store.words, matrix, strict=True):
            handle.write(word + " " + " ".join(str(v) for v in row.tolist()) + "\n")
    os.replace(tmp, out)
    return out


def export_bilm(out: Path, checkpoint: Path) -> tuple[Path, Path, int]:
    """``checkpoint`` in the official layout (``options.json`` + ``weights.hdf5``) under ``out``
    (kept when present), and the width of its layers."""
    from bilm.weights import export_official, load_checkpoint

    bilm = load_checkpoint(checkpoint)
    options, weights = out / "options.json", out / "weights.hdf5"
    if not (options.is_file() and weights.is_file()):
        options, weights = export_official(bilm, out)
    return options, weights, int(bilm.options.output_dim)


def prepare_inputs(elmo: bool, root: Path | None = None) -> PeerInputs:
    """The inputs both sides share, exported once into ``root`` (default: the cache's ``peer/``)."""
    root = root or cache_root() / "peer"
    glove = export_glove_text(root / "glove.6B.50d.txt")
    if not elmo:
        return PeerInputs(glove)
    options, weights, dim = export_bilm(root / "small-elmo", REPO / SHIPPED_BILM)
    return PeerInputs(glove, options, weights, dim)


# ------------------------------------------------------------------------------- the data
def _recipe(request: PeerRequest) -> Any:
    return request.spec.setup(request.preset, list(request.all_overrides), data_path(request.data))


def write_peer_data(request: PeerRequest, recipe: Any, root: Path) -> dict[str, Path]:
    """The recipe's splits in the peer's format, under ``root/data-<digest>/`` (the digest of
    the files' contents: the same data always lands in the same folder)."""
    staging = root / f".data-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    files = request.adapter.write_data(recipe, staging)
    h = hashlib.sha256()
    for split in sorted(files):  # a split is a file or a folder of files
        h.update(split.encode() + b"\0" + _digest(files[split]).encode())
    final = root / f"data-{h.hexdigest()[:12]}"
    if final.is_dir():
        shutil.rmtree(staging)
    else:
        os.replace(staging, final)
    return {split: final / path.name for split, path in files.items()}


# --------------------------------------------------------------------------------- peer runs
def _digested(config: Any, digests: Mapping[str, str]) -> Any:
    """``config`` with every string naming a known file replaced by ``sha256:<digest>``."""
    if isinstance(config, dict):
        return {k: _digested(v, digests) for k, v in config.items()}
    if isinstance(config, list):
        return [_digested(v, digests) for v in config]
    if isinstance(config, str) and config in digests:
        return f"sha256:{digests[config]}"
    return config


def peer_key(config: Mapping[str, Any], files: Sequence[Path], adapter: PeerAdapter) -> str:
    """The content key of a peer run: its configuration with each file as its SHA-256, the
    adapter's source and :data:`PEER_FORMAT`."""
    digests = {str(p): _digest(p) for p in files if p.exists()}
    text = json.dumps(
        {"config": _digested(config, digests), "source": adapter.source, "format": PEER_FORMAT},
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _portable(config: Any) -> Any:
    """``config`` naming no machine's folders (a committed record): paths below the repository
    relative to it, below the shared root as ``shared:…``, below the home folder as ``~/…``."""
    if isinstance(config, dict):
        return {k: _portable(v) for k, v in config.items()}
    if isinstance(config, list):
        return [_portable(v) for v in config]
    if isinstance(config, str) and config.startswith("/"):
        inside = f"{REPO}/"
        return config.removeprefix(inside) if config.startswith(inside) else portable_source(config)
    return config


def _files_in(config: Any) -> list[Path]:
    if isinstance(config, dict):
        return [p for v in config.values() for p in _files_in(v)]
    if isinstance(config, list):
        return [p for v in config for p in _files_in(v)]
    if isinstance(config, str) and config.startswith("/") and Path(config).exists():
        return [Path(config)]  # a file or a folder of files (its content is digested)
    return []


@dataclass(frozen=True)
class _PeerJob:
    row: str
    seed: int
    config: dict[str, Any]
    key: str
    record: Path
    work: Path
    cost: float  # expected CPU seconds (ordering only)


def _header(adapter: PeerAdapter) -> str:
    lines = [f"// {adapter.model}: adapted from {adapter.source}", "// Changed, and why:"]
    lines += [f"//  * {change}" for change in adapter.changes]
    return "\n".join(lines) + "\n"


def _peer_step(
    name: str, argv: Sequence[str], env: Mapping[str, str], log: Path, append: bool = False
) -> None:
    """One command in the peer's venv, its output in ``log`` (after what it holds: ``append``).

    Raises:
        RuntimeError: it failed; the message ends with the log's last lines.
    """
    with log.open("a" if append else "w") as handle:
        done = subprocess.run(list(argv), env=dict(env), stdout=handle, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = "".join(log.read_text(encoding="utf-8").splitlines(keepends=True)[-8:])
        raise RuntimeError(f"{name} failed (exit {done.returncode}; {log}):\n{tail}")


#: An allennlp 2.10.1 checkpoint file (``allennlp/training/checkpointer.py``): the model's or
#: the training state after ``e`` completed epochs and ``b`` batches of the next
#: (``model_state_e3_b0.th`` follows the third epoch).
_CHECKPOINT = re.compile(r"(?:model|training)_state_e(\d+)_b(\d+)\.th")
#: The work folder's list of the epochs after which the run was resumed (the record's
#: ``resumed_after``).
_RESUMED = "resumed_after.json"


def resume_point(previous: bytes | None, config: bytes, complete: Iterable[int]) -> int | None:
    """Where a new attempt of a peer run starts: after the last whole epoch checkpoint of the
    previous attempt in its work folder (``complete``, :func:`complete_epochs`), when that
    attempt's ``config.jsonnet`` (``previous``) is ``config`` byte for byte.

    Returns:
        The epoch to resume after (allennlp's ``--recover``), or ``None``: start afresh (no
        previous attempt, another configuration, or no whole epoch checkpoint).
    """
    if previous is None or previous != config:
        return None
    return max(complete, default=None)


def complete_epochs(model: Path) -> list[int]:
    """The epochs ``N`` whose end-of-epoch checkpoint in ``model`` (the serialization folder) is
    whole: ``model_state_e<N>_b0.th`` and ``training_state_e<N>_b0.th``, each a complete zip
    archive (``torch.save``'s format; a file cut short by a kill lacks the archive's closing
    directory), in increasing order."""
    if not model.is_dir():
        return []
    found = []
    for path in model.glob("model_state_e*_b0.th"):
        match = _CHECKPOINT.fullmatch(path.name)
        if match is None or match.group(2) != "0":
            continue
        training = model / f"training_state_e{match.group(1)}_b0.th"
        if zipfile.is_zipfile(path) and training.is_file() and zipfile.is_zipfile(training):
            found.append(int(match.group(1)))
    return sorted(found)


def _drop_checkpoints_after(model: Path, epoch: int) -> None:
    """Remove ``model``'s checkpoint files later than the end of epoch ``epoch`` (one cut short
    by a kill, or one within the next epoch): allennlp's ``--recover`` restores the latest."""
    for path in model.iterdir():
        match = _CHECKPOINT.fullmatch(path.name)
        if match is not None and (int(match.group(1)), int(match.group(2))) > (epoch, 0):
            path.unlink()


def resumed_after(work: Path) -> list[int]:
    """The epochs after which the run in ``work`` was resumed, in order (empty: one attempt)."""
    path = work / _RESUMED
    return [int(e) for e in json.loads(path.read_text(encoding="utf-8"))] if path.is_file() else []


def _prepare_work(work: Path, config: bytes) -> int | None:
    """``work`` ready for an attempt of the run with ``config`` (its ``config.jsonnet``): the
    previous attempt's folder kept when it can be resumed (:func:`resume_point`; the epochs
    resumed after noted in ``resumed_after.json``), else emptied and the configuration written.

    Returns:
        The epoch the attempt resumes after, or ``None`` (afresh).
    """
    config_path, model = work / "config.jsonnet", work / "run" / "model"
    previous = config_path.read_bytes() if config_path.is_file() else None
    resume = resume_point(previous, config, complete_epochs(model))
    if resume is None:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        config_path.write_bytes(config)
        return None
    _drop_checkpoints_after(model, resume)
    write_json(work / _RESUMED, [*resumed_after(work), resume])
    return resume


def _run_peer(
    job: _PeerJob,
    request: PeerRequest,
    files: Mapping[str, Path],
    recipe: Any,
    echo: Callable[[str], None] = print,
) -> str:
    """Train (or resume a killed attempt: :func:`resume_point`), score every epoch, write the
    record; returns a one-line summary."""
    adapter = request.adapter
    python = ensure_venv()
    # JSON is jsonnet; the header lists the changes
    config = (_header(adapter) + json.dumps(job.config, indent=2) + "\n").encode("utf-8")
    resume = _prepare_work(job.work, config)
    config_path, log = job.work / "config.jsonnet", job.work / "train.log"
    # one thread (as the project's runs); the peer-side folder on the path: peer_compat and the
    # timing callback peer_timing (CPU seconds of each training pass; on a resumed run it puts
    # back the random generators and carried states of the checkpoint)
    env = {**peer_env(), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    packages = ("peer_compat", "peer_timing", *adapter.packages)
    include = [a for p in packages for a in ("--include-package", p)]
    model = job.work / "run" / "model"
    started = time.perf_counter()
    # ``-m allennlp``, not the venv's bin/allennlp script: the venv was built in another folder
    train = [str(python), "-m", "allennlp", "train", str(config_path), "-s", str(model)]
    train += [*include, "--file-friendly-logging"]
    if resume is not None:
        train.append("--recover")
        echo(f"peer: resuming allennlp {job.row} seed={job.seed} after epoch {resume} ({job.key})")
        with log.open("a", encoding="utf-8") as handle:  # the earlier attempts' output stays
            handle.write(f"\n==== resumed after epoch {resume}: {' '.join(train)}\n\n")
    _peer_step("allennlp train", train, env, log, append=resume is not None)
    epochs_json = job.work / "epochs.json"
    score = [str(python), str(_EPOCHS_SCRIPT), str(model), f"dev={files['dev']}"]
    score += ["--out", str(epochs_json), "--keep", *adapter.output_keys]
    score += ["--batch-size", str(request.batch_size), *include]
    _peer_step(_EPOCHS_SCRIPT.name, score, env, job.work / "epochs.log")
    record = _peer_record(job, request, recipe, model, epochs_json)
    record["wall_s"] = round(time.perf_counter() - started, 1)
    job.record.parent.mkdir(parents=True, exist_ok=True)
    for other in peer_records(request, job.record.parent.parent.parent):
        if other["row"] == job.row and other["seed"] == job.seed and other["key"] != job.key:
            (job.record.parent / f"{other['key']}.json").unlink()  # superseded by this run
    write_json(job.record, record)
    final = record["epochs"][-1]
    return f"allennlp {job.row} seed={job.seed}: dev {final['metric']:.4f} ({job.key})"


def _peer_record(
    job: _PeerJob, request: PeerRequest, recipe: Any, model: Path, epochs_json: Path
) -> dict[str, Any]:
    """Each epoch scored by the recipe's own scorer, with the peer's number and timing."""
    adapter, task = request.adapter, request.spec
    examples = recipe.splits["dev"]
    timing = {row["epoch"]: row for row in json.loads((model / "peer_timing.json").read_text())}
    scored = json.loads(epochs_json.read_text(encoding="utf-8"))["epochs"]
    epochs = []
    for entry in scored:
        epoch = int(entry["epoch"])  # 1-based (model_state_e1 follows the first epoch)
        predictions = adapter.predictions(entry["dev"]["outputs"], examples)
        scores = recipe.score(predictions, examples)
        units = recipe.unit_statistics(predictions, examples)
        times = timing.get(epoch - 1, {})  # peer_timing counts epochs from 0
        epochs.append(
            {
                "epoch": epoch,
                "metric": scores[task.metric.key],
                "scores": dict(scores),  # every figure of the scorer (per type too)
                "native": entry["dev"]["metrics"].get(adapter.metric_key),
                "train_cpu_s": times.get("train_cpu_s"),
                "train_s": times.get("train_s"),
                "peak_rss_mb": times.get("peak_rss_mb"),
                "units": {"ids": list(units.ids), "rows": [list(r) for r in units.rows]},
            }
        )
    from bilm.machine import cpu_model

    return {
        "format": PEER_FORMAT,
        "task": request.task,
        "key": job.key,
        "row": job.row,
        "seed": job.seed,
        "data": request.data,
        "overrides": list(request.all_overrides),
        "request_overrides": list(request.overrides),
        "epochs_requested": request.epochs,
        "batch_size": request.batch_size,
        "model": adapter.model,
        "source": adapter.source,
        "changes": list(adapter.changes),
        "config": _portable(job.config),
        "cpu": cpu_model(),
        "threads": 1,
        "resumed_after": resumed_after(job.work),
        "epochs": epochs,
    }


# ------------------------------------------------------------------------------ project runs
@dataclass(frozen=True)
class _ProjectJob:
    row: str
    seed: int
    argv: tuple[str, ...]
    cost: float


def project_overrides(request: PeerRequest) -> tuple[str, ...]:
    """The project runs' ``--set`` list: the request's, the batch size, and what makes the
    preset evaluate once per epoch without stopping early (as the peer)."""
    config = request.spec.configure(request.preset, list(request.all_overrides))
    extra = [f"train.batch_size={request.batch_size}"]
    patience = config.train.patience
    if patience is not None and patience < request.epochs:
        extra.append(f"train.patience={request.epochs}")
    if config.train.eval_every is not None:
        extra.append("train.eval_every=null")  # one evaluation per epoch, as the peer
    return (*request.all_overrides, *extra)


def _project_argv(
    request: PeerRequest, rep: str, state: str, seed: int, out: Path, work: Path
) -> tuple[str, ...]:
    # one --set (a second would replace it); the variant last, so that it wins
    changes, elmo_changes = split_variant(request.variant)
    sets = ["--set", *project_overrides(request), *changes]
    reps = ["--repr", "none"]
    if rep == "elmo":  # the shipped biLM, frozen as the peer's (no task fine-tuning)
        reps = ["--repr", "elmo", "--elmo", SHIPPED_BILM, "--state", state, "--finetune-bilm", "0"]
        reps += _elmo_flags(elmo_changes)
    return (
        sys.executable,
        "-m",
        "experiments",
        "run",
        request.task,
        "--config",
        request.preset,
        "--data",
        request.data,
        *sets,
        *reps,
        "--seeds",
        str(seed),
        "--max-epochs",
        str(request.epochs),
        "--threads",
        "1",
        "--precision",
        request.precision,
        "--store",
        str(project_store(out, request.precision)),
        "--work",
        str(work / _of_precision("project", request.precision)),
        "--out",
        str(work / "project-tables"),
        "--epoch-units",
        "--quiet",
    )


#: The longest log file name kept whole (most file systems allow 255 bytes a name).
_LOG_NAME_BYTES = 200


def project_log_name(row: str, seed: int) -> str:
    """The file name of a project run's log: the row with ``-`` for spaces and its seed; a row
    too long for one file name is cut, with the SHA-256 of the whole row after the cut."""
    name = f"{row.replace(' ', '-')}-s{seed}.out"
    if len(name.encode()) <= _LOG_NAME_BYTES:
        return name
    digest = hashlib.sha256(row.encode()).hexdigest()[:12]
    head = name.encode()[: _LOG_NAME_BYTES - 40].decode(errors="ignore")
    return f"{head}-{digest}-s{seed}.out"


def _run_project(job: _ProjectJob, log_dir: Path) -> str:
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / project_log_name(job.row, job.seed)
    with log.open("w") as handle:
        done = subprocess.run(job.argv, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = "".join(log.read_text(encoding="utf-8").splitlines(keepends=True)[-5:])
        raise RuntimeError(f"project {job.row} seed={job.seed} failed (log {log}):\n{tail}")
    return f"project {job.row} seed={job.seed}"


# ------------------------------------------------------------------------------- the request
def _rows(request: PeerRequest) -> list[tuple[str, str, str]]:
    """(row, representation, project state) of every row, baseline first."""
    rows = []
    for rep in request.representations:
        if rep == "none":
            rows.append(("baseline", "none", "reset"))
        elif rep == "elmo":
            rows += [(f"elmo {state}", "elmo", state) for state in request.states]
        else:
            raise ValueError(f"representation {rep!r}: the peer compares none and elmo")
    return rows


def _peer_job(
    request: PeerRequest,
    recipe: Any,
    files: Mapping[str, Path],
    inputs: PeerInputs,
    rep: str,
    seed: int,
    out: Path,
    root: Path,
) -> _PeerJob:
    """The peer run of representation ``rep`` (``none`` or ``elmo``) and ``seed``: its record
    under ``out``, its work folder under ``root`` (the task's work folder)."""
    adapter = request.adapter
    run = PeerRun(request.epochs, request.batch_size, seed, rep == "elmo")
    config = adapter.config(files, inputs, run, recipe)
    key = peer_key(config, _files_in(config), adapter)
    record = out / "runs" / request.task / f"{key}.json"
    cost = request.epochs * (2.0 if rep == "elmo" else 1.0)
    row = "baseline" if rep == "none" else "elmo"
    return _PeerJob(row, seed, config, key, record, root / "peer" / key, cost)


def run_request(
    request: PeerRequest,
    out: Path,
    work: Path,
    max_parallel: int = 2,
    train: bool = True,
    echo: Callable[[str], None] = print,
) -> tuple[list[Series], Any]:
    """Train what is missing (unless ``train`` is False), then collect both sides' series.

    Returns:
        The series (peer rows, then project rows) and the recipe (the scored dev split).
    """
    recipe = _recipe(request)
    work = work.resolve()  # the peer runs in other folders than this process
    root = work / request.task
    root.mkdir(parents=True, exist_ok=True)
    files = write_peer_data(request, recipe, root)
    rows = _rows(request)
    peer_jobs: list[_PeerJob] = []
    project_jobs: list[_ProjectJob] = []
    needs_elmo = any(rep == "elmo" for _, rep, _ in rows)
    inputs = prepare_inputs(needs_elmo)
    for row, rep, state in rows:
        for seed in request.seeds:
            if row == "baseline" or state == request.states[0]:  # the peer has one ELMo row
                peer_jobs.append(_peer_job(request, recipe, files, inputs, rep, seed, out, root))
            argv = _project_argv(request, rep, state, seed, out, work)
            cost = request.epochs * (1.5 if state == "carry" and rep == "elmo" else 0.8)
            shown = (*request.variant, *precision_variant(request.precision))
            project_jobs.append(_ProjectJob(variant_row(row, shown), seed, argv, cost))
    logs = root / "project-logs"
    todo: list[tuple[float, Callable[[], str]]] = []
    for job in peer_jobs:
        if not _valid_record(job.record):
            run_peer = functools.partial(_run_peer, job, request, files, recipe, echo)
            todo.append((job.cost, run_peer))
    for pjob in project_jobs:
        todo.append((pjob.cost, functools.partial(_run_project, pjob, logs)))
    if train:
        if len(todo) > len(project_jobs):  # a peer run to train: its venv first (built once)
            ensure_venv()
        todo.sort(key=lambda item: -item[0])
        echo(
            f"peer: {len(todo)} jobs ({len(peer_jobs)} allennlp, {len(project_jobs)} project; "
            f"finished allennlp runs are reused), {max_parallel} at a time"
        )
        with ThreadPoolExecutor(max_workers=max_parallel) as pool:
            for line in pool.map(lambda item: item[1](), todo):
                echo(f"peer: done {line}")
    return collect(request, out), recipe


def _valid_record(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("format") == PEER_FORMAT
    except json.JSONDecodeError:
        return False


def _same_request(record: Mapping[str, Any], request: PeerRequest) -> bool:
    return (
        record.get("format") == PEER_FORMAT
        and record.get("data") == request.data
        and tuple(record.get("overrides", ())) == request.all_overrides
        and record.get("epochs_requested") == request.epochs
        and record.get("batch_size") == request.batch_size
        and record.get("seed") in request.seeds
    )


def peer_records(request: PeerRequest, out: Path) -> list[dict[str, Any]]:
    """The stored peer records of ``request`` (every row and seed found)."""
    folder = out / "runs" / request.task
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(
                f"{path}: damaged peer record ({error}); delete it to retrain"
            ) from None
        if _same_request(record, request):
            found.append(record)
    return found


def _points(epochs: Sequence[Mapping[str, Any]]) -> list[EpochPoint]:
    return [
        EpochPoint(
            int(e["epoch"]),
            float(e["metric"]),
            e.get("native"),
            float(e.get("train_cpu_s") or 0.0),
            float(e.get("peak_rss_mb") or 0.0),
            (tuple(e["units"]["ids"]), e["units"]["rows"]) if e.get("units") else None,
        )
        for e in epochs
    ]


def collect(request: PeerRequest, out: Path) -> list[Series]:
    """Both sides' series from the stored records alone: the peer's (``out/runs/<task>``) and
    the project's (``out/project-runs``, at the task's current version and configuration);
    missing runs are left out (a table can be built over several sittings).

    A project record counts only while its resolved configuration is what its spec resolves to
    now (:func:`experiments.run.identity.config_digest`): after a preset's default changes, the
    runs made under the old default are left out rather than shown under the row's name. A
    ``--variant`` item that the preset now has anyway drops from the row's name (a record made
    as ``baseline + init=allennlp`` is the ``baseline`` row once the preset draws so); a run
    asked for without such items, when there is one for the same seed, is shown instead.
    """
    from experiments.run.identity import config_digest
    from experiments.run.store import ResultsStore

    task = request.spec
    series: dict[tuple[str, str], Series] = {}
    for peer in peer_records(request, out):
        s = series.setdefault(("allennlp", peer["row"]), Series("allennlp", peer["row"]))
        s.runs[int(peer["seed"])] = _points(peer["epochs"])
        s.sources[int(peer["seed"])] = peer["key"]
    base_overrides = project_overrides(request)
    base = _pairs(base_overrides)
    preset = task.configure(request.preset, list(base_overrides))
    spares: dict[tuple[str, int], int] = {}  # (row, seed) → no-op items of the run shown
    stores = [(p, ResultsStore(project_store(out, p))) for p in PRECISIONS]
    present = [(p, store) for p, store in stores if store.root.is_dir()]
    for (precision, store), (row, rep, state) in itertools.product(present, _rows(request)):
        filters: dict[str, Any] = {"representation": rep, "preset": request.preset}
        if rep != "none":
            filters["state"] = state
        for record in store.records(request.task, data=request.data, **filters):
            spec = record.spec
            variant = _variant_of(spec.overrides, base)
            if (
                spec.task_version != task.version
                or spec.seed not in request.seeds
                or spec.max_epochs != request.epochs
                or variant is None
                or record.provenance.identity.get("config") != config_digest(spec, task)
                or record.provenance.identity.get("precision", "fp32") != precision
            ):
                continue
            changing = tuple(
                item
                for item in variant
                if task.configure(request.preset, [*base_overrides, item]) != preset
            )
            # of two runs of one row and seed, the one asked for without no-op items wins
            spare = len(variant) - len(changing)
            variant = changing
            folder = store.path_of(record.run_id)
            assert folder is not None
            points = []
            for line in record.log:
                units = None
                if "units_file" in line and (folder / line["units_file"]).is_file():
                    raw = json.loads((folder / line["units_file"]).read_text(encoding="utf-8"))
                    units = (tuple(raw["ids"]), raw["rows"])
                points.append(
                    EpochPoint(
                        int(line["epoch"]),
                        float(line[f"dev_{task.metric.key}"]),
                        None,
                        float(line.get("train_cpu_s", 0.0)),
                        float(line.get("peak_rss_mb", 0.0)),
                        units,
                    )
                )
            if rep == "elmo":
                variant = (*variant, *_elmo_variant_of(spec, task, request.preset))
            name = variant_row(row, (*variant, *precision_variant(precision)))
            if spares.get((name, spec.seed), spare + 1) <= spare:
                continue
            spares[(name, spec.seed)] = spare
            s = series.setdefault(("project", name), Series("project", name))
            s.runs[spec.seed] = points
            s.sources[spec.seed] = record.run_id
    order = [row for row, _, _ in _rows(request)]

    def rank(s: Series) -> tuple[int, int, str]:  # each base row first, its variants after it
        base = base_row(s.row)
        return (order.index(base) if base in order else -1, s.row != base, s.row)

    return sorted(series.values(), key=rank)


def precision_variant(precision: str) -> tuple[str, ...]:
    """The row-name item of a project precision other than fp32 (``precision=bf16``), the
    last item of its row's name (:func:`collect`)."""
    return () if precision == "fp32" else (f"precision={precision}",)


def fp32_row(row: str, precision: str = "bf16") -> str | None:
    """The fp32 row a ``precision`` row was trained beside (its name without the precision
    item), or ``None`` for a row of another precision."""
    suffix = variant_row("", precision_variant(precision))
    return row.removesuffix(suffix) if suffix and row.endswith(suffix) else None


def variant_row(row: str, variant: Sequence[str]) -> str:
    """The table's name of ``row`` run with the project-side changes ``variant``:
    ``baseline + train.batching=shuffled``; ``row`` itself without changes."""
    return " + ".join([row, *variant])


def base_row(row: str) -> str:
    """The row a variant row was derived from (:func:`variant_row`'s ``row``)."""
    return row.split(" + ")[0]


#: ``--variant elmo.KEY=VALUE``: the ELMo point's field (a :class:`~experiments.run.spec.RunSpec`
#: or :class:`~bilm.scalar_mix.MixSpec` field) that ``run``'s option of the same name sets.
ELMO_VARIANT_KEYS = ("sites", "mode", "lam", "layer_norm", "dropout")
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def split_variant(variant: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``variant``'s task-configuration changes (``--set`` items) and its ELMo-point changes
    (``elmo.KEY=VALUE`` items), each in the given order.

    Raises:
        ValueError: an item without ``=``, or an ``elmo.`` key outside
            :data:`ELMO_VARIANT_KEYS`, or a ``layer_norm`` that is not true or false.
    """
    sets, elmo = [], []
    for item in variant:
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"--variant takes KEY=VALUE, got {item!r}")
        if not key.startswith("elmo."):
            sets.append(item)
            continue
        name = key.removeprefix("elmo.")
        if name not in ELMO_VARIANT_KEYS:
            raise ValueError(
                f"--variant {item}: elmo.{name} is not one of "
                + ", ".join(f"elmo.{k}" for k in ELMO_VARIANT_KEYS)
            )
        if name == "layer_norm" and value.lower() not in (*_TRUE, *_FALSE):
            raise ValueError(f"--variant {item}: elmo.layer_norm takes true or false")
        elmo.append(item)
    return tuple(sets), tuple(elmo)


def _elmo_flags(items: Sequence[str]) -> list[str]:
    """``run``'s options for ``elmo.KEY=VALUE`` items (:func:`split_variant`'s second part)."""
    flags: list[str] = []
    for item in items:
        key, _, value = item.partition("=")
        name = key.removeprefix("elmo.")
        if name == "layer_norm":
            flags.append("--layer-norm" if value.lower() in _TRUE else "--no-layer-norm")
        else:
            flags += [f"--{name.replace('_', '-')}", value]
    return flags


def _elmo_variant_of(spec: Any, task: TaskSpec, preset: str) -> tuple[str, ...]:
    """How an ELMo run's point departs from the preset's (``named.base_spec``: its sites, the
    task's mix, its ELMo dropout), as ``elmo.KEY=VALUE`` items in :data:`ELMO_VARIANT_KEYS`
    order, each value written one way (``sites=input``, ``lam=0``, ``layer_norm=false``)."""
    default_sites = tuple(sorted(task.sites_for(preset)))
    found = {
        "sites": (",".join(sorted(spec.sites)), ",".join(default_sites)),
        "mode": (spec.mix.mode, task.default_mix.mode),
        "lam": (f"{spec.mix.lam:g}", f"{task.default_mix.lam:g}"),
        "layer_norm": (str(spec.mix.layer_norm).lower(), str(task.default_mix.layer_norm).lower()),
        "dropout": (f"{spec.dropout:g}", f"{task.elmo_dropout_for(preset):g}"),
    }
    return tuple(f"elmo.{k}={found[k][0]}" for k in ELMO_VARIANT_KEYS if found[k][0] != found[k][1])


def _pairs(overrides: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` items as a mapping, the last of a key winning (as ``--set`` applies them)."""
    return dict(item.partition("=")[::2] for item in overrides)


def _variant_of(overrides: Sequence[str], base: Mapping[str, str]) -> tuple[str, ...] | None:
    """The project-side changes of a run with ``overrides`` over the request's ``base``
    (``()`` for the base itself); ``None`` when the run lacks a base change (another request)."""
    pairs = _pairs(overrides)
    if any(key not in pairs for key in base):
        return None
    return tuple(f"{k}={v}" for k, v in sorted(pairs.items()) if base.get(k) != v)
