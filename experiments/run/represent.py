"""A run's representation: built from its spec, optionally fine-tuned on the task's text, and
read through the feature cache when frozen.

* :func:`build_spec_representation`: the spec's representation under the spec's LSTM state
  policy;
* :func:`finetuned_bilm`: the task-tuned biLM of paper §3.4 (cached, resumable);
* :func:`make_represent`: token sequences → :class:`~tasks.representations.Layers`, by cache
  lookup for a frozen representation, live otherwise, no layers for the baseline;
* :func:`carried_state`, :func:`load_carried_state`: the LSTM state a ``carry`` biLM hands
  from batch to batch, saved with a run's checkpoint so that a resumed run continues exactly.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from bilm.files import write_text
from experiments.run.spec import RunSpec
from tasks.core import Represent
from tasks.features.feature_cache import FeatureCache
from tasks.representations import REPRESENTATIONS, Layers, Representation, build_representation
from tasks.representations.adapt import ADAPT_KEYS, adapt, adapt_config

__all__ = [
    "HARNESS_KEYS",
    "build_spec_representation",
    "builder_options",
    "carried_state",
    "finetuned_bilm",
    "load_carried_state",
    "make_represent",
]

#: Keys of a representation configuration that the harness reads itself (they never reach the
#: representation's builder): ``finetune`` asks for the task-tuned biLM of paper §3.4; ``adapt``
#: and its options say what of the representation trains with the task model
#: (:mod:`tasks.representations.adapt`).
HARNESS_KEYS = frozenset({"finetune", *ADAPT_KEYS})

logger = logging.getLogger(__name__)


def build_spec_representation(
    spec: RunSpec, config: dict[str, Any] | None = None
) -> Representation:
    """The spec's representation, adapted as its configuration says (``adapt``: frozen,
    finetune or lora); its state policy is the spec's ``state`` (the one source).

    Args:
        spec: the run.
        config: the representation's configuration (default: the spec's, e.g. replaced by
            :func:`finetuned_bilm`'s); the adaptation is always the spec's.
    """
    how = adapt_config(spec.representation_config)  # the spec's, whatever ``config`` holds
    config = builder_options(spec.representation_config if config is None else config)
    if spec.representation in REPRESENTATIONS:
        if "state" in inspect.signature(REPRESENTATIONS[spec.representation]).parameters:
            config["state"] = spec.state
    return adapt(build_representation(spec.representation, **config), how)


def builder_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` without the harness's own keys (:data:`HARNESS_KEYS`): what the builder takes."""
    return {k: v for k, v in config.items() if k not in HARNESS_KEYS}


def _no_layers(sequences: Sequence[Sequence[str]]) -> Layers:
    """The baseline's layers: none, with the mask of the sequences' lengths."""
    return Layers.empty([len(s) for s in sequences])  # (0, batch, time, 0)


def make_represent(
    representation: Representation | None,
    sequences: Sequence[Sequence[str]],
    cache_dir: Path | None,
    progress: bool,
    device: torch.device | None = None,
    cache_budget: str | int | None = None,
) -> Represent:
    """A function from token sequences to layers: cache lookups for frozen representations.

    A representation whose state policy is ``"carry"`` is always live: its vectors depend on
    the batches before them (row ``i`` starts from the state row ``i`` ended in), so they are
    computed in the training loop's own batch order, as allennlp's stateful ELMo did.

    Cached layers come back on the CPU (the runner moves whole batches); a live representation
    gets its features on ``device`` (where the injector keeps the representation). The cache
    entry stays open (never evicted) while the returned function lives.

    Args:
        representation: the run's representation (``None`` or no layers: the baseline, whose
            function returns :meth:`Layers.empty <tasks.representations.Layers.empty>`).
        sequences: every token sequence the run will ask for (the cache's entries).
        cache_dir: the feature cache (``None``: no cache, always live).
        progress: a bar while the cache is built.
        device: where live features go.
        cache_budget: :attr:`experiments.run.setup.RunOptions.cache_budget`.
    """
    if representation is None or representation.num_layers == 0:
        return _no_layers
    if (
        cache_dir is not None
        and not representation.trainable
        and representation.state_policy != "carry"  # order-dependent vectors: always live
    ):
        unique = list(dict.fromkeys(tuple(s) for s in sequences))
        cache = FeatureCache.build(
            representation, unique, cache_dir, progress=progress, budget=cache_budget
        )
        index = {s: i for i, s in enumerate(unique)}

        def cached(seqs: Sequence[Sequence[str]]) -> Layers:
            return cache.lookup([index[tuple(s)] for s in seqs])

        return cached

    def live(seqs: Sequence[Sequence[str]]) -> Layers:
        features = representation.featurize(seqs)
        if device is not None:
            features = {k: v.to(device) for k, v in features.items()}
        return representation(features)

    return live


