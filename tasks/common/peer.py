"""What a task gives ``nox -s peer`` to train its baseline in the reference implementation.

allennlp-models 2.10.1 holds the implementations whose configurations reproduced the paper for
five of the six task models (``crf_tagger``, ``bcn``, ``esim``, ``srl`` with ``alternating_lstm``,
``coref``). A task that has one declares a :class:`PeerAdapter` in its ``peer.py`` and sets
``TaskSpec.peer``; :mod:`experiments.peer` does the rest (venv, inputs, training both sides,
per-epoch scoring with the project's own scorer, records, table and plot) without naming a task.

The adapter works on the task's own recipe (what ``TaskSpec.setup`` read), so both sides train on
exactly the sentences the project kept: it writes them in the format the peer's reader takes,
builds the peer's configuration from allennlp-models' own file (cited, every change listed), and
turns the peer's decoded outputs back into the recipe's prediction format, which the recipe's
official-parity scorer then scores (one ruler for both sides).

Nothing here imports torch or allennlp.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "GLOVE_DIM",
    "GLOVE_ONLY",
    "TIMING_CHANGE",
    "PeerAdapter",
    "PeerInputs",
    "PeerRun",
    "as_requested",
    "check_count",
    "elmo_embedder",
    "glove_embedder",
    "label_count",
    "peer_adapter",
]


#: The allennlp-models release every peer configuration follows, at its commit (the peer's venv
#: installs it: ``experiments/peer/allennlp_side/venv.toml``); each adapter's ``SOURCE`` names
#: its files in it.
MODELS_RELEASE = "allenai/allennlp-models v2.10.1 (02480d86450dff1dfc2003f4ebd93d0347532a20)"

#: The change every peer configuration has (a line of each adapter's ``changes``): the timing
#: callback that runs in the peer's venv.
TIMING_CHANGE = (
    "trainer callback peer_timing (experiments/peer/allennlp_side/peer_timing.py): per-epoch "
    "CPU seconds of the training pass and peak RSS"
)
#: Width of the GloVe vectors every peer reads (:attr:`PeerInputs.glove_text`: GloVe 6B 50-d).
GLOVE_DIM = 50
#: The :attr:`PeerAdapter.overrides` of a task whose ``paper`` preset reads other word vectors
#: than the peer's embedded GloVe 6B 50-d: the project then reads the same.
GLOVE_ONLY = ("word_vectors=glove",)


@dataclass(frozen=True)
class PeerInputs:
    """The inputs both sides share.

    Attributes:
        glove_text: a GloVe text file (the embedded GloVe 6B 50-d exported as text: the peer's
            ``pretrained_file``); the project reads the same vectors from the package.
        elmo_options: the biLM's ``options.json`` (official layout; ``None`` for baselines).
        elmo_weights: its ``weights.hdf5``.
        elmo_dim: the width of the biLM's layers (2 × projection), e.g. 256 for the shipped
            small biLM, 1024 for the published one.
    """

    glove_text: Path
    elmo_options: Path | None = None
    elmo_weights: Path | None = None
    elmo_dim: int = 0


@dataclass(frozen=True)
class PeerRun:
    """What one peer training run is asked for (the project's run gets the same).

    Attributes:
        epochs: epochs of training (no early stopping within them).
        batch_size: instances per batch.
        seed: allennlp's ``random_seed``, ``numpy_seed`` and ``pytorch_seed``.
        elmo: with ELMo (the task's paper sites) or the baseline.
    """

    epochs: int
    batch_size: int
    seed: int
    elmo: bool


@dataclass(frozen=True)
class PeerAdapter:
    """A task's bridge to its allennlp-models peer.

    Attributes:
        model: the allennlp model type, e.g. ``"crf_tagger"``.
        source: the allennlp-models file(s) and commit the configuration follows.
        changes: every change from that file, one line each (written as the configuration's
            header and into the table's notes).
        packages: the ``--include-package`` modules the model and reader need.
        output_keys: the per-instance output keys the project scores (e.g. ``("tags",)``).
        metric_key: allennlp's own name of the selection metric in ``get_metrics`` (shown
            beside the project's scoring of the same predictions, e.g. ``f1-measure-overall``).
        write_data: ``(recipe, folder) -> split → file``: the recipe's splits in the peer
            reader's format (the same examples, in the same order).
        config: ``(files, inputs, run, recipe) -> configuration`` (JSON data).
        predictions: ``(outputs, examples) -> predictions`` in the format of the recipe's
            ``predict``, from one split's per-instance outputs (file order).
        overrides: task configuration changes (``--set`` syntax) that make the project read
            the inputs the peer gets, e.g. ``word_vectors=glove`` where the ``paper`` preset
            defaults to GloVe 840B: both sides then read the embedded GloVe 6B 50-d.
        batch_size: the one batch size the peer's model takes (coreference: one document per
            batch), the default of ``--batch-size`` for this task; ``None``: any (default 64).
        native_scale: allennlp's own number times this is in the project's metric units (a
            fraction): 0.01 where the peer reports percent (``dialog_qa``'s F1).
    """

    model: str
    source: str
    changes: tuple[str, ...]
    packages: tuple[str, ...]
    output_keys: tuple[str, ...]
    metric_key: str
    write_data: Callable[[Any, Path], dict[str, Path]]
    config: Callable[[Mapping[str, Path], PeerInputs, PeerRun, Any], dict[str, Any]]
    predictions: Callable[[Sequence[Mapping[str, Any]], Sequence[Any]], Any]
    overrides: tuple[str, ...] = ()
    batch_size: int | None = None
    native_scale: float = 1.0


def peer_adapter(
    module: str,
    *,
    model: str,
    packages: tuple[str, ...],
    output_keys: tuple[str, ...],
    metric_key: str,
    overrides: tuple[str, ...] = (),
    batch_size: int | None = None,
    native_scale: float = 1.0,
) -> PeerAdapter:
    """The :class:`PeerAdapter` a task's ``peer.py`` declares (``PEER = peer_adapter(__name__,
    model=..., ...)``): its ``SOURCE``, ``CHANGES``, ``write_data``, ``config`` and
    ``predictions`` (read from the module named ``module``, at the end of its body) and the
    given specifics (see :class:`PeerAdapter`).

    Raises:
        AttributeError: the module lacks one of the five names.
    """
    this = sys.modules[module]
    return PeerAdapter(
        model=model,
        source=this.SOURCE,
        changes=this.CHANGES,
        packages=packages,
        output_keys=output_keys,
        metric_key=metric_key,
        write_data=this.write_data,
        config=this.config,
        predictions=this.predictions,
        overrides=overrides,
        batch_size=batch_size,
        native_scale=native_scale,
    )


def check_count(outputs: Sequence[Any], examples: Sequence[Any], did: str, what: str) -> None:
    """Every adapter's first check of the peer's outputs of one split: one per example.

    Raises:
        ValueError: "the peer ``did`` N ``what``, the split has M" when the counts differ.
    """
    if len(outputs) != len(examples):
        raise ValueError(f"the peer {did} {len(outputs)} {what}, the split has {len(examples)}")


def elmo_embedder(inputs: PeerInputs) -> dict[str, Any]:
    """allennlp's ELMo settings of every paper configuration, with the request's biLM files:
    no layer norm, no dropout on the mixed vectors (the model's own dropout follows)."""
    return {
        "options_file": str(inputs.elmo_options),
        "weight_file": str(inputs.elmo_weights),
        "do_layer_norm": False,
        "dropout": 0.0,
    }


def glove_embedder(inputs: PeerInputs, trainable: bool) -> dict[str, Any]:
    """allennlp's ``embedding`` of the request's GloVe text file (:data:`GLOVE_DIM` wide),
    fine-tuned or frozen as the configuration's original."""
    return {
        "type": "embedding",
        "embedding_dim": GLOVE_DIM,
        "pretrained_file": str(inputs.glove_text),
        "trainable": trainable,
    }


def label_count(recipe: Any) -> int:
    """The labels allennlp's vocabulary will hold: the distinct ``label`` of the examples of
    every split written (allennlp counts the labels of every file it is given)."""
    return len({ex.label for examples in recipe.splits.values() for ex in examples})


def as_requested(config: dict[str, Any], files: Mapping[str, Path], run: PeerRun) -> dict[str, Any]:
    """``config`` (reader, model, training loader, optimizer) with what every peer run shares:
    the splits' files (the test split, when there is one, for the vocabulary only, as the
    project indexes its words), sequential validation batches, ``run.epochs`` epochs without
    early stopping, every epoch's checkpoint kept (scored afterwards), the CPU, the timing
    callback (``experiments/peer/allennlp_side/peer_timing.py``) and the run's seed for
    allennlp's three generators."""
    out = dict(config)
    out["train_data_path"] = str(files["train"])
    out["validation_data_path"] = str(files["dev"])
    if "test" in files:
        out["test_data_path"] = str(files["test"])
        out["evaluate_on_test"] = False
    out["validation_data_loader"] = {"batch_size": run.batch_size, "shuffle": False}
    out["trainer"] = {
        **config["trainer"],
        "num_epochs": run.epochs,
        "patience": run.epochs,
        "checkpointer": {"keep_most_recent_by_count": None},
        "cuda_device": -1,
        "callbacks": [{"type": "peer_timing"}],
    }
    out.update(random_seed=run.seed, numpy_seed=run.seed, pytorch_seed=run.seed)
    return out
