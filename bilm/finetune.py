"""Fine-tune a pretrained biLM on a task's own text (paper §3.4, appendix A.1).

The paper fine-tuned its biLM for one epoch on each task's training text (ignoring the labels)
before freezing it for the task, e.g. SNLI perplexity 72.1 → 16.8. :func:`finetune` does the same
with this library's pretraining loop (:func:`bilm.pretrain.train`, one optimizer step =
:func:`bilm.pretrain.training_step`): same streams, sampled softmax, Adagrad, dropout, atomic
checkpoints and exact resume.

**Vocabulary and softmax.** The softmax is over a vocabulary *V*:

* when the input holds a trained softmax and its vocabulary — the shipped small model, a release
  file of :func:`bilm.pretrain.save_language_model`, a pretraining output directory or its
  ``checkpoint.pt`` — *V* is that vocabulary extended by the task words it lacks (seen at least
  ``config.min_count`` times in the training text, most frequent first, total capped at
  ``config.max_vocab`` but never dropping a pretrained word). Known words keep their trained rows;
  the new words split the ``<UNK>`` mass evenly: each new row (and ``<UNK>`` itself) gets
  ``<UNK>``'s weights and bias ``b_unk − log(n_new + 1)``. This extended LM assigns every text
  exactly the probability of the input LM with its ``<UNK>`` probability shared uniformly among
  the ``n_new + 1`` types it now stands for — an untrained but exact rendering of the input LM
  on the larger vocabulary. When no word is new, the softmax is reused unchanged.
* when the input is a biLM only (official ``options.json`` + HDF5, or a safetensors file without
  ``lm_head.*``), *V* is built from the training text (``min_count``, ``max_vocab``) and the
  softmax is new.

**"Before" perplexity.** It must be the input biLM's, on the same *V* and held-out text as
"after", so the two are comparable:

* with a pretrained softmax: the extended LM above, untouched (no training at all). This is the
  paper's measurement (the same LM before and after fine-tuning).
* without one: a fresh softmax is meaningless (perplexity ≈ |V| or worse), so the softmax alone
  is first trained on the training text with the biLM frozen and dropout off, for
  ``warmup_epochs`` epochs (default 1; cheap, no backward through the biLM), and "before" is
  measured then. The fine-tuning proper starts from that softmax; the before → after gain is what
  updating the biLM (and training the softmax further) adds beyond the best the frozen biLM did
  with the same data.

"After" is measured the same way on the fine-tuned LM. Both use
:func:`bilm.pretrain.evaluate_perplexity` (full softmax, state carried through the text) and
count out-of-vocabulary words as ``<UNK>`` (over *V*).

**Output directory** ``out_dir``: ``request.json`` (the inputs, checked on resume), ``vocab.txt``,
``config.json``, ``checkpoint.pt``, ``log.jsonl`` (the fine-tuning run, exactly as pretraining
writes them); ``warmup/`` (the softmax warm-up run, only without a pretrained softmax);
``before.json``; and when done ``finetuned.safetensors`` (project checkpoint format with the
softmax and *V*: ``bilm.load_checkpoint`` reads the biLM, ``bilm.pretrain.load_language_model``
and ``python -m bilm evaluate`` the LM) and ``perplexity.json``. Running again resumes after an
interruption; once finished it returns the stored result without training.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import torch

from bilm.bilm import BiLM
from bilm.corpus import check_files, read_sentences
from bilm.devices import resolve_device
from bilm.files import write_json
from bilm.pretrain import (
    CHECKPOINT_NAME,
    LanguageModel,
    PretrainConfig,
    TrainResult,
    build_model,
    evaluate_perplexity,
    load_config,
    load_language_model,
    load_training_checkpoint,
    save_language_model,
    train,
)
from bilm.vocab import MAXTERMID, SPECIAL_TOKENS, Vocabulary

logger = logging.getLogger(__name__)

OUTPUT_NAME = "finetuned.safetensors"
PERPLEXITY_NAME = "perplexity.json"
BEFORE_NAME = "before.json"
REQUEST_NAME = "request.json"
WARMUP_DIR = "warmup"


@dataclass(frozen=True)
class FinetuneResult:
    """What :func:`finetune` returns.

    Attributes:
        checkpoint: ``out_dir/finetuned.safetensors``.
        before: held-out perplexity of the input LM (``forward``, ``backward``, ``average``,
            ``tokens`` scored); see the module docstring for how it is measured.
        after: the same after fine-tuning.
        report: the whole ``perplexity.json``.
    """

    checkpoint: Path
    before: dict[str, float]
    after: dict[str, float]
    report: dict[str, Any]


@dataclass
class _Source:
    bilm: BiLM
    head: dict[str, torch.Tensor] | None  # trained softmax {"weight", "bias"}, or None
    vocab: Vocabulary | None  # its vocabulary
    name: str


def _load_source(
    checkpoint: str | os.PathLike[str] | None,
    options: str | os.PathLike[str] | None,
    weights: str | os.PathLike[str] | None,
) -> _Source:
    from bilm.weights import load_checkpoint, load_official, read_checkpoint_metadata

    if checkpoint is not None and (options is not None or weights is not None):
        raise ValueError("pass either checkpoint or options/weights, not both")
    if (options is None) != (weights is None):
        raise ValueError("options and weights go together: pass both")
    if options is not None and weights is not None:
        bilm = load_official(options, weights)
        return _Source(bilm, None, None, f"{options} + {weights}")
    if checkpoint is None:
        from bilm.pretrained import default_checkpoint_path

        checkpoint = default_checkpoint_path()
    path = Path(checkpoint)
    if path.is_dir() or path.suffix == ".pt" or "vocab" in read_checkpoint_metadata(path):
        lm, vocab = load_language_model(path)
        head = {"weight": lm.head.weight.detach().clone(), "bias": lm.head.bias.detach().clone()}
        return _Source(lm.bilm, head, vocab, str(path))
    return _Source(load_checkpoint(path), None, None, str(path))


def _scan(files: Sequence[Path]) -> tuple[Counter[str], int, int]:
    """Word counts, tokens and sentences of the training text (the data module's line policy)."""
    counts: Counter[str] = Counter()
    tokens = sentences = 0
    for path in check_files(files):
        for words in read_sentences(path):
            counts.update(words)
            tokens += len(words)
            sentences += 1
    for reserved in (*SPECIAL_TOKENS, MAXTERMID):
        counts.pop(reserved, None)
    return counts, tokens, sentences


def _extend(base: Vocabulary, counts: Counter[str], config: PretrainConfig) -> Vocabulary:
    new = sorted(
        (w for w, c in counts.items() if c >= config.min_count and w not in base),
        key=lambda w: (-counts[w], w),
    )
    if config.max_vocab is not None:
        new = new[: max(0, config.max_vocab - len(base))]
    return Vocabulary((*base.tokens, *new), source="fine-tuning vocabulary")


def _initial_model(
    source: _Source, vocab: Vocabulary, config: PretrainConfig
) -> dict[str, torch.Tensor]:
    """State dict of the LM fine-tuning starts from (softmax per the module docstring)."""
    model = build_model(replace(config, num_samples=None), len(vocab))
    model.bilm.load_state_dict(source.bilm.state_dict())
    if source.head is not None and source.vocab is not None:
        n_old, n_new = len(source.vocab), len(vocab) - len(source.vocab)
        unk = source.vocab.unk_id
        weight, bias = model.head.weight.data, model.head.bias.data
        weight[:n_old] = source.head["weight"]
        bias[:n_old] = source.head["bias"]
        if n_new:
            share = math.log(n_new + 1)
            weight[n_old:] = source.head["weight"][unk]
            bias[n_old:] = source.head["bias"][unk] - share
            bias[unk] -= share
    return {k: v.clone() for k, v in model.state_dict().items()}


def _eval(
    state: dict[str, torch.Tensor],
    config: PretrainConfig,
    vocab: Vocabulary,
    valid: Path,
    device: str | torch.device,
) -> dict[str, float]:
    if not isinstance(device, torch.device):
        device = resolve_device(device)
    model = build_model(replace(config, num_samples=None, dropout=0.0), len(vocab))
    model.load_state_dict(state)
    return evaluate_perplexity(model.to(device), vocab, [valid])


def _loader(state: dict[str, torch.Tensor]) -> Callable[[LanguageModel], None]:
    def init(model: LanguageModel) -> None:
        model.load_state_dict(state)

    return init


def finetune(
    train_files: Sequence[str | os.PathLike[str]],
    valid_file: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    *,
    checkpoint: str | os.PathLike[str] | None = None,
    options: str | os.PathLike[str] | None = None,
    weights: str | os.PathLike[str] | None = None,
    epochs: float = 1.0,
    device: str | torch.device = "auto",
    precision: str = "fp32",
    progress: bool = True,
    config: PretrainConfig | str = "small",
    warmup_epochs: float = 1.0,
    on_step: Callable[[str, int, dict[str, float]], None] | None = None,
) -> FinetuneResult:
    """Continue LM training of a biLM on a task's text; report held-out perplexity before/after.

    Args:
        train_files: the task's training text, one tokenized sentence per line.
        valid_file: held-out text of the task (same format) for the perplexities.
        out_dir: run directory (module docstring); rerunning resumes or returns the result.
        checkpoint: a project ``.safetensors`` checkpoint, a pretraining output directory or its
            ``checkpoint.pt``; default: the shipped small biLM
            (:func:`bilm.pretrained.default_checkpoint_path`).
        options: official ``options.json`` (with ``weights``), instead of ``checkpoint``.
        weights: official HDF5 weight file.
        epochs: passes over the training text (the step budget is
            ``ceil(epochs × (tokens + sentences) / (batch_size × unroll_steps))``).
        device: ``auto`` | ``cpu`` | ``cuda`` | ``cuda:N``.
        precision: ``fp32`` | ``bf16`` | ``fp16``.
        progress: tqdm bars.
        config: training hyper-parameters: a :class:`~bilm.pretrain.PretrainConfig`, or
            ``small``/``full``/``tiny``/a JSON file of overrides
            (:func:`bilm.pretrain.load_config`); its ``model`` becomes the input biLM's.
        warmup_epochs: softmax-only warm-up before "before" when the input has no softmax.
        on_step: callback ``(phase, step, metrics)``; phase is ``"warmup"`` or ``"finetune"``.

    Returns:
        :class:`FinetuneResult`.

    Raises:
        ValueError: conflicting inputs, or ``out_dir`` holds a run started with other inputs.
    """
    start = time.perf_counter()
    out = Path(out_dir)
    if epochs <= 0 or warmup_epochs <= 0:
        raise ValueError("epochs and warmup_epochs must be > 0")
    cfg = load_config(config) if isinstance(config, str) else config
    if (out / PERPLEXITY_NAME).exists() and (out / OUTPUT_NAME).exists():
        return _result(out)
    source = _load_source(checkpoint, options, weights)
    cfg = replace(cfg, model=source.bilm.options, eval_every=0)
    train_paths = [Path(p) for p in train_files]
    counts, n_tokens, n_sentences = _scan(train_paths)
    if n_tokens == 0:
        raise ValueError(f"{[str(p) for p in train_paths]}: no training text")
    job = _Job(
        out=out,
        train_files=train_paths,
        valid=Path(valid_file),
        source=source,
        config=cfg,
        vocab=_vocabulary(source, counts, train_paths, cfg),
        epoch_targets=n_tokens + n_sentences,
        device=device,
        precision=precision,
        progress=progress,
        on_step=on_step,
    )
    _check_request(job, epochs, warmup_epochs)
    before, initial = _measure_before(job, warmup_epochs)
    result = job.train(replace(cfg, max_steps=job.steps(epochs)), out, "finetune", initial)
    _save_output(job, result)
    report = _report(job, before, result, n_tokens, epochs)
    write_json(out / PERPLEXITY_NAME, {**report, "seconds_this_call": _since(start)}, indent=2)
    return _result(out)


@dataclass(frozen=True)
class _Job:
    """One :func:`finetune` call's resolved inputs: what each of its steps works from.

    Attributes:
        out: the run directory.
        train_files: the task's training text.
        valid: its held-out text.
        source: the input biLM (and softmax).
        config: training hyper-parameters, ``model`` set to the input biLM's.
        vocab: the softmax vocabulary *V* (module docstring).
        epoch_targets: targets one epoch presents per direction (tokens + sentences).
        device: where to train.
        precision: autocast precision.
        progress: tqdm bars.
        on_step: the caller's ``(phase, step, metrics)`` callback.
    """

    out: Path
    train_files: list[Path]
    valid: Path
    source: _Source
    config: PretrainConfig
    vocab: Vocabulary
    epoch_targets: int
    device: str | torch.device
    precision: str
    progress: bool
    on_step: Callable[[str, int, dict[str, float]], None] | None

    def steps(self, epochs: float) -> int:
        """The step budget of ``epochs`` passes over the training text."""
        per_step = self.config.batch_size * self.config.unroll_steps
        return max(1, math.ceil(epochs * self.epoch_targets / per_step))

    def train(
        self,
        config: PretrainConfig,
        out_dir: Path,
        phase: str,
        initial: dict[str, torch.Tensor],
        freeze_bilm: bool = False,
    ) -> TrainResult:
        """:func:`bilm.pretrain.train` from the LM state ``initial``, held-out perplexity at the
        end; ``phase`` names it to the caller's callback."""
        result = train(
            config,
            self.train_files,
            out_dir,
            valid_files=[self.valid],
            progress=self.progress,
            on_step=None if self.on_step is None else partial(self.on_step, phase),
            device=self.device,
            precision=self.precision,
            vocab=self.vocab,
            init_model=_loader(initial),
            freeze_bilm=freeze_bilm,
        )
        assert result.perplexity is not None  # valid_files were given
        return result


def _vocabulary(
    source: _Source, counts: Counter[str], train_files: list[Path], config: PretrainConfig
) -> Vocabulary:
    """*V*: the input's vocabulary extended by the task's words, or one built from the text."""
    if source.vocab is not None:
        return _extend(source.vocab, counts, config)
    return Vocabulary.build(train_files, min_count=config.min_count, max_size=config.max_vocab)


def _check_request(job: _Job, epochs: float, warmup_epochs: float) -> None:
    """Write ``request.json``, or check that a run being resumed had the same inputs."""
    request = {
        "source": job.source.name,
        "train": [str(p) for p in job.train_files],
        "valid": str(job.valid),
        "epochs": epochs,
        "warmup_epochs": warmup_epochs if job.source.head is None else None,
        "config": job.config.to_dict(),
        "vocab_fingerprint": job.vocab.fingerprint(),
    }
    job.out.mkdir(parents=True, exist_ok=True)
    path = job.out / REQUEST_NAME
    if not path.exists():
        write_json(path, request, indent=2)
    elif json.loads(path.read_text(encoding="utf-8")) != json.loads(json.dumps(request)):
        raise ValueError(f"{job.out}: holds a fine-tuning run started with other inputs")


def _measure_before(
    job: _Job, warmup_epochs: float
) -> tuple[dict[str, float], dict[str, torch.Tensor]]:
    """The "before" perplexity (stored in ``before.json``) and the LM state fine-tuning starts
    from: the input's softmax extended, or a softmax warmed up with the biLM frozen."""
    initial = _initial_model(job.source, job.vocab, job.config)
    before_path = job.out / BEFORE_NAME
    if job.source.head is None:  # fresh softmax: warm it up with the biLM frozen, then "before"
        warm_dir = job.out / WARMUP_DIR
        if not before_path.exists():
            warm_cfg = replace(job.config, dropout=0.0, max_steps=job.steps(warmup_epochs))
            warmup = job.train(warm_cfg, warm_dir, "warmup", initial, freeze_bilm=True)
            assert warmup.perplexity is not None
            write_json(before_path, {**warmup.perplexity, "warmup_steps": warmup.steps}, indent=2)
        initial = load_training_checkpoint(warm_dir / CHECKPOINT_NAME)["model"]
    elif not before_path.exists():
        perplexity = _eval(initial, job.config, job.vocab, job.valid, job.device)
        write_json(before_path, perplexity, indent=2)
    before = json.loads(before_path.read_text(encoding="utf-8"))
    logger.info("before fine-tuning: %s", before)
    return before, initial


def _save_output(job: _Job, result: TrainResult) -> None:
    """``finetuned.safetensors``: the fine-tuned biLM with its softmax and *V*."""
    payload = load_training_checkpoint(job.out / CHECKPOINT_NAME)
    model = build_model(replace(job.config, num_samples=None), len(job.vocab))
    model.load_state_dict(payload["model"])
    save_language_model(
        model,
        job.vocab,
        job.out / OUTPUT_NAME,
        metadata={
            "name": f"finetuned:{job.out.name}",
            "finetuned_from": job.source.name,
            "finetune_train": json.dumps([str(p) for p in job.train_files]),
            "steps": str(result.steps),
        },
    )


def _report(
    job: _Job, before: dict[str, Any], result: TrainResult, n_tokens: int, epochs: float
) -> dict[str, Any]:
    """The content of ``perplexity.json`` (without the call's duration)."""
    assert result.perplexity is not None
    source = job.source
    return {
        "before": {k: v for k, v in before.items() if k != "warmup_steps"},
        "after": result.perplexity,
        "valid": str(job.valid),
        "tokens": result.tokens,
        "train_tokens_per_epoch": n_tokens,
        "epochs": epochs,
        "steps": result.steps,
        "before_method": (
            "input softmax, <UNK> mass split over new words (untrained)"
            if source.head is not None
            else f"softmax-only warm-up, biLM frozen ({before.get('warmup_steps')} steps)"
        ),
        "source": source.name,
        "vocab_size": len(job.vocab),
        "new_words": len(job.vocab) - len(source.vocab) if source.vocab is not None else None,
    }


def _since(start: float) -> float:
    return round(time.perf_counter() - start, 1)


def _result(out: Path) -> FinetuneResult:
    report = json.loads((out / PERPLEXITY_NAME).read_text(encoding="utf-8"))
    return FinetuneResult(out / OUTPUT_NAME, report["before"], report["after"], report)