def finetuned_bilm(
    config: dict[str, Any],
    train_text: Sequence[Sequence[str]],
    valid_text: Sequence[Sequence[str]],
    *,
    device: str,
    precision: str,
    progress: bool,
) -> tuple[dict[str, Any], dict[str, float]]:
    """The task-tuned biLM of paper §3.4 / A.1: the configured biLM fine-tuned as a language
    model on the task's training text (held-out: its dev text), then frozen for the task.

    Cached by biLM configuration + text fingerprints under ``$ELMO_BENCH_CACHE/finetuned`` (or
    ``~/.cache/elmo-bench/finetuned``); resumable (:func:`bilm.finetune.finetune`).

    Args:
        config: the representation configuration; its ``finetune`` is ``True`` (one epoch) or
            the number of epochs.
        train_text: the task's training sequences.
        valid_text: its dev sequences (held-out perplexity).
        device: as :attr:`experiments.run.setup.RunOptions.device`.
        precision: as :attr:`experiments.run.setup.RunOptions.precision`.
        progress: bars.

    Returns:
        The representation configuration of the fine-tuned checkpoint, and the held-out
        perplexities ``bilm_ppl_before`` / ``bilm_ppl_after`` (average of both directions).
    """
    from bilm.finetune import finetune
    from bilm.pretrained import cache_root, published_files
    from tasks.features.feature_cache import data_fingerprint

    base = builder_options(config)
    epochs = float(config["finetune"]) if not isinstance(config["finetune"], bool) else 1.0
    if "published" in base:
        base["options"], base["weights"] = map(str, published_files(base.pop("published")))
    key = json.dumps(
        [base, epochs, data_fingerprint(train_text), data_fingerprint(valid_text)], sort_keys=True
    )
    folder = cache_root() / "finetuned" / hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    folder.mkdir(parents=True, exist_ok=True)
    train_file = _text_file(folder / "train.txt", train_text)
    valid_file = _text_file(folder / "valid.txt", valid_text)
    result = finetune(
        [train_file],
        valid_file,
        folder / "run",
        checkpoint=base.get("checkpoint"),
        options=base.get("options"),
        weights=base.get("weights"),
        epochs=epochs,
        device=device,
        precision=precision,
        progress=progress,
    )
    tuned = {k: v for k, v in base.items() if k not in ("checkpoint", "options", "weights")}
    tuned["checkpoint"] = str(result.checkpoint)
    ppl = {"bilm_ppl_before": result.before["average"], "bilm_ppl_after": result.after["average"]}
    logger.info("fine-tuned biLM %s: held-out perplexity %s", result.checkpoint, ppl)
    return tuned, ppl


def _text_file(path: Path, text: Sequence[Sequence[str]]) -> Path:
    """``path`` holding the distinct non-empty sequences of ``text``, one per line (written
    once; a paragraph shared by several questions is read once)."""
    if not path.exists():
        distinct = dict.fromkeys(tuple(t) for t in text)
        write_text(path, "".join(" ".join(s) + "\n" for s in distinct if s))
    return path


def carried_state(representation: Representation) -> dict[str, torch.Tensor]:
    """The state a ``carry`` representation hands to its next batch (``{}`` before the first).

    Raises:
        TypeError: the representation keeps no such state (it cannot run under ``carry``).
    """
    get = getattr(representation, "carried_state", None)
    if get is None:
        raise TypeError(f"representation {representation.name!r} carries no LSTM state")
    state: dict[str, torch.Tensor] = get()
    return state


def load_carried_state(representation: Representation, state: Mapping[str, torch.Tensor]) -> None:
    """Continue a ``carry`` representation from :func:`carried_state` (``{}``: none yet).

    Raises:
        TypeError: the representation keeps no such state.
    """
    load = getattr(representation, "load_carried_state", None)
    if load is None:
        raise TypeError(f"representation {representation.name!r} carries no LSTM state")
    load(state)
