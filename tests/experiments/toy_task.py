"""A toy task defined only here: it proves that a new task needs no change in ``experiments/``.

Sentence classification: a sentence of corpus-like words is positive when it contains one of a
few "cue" words. The model is an embedding → (ELMo at the input) → tanh layer → (ELMo at the
output) → masked mean → linear; the metric is accuracy. Register it with :func:`registered`
(the test fixtures patch ``tasks.registry.TASKS``; nothing in the repository lists it).
"""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from bilm.scalar_mix import MixSpec
from tasks.common.io import ReadStats
from tasks.common.overrides import apply_overrides
from tasks.core import (
    Forward,
    MetricSpec,
    Optimizer,
    RecipeBase,
    Represent,
    TableRow,
    TaskSpec,
    TrainConfig,
    UnitStatistics,
    iter_batches,
)
from tasks.features.inject import Injector
from tasks.representations import Layers

WORDS = "the a of and to in was he she it his her that with for as had you not be".split()
CUES = ("happy", "glad", "merry")


@dataclass(frozen=True)
class ToyExample:
    tokens: tuple[str, ...]
    label: int


@dataclass(frozen=True)
class ToyBatch:
    words: Tensor  # (batch, time)
    mask: Tensor  # (batch, time) bool
    labels: Tensor  # (batch,)
    layers: Layers  # empty for the baseline


@dataclass(frozen=True)
class ToyOutput:
    loss: Tensor
    predictions: Tensor  # (batch,)


@dataclass(frozen=True)
class ToyConfig:
    dim: int = 8
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            epochs=6, patience=None, batch_size=16, optimizer=Optimizer("adam", lr=0.03)
        )
    )


