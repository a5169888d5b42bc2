"""Where a training run reports its metrics: nowhere (:class:`NullSink`) or Weights & Biases.

The runner writes to a :class:`Sink`: scalars per step (``lr``, ``train_loss``, ``dev_<metric>``),
the scalar-mix weights ``s_j`` and ``γ`` of every injection site (:meth:`Sink.log_mix`), and a
final summary. :class:`WandbSink` opens one W&B run per training run; :func:`log_artifacts` logs
rendered tables and plots as one artifact from a short ``render`` run (:func:`log_outputs`: the
command line's call of it).

W&B never calls the network unless asked: the mode is ``WandbOptions.mode``, else the
``WANDB_MODE`` environment variable, else ``"offline"`` (runs are written under
``<dir>/wandb/offline-run-*`` and can be uploaded later with ``wandb sync``). ``wandb`` is imported
lazily, inside the functions that need it: importing :mod:`experiments` never imports it.

Typical use::

    sink = WandbSink(WandbOptions("elmo-bench", group="table1"), name=spec.run_id,
                     config=spec.to_dict(), work_dir=work)
    sink.log({"lr": 1e-3, "train_loss": 2.3}, step=100)
    sink.log_mix(injector.layer_weights(), injector.gammas(), step=100)
    sink.finish({"dev_f1": 85.1})
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

#: Suffixes :func:`log_artifacts` expects (anything else is still added to the artifact).
TABLE_SUFFIXES = (".md", ".csv", ".tex")
PLOT_SUFFIXES = (".png",)


class Sink(Protocol):
    """What the runner writes to."""

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        """Scalars at ``step`` (e.g. ``lr``, ``train_loss``, ``dev_f1``)."""
        ...

    def log_mix(
        self, weights: Mapping[str, Sequence[float]], gammas: Mapping[str, float], step: int
    ) -> None:
        """Normalised layer weights ``s_j`` and ``γ`` per injection site at ``step``."""
        ...

    def finish(self, summary: Mapping[str, float]) -> None:
        """Final numbers; the sink is closed afterwards."""
        ...


class NullSink:
    """A sink that does nothing (the default)."""

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        pass

    def log_mix(
        self, weights: Mapping[str, Sequence[float]], gammas: Mapping[str, float], step: int
    ) -> None:
        pass

    def finish(self, summary: Mapping[str, float]) -> None:
        pass


@dataclass(frozen=True)
class WandbOptions:
    """W&B settings, from ``--wandb PROJECT`` on the command line.

    Attributes:
        project: W&B project name.
        group: runs of one sweep or table share a group.
        directory: parent of the ``wandb/`` folder (default: ``WANDB_DIR``, else the run's work
            folder; for :func:`log_artifacts`, else the current directory).
        mode: ``"offline"``, ``"online"`` or ``"disabled"`` (default: ``WANDB_MODE``, else
            ``"offline"``).
    """

    project: str
    group: str | None = None
    directory: str | None = None
    mode: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.project, str) or not self.project.strip():
            raise ValueError(
                f"WandbOptions.project must be a non-empty string, got {self.project!r}"
            )

    def resolved_mode(self) -> str:
        """``mode``, else ``WANDB_MODE``, else ``"offline"`` (never online by default)."""
        return self.mode or os.environ.get("WANDB_MODE") or "offline"

    def resolved_directory(self, fallback: Path) -> Path:
        """``directory``, else ``WANDB_DIR``, else ``fallback``."""
        return Path(self.directory or os.environ.get("WANDB_DIR") or fallback)


#: ``reinit="create_new"`` (one W&B run per training run, several per process) needs 0.19.10.
MIN_WANDB = (0, 19, 10)


def _import_wandb() -> Any:
    try:
        import wandb
    except ImportError as exc:
        raise ImportError("W&B logging needs the wandb package: pip install wandb") from exc
    version = tuple(int(x) for x in re.findall(r"\d+", wandb.__version__)[:3])
    if version < MIN_WANDB:
        need = ".".join(map(str, MIN_WANDB))
        raise ImportError(
            f"W&B logging needs wandb>={need}, found {wandb.__version__}: "
            f"pip install 'wandb>={need}'"
        )
    return wandb


def _init(
    options: WandbOptions,
    *,
    name: str,
    directory: Path,
    job_type: str,
    config: Mapping[str, Any] | None = None,
    tags: Sequence[str] = (),
) -> Any:
    """A new W&B run, quiet, without code/git capture or system metrics sampling."""
    wandb = _import_wandb()
    directory.mkdir(parents=True, exist_ok=True)
    settings = wandb.Settings(
        silent=True,
        console="off",
        save_code=False,
        disable_git=True,
        disable_job_creation=True,
        x_disable_stats=True,
    )
    return wandb.init(
        project=options.project,
        group=options.group,
        job_type=job_type,
        name=name,
        config=dict(config) if config is not None else None,
        tags=list(tags) or None,
        dir=str(directory),
        mode=options.resolved_mode(),
        reinit="create_new",
        settings=settings,
    )


def _scalar(value: Any) -> Any:
    """Python numbers as they are; 0-dim tensors and NumPy scalars as Python numbers."""
    if isinstance(value, (bool, int, float, str)) or not hasattr(value, "item"):
        return value
    return value.item()


def _tags(config: Mapping[str, Any]) -> list[str]:
    """``task`` and ``representation`` values of the config, when present (W&B tags ≤ 64 chars)."""
    return [str(config[k])[:64] for k in ("task", "representation") if config.get(k)]


class WandbSink:
    """One W&B run per training run.

    Args:
        options: project, group, directory, mode.
        name: the run's name in W&B (the run id of its :class:`~experiments.run.spec.RunSpec`).
        config: ``RunSpec.to_dict()`` plus whatever the caller adds; ``task`` and
            ``representation`` also become tags.
        work_dir: the run's work folder (where ``wandb/`` goes unless ``directory`` or
            ``WANDB_DIR`` says otherwise).
        job_type: W&B job type.
    """

    def __init__(
        self,
        options: WandbOptions,
        *,
        name: str,
        config: Mapping[str, Any],
        work_dir: Path,
        job_type: str = "train",
    ) -> None:
        self.options = options
        self.run = _init(
            options,
            name=name,
            directory=options.resolved_directory(Path(work_dir)),
            job_type=job_type,
            config=config,
            tags=_tags(config),
        )
        self._last_weights: dict[str, list[float]] = {}
        self._last_gammas: dict[str, float] = {}
        self._finished = False

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        """``metrics`` at ``step`` (W&B steps must not decrease)."""
        self.run.log({k: _scalar(v) for k, v in metrics.items()}, step=int(step))

    def log_mix(
        self, weights: Mapping[str, Sequence[float]], gammas: Mapping[str, float], step: int
    ) -> None:
        """``mix/<site>/s_<j>`` and ``mix/<site>/gamma`` scalars at ``step``."""
        data: dict[str, float] = {}
        for site, ws in weights.items():
            for j, w in enumerate(ws):
                data[f"mix/{site}/s_{j}"] = float(w)
        for site, gamma in gammas.items():
            data[f"mix/{site}/gamma"] = float(gamma)
        if data:
            self.run.log(data, step=int(step))
        self._last_weights = {site: [float(w) for w in ws] for site, ws in weights.items()}
        self._last_gammas = {site: float(g) for site, g in gammas.items()}

    def finish(self, summary: Mapping[str, float]) -> None:
        """Log the last mix weights as a table and bar charts, update the summary, close the run."""
        if self._finished:
            return
        wandb = _import_wandb()
        if self._last_weights:
            rows = [
                [site, j, w, self._last_gammas.get(site, float("nan"))]
                for site, ws in sorted(self._last_weights.items())
                for j, w in enumerate(ws)
            ]
            table = wandb.Table(columns=["site", "layer", "weight", "gamma"], data=rows)
            charts: dict[str, Any] = {"mix/final_weights": table}
            for site, ws in sorted(self._last_weights.items()):
                site_table = wandb.Table(
                    columns=["layer", "weight"], data=[[f"s_{j}", w] for j, w in enumerate(ws)]
                )
                charts[f"mix/{site}/final_weights"] = wandb.plot.bar(
                    site_table, "layer", "weight", title=f"layer weights s_j ({site})"
                )
            self.run.log(charts)
        self.run.summary.update({k: _scalar(v) for k, v in summary.items()})
        self.run.finish()
        self._finished = True


def _artifact_name(name: str) -> str:
    """W&B artifact names allow letters, digits, ``-``, ``_`` and ``.``."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")
    return clean or "results"


