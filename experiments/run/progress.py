"""What a training run shows while it runs: a bar over each epoch's batches on a terminal
(:func:`tasks.common.progress.bars_enabled`), otherwise one stderr line per evaluation and, in
between, one about every minute of training (``RunOptions.eval_lines``); the readers' skip counts
at set-up, a resumed run's line, and the warning when a run looks dead
(:mod:`experiments.run.health`). Nothing here changes a number."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from experiments.run.health import Health
from experiments.run.spec import RunSpec
from tasks.common.progress import bars_enabled
from tasks.core import MetricSpec, TaskRecipe

__all__ = [
    "LINE_EVERY_S",
    "Bar",
    "LineBar",
    "epoch_bar",
    "print_evaluation",
    "print_resumed",
    "report_reads",
    "run_label",
    "warn_dead",
]


class Bar(Protocol):
    """The part of tqdm's interface the loop uses."""

    def update(self, n: int = 1) -> Any: ...

    def set_postfix(self, **values: Any) -> Any: ...

    def close(self) -> Any: ...


class _NullBar:
    """A progress bar that shows nothing (``RunOptions.progress`` off, or no terminal)."""

    def update(self, n: int = 1) -> None:
        """Nothing to advance."""

    def set_postfix(self, **values: Any) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to close."""


def run_label(spec: RunSpec) -> str:
    """A run as the stderr lines name it: ``RUN_ID task representation seed=N``."""
    return f"{spec.run_id} {spec.task} {spec.representation} seed={spec.seed}"


def now() -> float:
    """The clock of the progress lines (monotonic seconds)."""
    return time.monotonic()


#: Seconds of training between two progress lines off a terminal (:class:`LineBar`).
LINE_EVERY_S = 60.0


class LineBar:
    """Off a terminal: one stderr line about every :data:`LINE_EVERY_S` seconds of an epoch
    (batches done, the running loss, seconds), so a log never stays silent between evaluations.

    Args:
        label: the run, as the line names it.
        epoch: the epoch (0-based) and ``epochs`` the budget.
        done: batches already done (a resumed epoch) of ``total``.
        every: seconds between lines.
        clock: a monotonic clock (default :func:`now`, looked up when the bar starts).
    """

    def __init__(
        self,
        label: str,
        epoch: int,
        epochs: int,
        done: int,
        total: int,
        every: float = LINE_EVERY_S,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.label, self.epoch, self.epochs = label, epoch, epochs
        self.done, self.total, self.every = done, total, every
        self.clock = clock or now
        self.started = self.last = self.clock()
        self.postfix: dict[str, Any] = {}

    def update(self, n: int = 1) -> None:
        """``n`` more batches; a line when ``every`` seconds have passed since the last."""
        self.done += n
        at = self.clock()
        if at - self.last >= self.every:
            self.last = at
            extra = "".join(f", {k} {v}" for k, v in self.postfix.items())
            print(
                f"  {self.label} epoch {self.epoch + 1}/{self.epochs}: batch "
                f"{self.done}/{self.total}{extra}, {at - self.started:.0f} s",
                file=sys.stderr,
                flush=True,
            )

    def set_postfix(self, **values: Any) -> None:
        """What the next line shows after the batch count (e.g. ``loss``)."""
        self.postfix = values

    def close(self) -> None:
        """Nothing to close."""


def epoch_bar(
    progress: bool,
    task: str,
    epoch: int,
    epochs: int,
    done: int,
    total: int,
    lines: str | None = None,
) -> Bar:
    """A tqdm bar over the batches of epoch ``epoch`` (0-based), starting at the ``done``
    batches, when ``progress`` and stderr is a terminal (a log file gets no carriage returns);
    otherwise, with ``lines`` (the run's label: ``RunOptions.eval_lines``), a :class:`LineBar`;
    else nothing."""
    if not bars_enabled(progress):
        return _NullBar() if lines is None else LineBar(lines, epoch, epochs, done, total)
    from tqdm.auto import tqdm

    return tqdm(
        desc=f"{task} epoch {epoch + 1}/{epochs}",
        total=total,
        initial=done,
        leave=False,
        dynamic_ncols=True,
    )


def report_reads(
    spec: RunSpec, recipe: TaskRecipe, splits: Sequence[str], quiet: bool = False
) -> None:
    """What reading the data kept and skipped, as soon as the task has read it (before the
    checks that may refuse a split): one stderr line per split, e.g. ``  RUN read train: 7,007
    kept, 44 skipped (longer than max_tokens 44); from F``, repairs counted beside the skips
    (``train: 7 kept, 0 skipped, 1 repaired (offset_repaired 1)``). For a bundled demo set only
    when its reader skipped, repaired or cut something (its counts are otherwise the committed
    ones).

    With ``quiet`` (``--quiet``) one line for all splits, the counts only, and only when
    something was skipped, repaired or cut, e.g. ``  RUN read train: 10 kept, 1 skipped (no gold
    1); dev: 5 kept, 0 skipped``: a skip or repair is never shown only in ``read-stats.json``.

    Examples cut to a length limit are counted where the recipe reports them (a ``truncated``
    mapping of split → examples, as SNLI's recipe has).
    """
    stats = {s: recipe.read_stats[s] for s in splits if s in recipe.read_stats}
    cut = _truncated(recipe)
    changed = any(st.skipped or st.repaired or cut.get(s) for s, st in stats.items())
    if quiet:
        if changed:
            counts = "; ".join(
                st.summary(s, where=False) + _cut(cut.get(s, 0)) for s, st in stats.items()
            )
            print(f"  {spec.run_id} read {counts}", file=sys.stderr, flush=True)
        return
    if spec.data == "demo" and not changed:
        return
    for split, split_stats in stats.items():
        line = f"{split_stats.summary(split)}{_cut(cut.get(split, 0))}"
        print(f"  {spec.run_id} read {line}", file=sys.stderr, flush=True)


def _truncated(recipe: TaskRecipe) -> Mapping[str, int]:
    """Split → examples cut to a length limit, where the recipe reports them (``{}``)."""
    found = getattr(recipe, "truncated", None)
    if not isinstance(found, Mapping):
        return {}
    return {str(k): v for k, v in found.items() if isinstance(v, int)}


def _cut(n: int) -> str:
    return f", {n:,} cut to the length limit" if n else ""


def print_evaluation(
    spec: RunSpec,
    metric: MetricSpec,
    epochs: int,
    value: float,
    best: tuple[float, int],
    record: Mapping[str, Any],
) -> None:
    """One stderr line: run, epoch, dev metric, best so far, seconds (``eval_lines``).

    Args:
        spec: the run.
        metric: the task's selection metric.
        epochs: the run's epoch budget.
        value: the dev metric of this evaluation.
        best: the best value so far (natural units) and its epoch.
        record: the evaluation's log line (``epoch``, ``seconds``).
    """
    print(
        f"  {run_label(spec)} epoch {record['epoch']}/{epochs}: dev {metric.key} "
        f"{metric.display(value)} (best {metric.display(best[0])} at epoch {best[1]}) "
        f"{record['seconds']:.0f} s",
        file=sys.stderr,
        flush=True,
    )


def print_resumed(spec: RunSpec, epoch: int, step: int, epochs: int) -> None:
    """One stderr line: the run goes on from its checkpoint (after ``epoch`` of ``epochs``
    epochs, optimizer step ``step``), continuing as the uninterrupted run would."""
    print(
        f"  {run_label(spec)}: resumed from its checkpoint after epoch {epoch}/{epochs} "
        f"(step {step})",
        file=sys.stderr,
        flush=True,
    )


def warn_dead(spec: RunSpec, verdict: Health, epoch: object) -> None:
    """One stderr line: the run looks dead at ``epoch``, and why (it may still recover: the
    record is flagged by the verdict at the end)."""
    print(
        f"  warning: run {spec.run_id} ({spec.task} {spec.representation} seed={spec.seed}) "
        f"looks dead at epoch {epoch}: {'; '.join(verdict.reasons)}",
        file=sys.stderr,
        flush=True,
    )