def write_data(folder: Path, n: int = 160, seed: int = 0) -> Path:
    """``train.jsonl``, ``dev.jsonl`` and ``test.jsonl`` of toy sentences (deterministic)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", n), ("dev", n // 2), ("test", n // 2)):
        lines = []
        for _ in range(count):
            tokens = [rng.choice(WORDS) for _ in range(rng.randint(3, 9))]
            label = rng.random() < 0.5
            if label:
                tokens[rng.randrange(len(tokens))] = rng.choice(CUES)
            lines.append(json.dumps({"tokens": tokens, "label": int(label)}))
        (folder / f"{split}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


class ToyModel(nn.Module):
    def __init__(self, vocab_size: int, dim: int, injector: Injector) -> None:
        super().__init__()
        self.injector = injector
        self.embed = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.hidden = nn.Linear(dim + injector.extra_dim("input"), dim)
        self.out = nn.Linear(dim + injector.extra_dim("output"), 2)

    def forward(self, batch: ToyBatch) -> ToyOutput:
        injected = self.injector(batch.layers)
        x = self.injector.concat("input", self.embed(batch.words), injected)  # (b, t, d + e)
        h = self.injector.concat("output", torch.tanh(self.hidden(x)), injected)  # (b, t, d + e)
        m = batch.mask[:, :, None].to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp_min(1.0)  # (b, d + e)
        logits = self.out(pooled)  # (b, 2)
        return ToyOutput(F.cross_entropy(logits, batch.labels), logits.argmax(-1))


@dataclass
class ToyRecipe(RecipeBase):
    config: ToyConfig
    splits: dict[str, list[ToyExample]]
    vocab: dict[str, int]
    read_stats: dict[str, ReadStats] = field(default_factory=dict)  # the reader skips nothing

    def sequences(self, examples: Sequence[ToyExample]) -> list[list[str]]:
        return [list(e.tokens) for e in examples]

    def size(self, example: ToyExample) -> int:
        return len(example.tokens)

    def collate(self, examples: Sequence[ToyExample], represent: Represent) -> ToyBatch:
        t = max(len(e.tokens) for e in examples)
        words = torch.zeros(len(examples), t, dtype=torch.long)
        for i, e in enumerate(examples):
            words[i, : len(e.tokens)] = torch.tensor([self.vocab.get(w, 1) for w in e.tokens])
        labels = torch.tensor([e.label for e in examples])
        layers = represent([list(e.tokens) for e in examples])
        return ToyBatch(words, words != 0, labels, layers)

    def build_model(self, injector: Injector) -> nn.Module:
        return ToyModel(len(self.vocab) + 2, self.config.dim, injector)

    def predict(
        self, forward: Forward, examples: Sequence[ToyExample], represent: Represent
    ) -> dict[int, int]:
        ids = {id(e): i for i, e in enumerate(examples)}
        out: dict[int, int] = {}
        for chunk, batch in iter_batches(self, examples, represent):
            for e, p in zip(chunk, forward(batch).predictions.tolist(), strict=True):
                out[ids[id(e)]] = p
        return out

    def score(self, predictions: Mapping[int, int], examples: Sequence[ToyExample]) -> dict:
        right = sum(predictions[i] == e.label for i, e in enumerate(examples))
        return {"accuracy": right / max(1, len(examples))}

    def unit_statistics(
        self, predictions: Mapping[int, int], examples: Sequence[ToyExample]
    ) -> UnitStatistics:
        """Per example ``(correct, 1)``."""
        rows = tuple((float(predictions[i] == e.label), 1.0) for i, e in enumerate(examples))
        return UnitStatistics(tuple(str(i) for i in range(len(examples))), rows)

    def write_predictions(
        self, predictions: Mapping[int, int], examples: Sequence[ToyExample], path: Path
    ) -> Path:
        out = path.with_suffix(".txt")
        out.write_text("".join(f"{predictions[i]}\n" for i in range(len(examples))))
        return out


def make_task(demo_folder: Path) -> TaskSpec:
    """The toy :class:`TaskSpec`; its demo set is written into ``demo_folder`` on first use."""

    def demo() -> Path:
        if not (demo_folder / "test.jsonl").exists():
            write_data(demo_folder)
        return demo_folder

    def setup(preset: str, overrides: Sequence[str], data_dir: str | None) -> ToyRecipe:
        config = apply_overrides(ToyConfig(), overrides)
        folder = Path(data_dir) if data_dir else demo()
        splits = {}
        for split in ("train", "dev", "test"):
            text = (folder / f"{split}.jsonl").read_text(encoding="utf-8")
            rows = [json.loads(line) for line in text.splitlines() if line]
            splits[split] = [ToyExample(tuple(r["tokens"]), r["label"]) for r in rows]
        words = sorted({w for e in splits["train"] for w in e.tokens})
        return ToyRecipe(config, splits, {w: i + 2 for i, w in enumerate(words)})

    accuracy = MetricSpec("accuracy", label="Acc.")
    return TaskSpec(
        name="toy",
        version=1,
        metric=accuracy,
        configs={"mini": ToyConfig},
        default_sites=frozenset({"input"}),
        default_mix=MixSpec("all", 0.0, False),
        table_rows=(TableRow("Toy", accuracy, "toy"),),
        setup=setup,  # type: ignore[arg-type]
        demo=demo,
        paper_split="test",
        data_help="train.jsonl, dev.jsonl, test.jsonl",
        metric_from_totals=lambda totals: totals[0] / totals[1],
    )


@contextlib.contextmanager
def registered(demo_folder: Path) -> Iterator[TaskSpec]:
    """The toy task in ``tasks.registry.TASKS`` inside the block."""
    from tasks import registry

    task = make_task(demo_folder)
    registry.TASKS[task.name] = task
    try:
        yield task
    finally:
        registry.TASKS.pop(task.name, None)


SCHEDULED = (
    "train.epochs=3",
    "train.eval_every=7",
    "train.ema=0.9",
    "train.schedule.kind=exponential",
    "train.schedule.every=3",
    "train.schedule.factor=0.8",
)