def log_artifacts(
    options: WandbOptions,
    paths: Sequence[Path],
    *,
    name: str,
    artifact_type: str = "results",
) -> None:
    """Log rendered tables (``.md``/``.csv``/``.tex``) and plots (``.png``) as one artifact.

    One short W&B run (job type ``render``, in ``options.group``) adds every path to one artifact
    named ``name`` (characters W&B does not allow become ``-``); PNGs are also logged as
    ``wandb.Image`` (key ``plots/<stem>``) and CSVs as ``wandb.Table`` (key ``tables/<stem>``).

    Raises:
        FileNotFoundError: a path does not exist (checked before any run is started).
    """
    paths = [Path(p) for p in paths]
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(f"cannot log missing files: {missing}")
    wandb = _import_wandb()
    run = _init(
        options,
        name=name,
        directory=options.resolved_directory(Path.cwd()),
        job_type="render",
    )
    try:
        artifact = wandb.Artifact(_artifact_name(name), type=artifact_type)
        media: dict[str, Any] = {}
        for path in paths:
            if path.is_dir():
                artifact.add_dir(str(path), name=path.name)
                continue
            artifact.add_file(str(path), name=path.name)
            suffix = path.suffix.lower()
            if suffix in PLOT_SUFFIXES:
                media[f"plots/{path.stem}"] = wandb.Image(str(path), caption=path.name)
            elif suffix == ".csv":
                with path.open(newline="", encoding="utf-8") as f:
                    rows = list(csv.reader(f))
                if rows and all(len(row) == len(rows[0]) for row in rows):
                    media[f"tables/{path.stem}"] = wandb.Table(columns=rows[0], data=rows[1:])
        if media:
            run.log(media)
        run.log_artifact(artifact)
    finally:
        run.finish()


def log_outputs(project: str | None, paths: Sequence[Path], *, group: str) -> None:
    """A command's written tables and plots as one artifact (``--wandb PROJECT``).

    The one place the command line logs artifacts: :func:`log_artifacts` with the artifact and
    its short ``render`` run both named ``group`` (e.g. ``table1-mini-demo``), in that group.

    Args:
        project: the W&B project; ``None`` (no ``--wandb``): nothing is logged.
        paths: the files written.
        group: the command's group name (runs of one command share it).
    """
    if project:
        log_artifacts(WandbOptions(project=project, group=group), paths, name=group)
