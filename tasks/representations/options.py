"""What a representation's configuration may hold: every key declared beside its builder.

A representation declares its keys as a tuple of :class:`ReprOption` (``ELMO_OPTIONS`` in
``elmo.py``, ``GLOVE_OPTIONS`` in ``glove.py``, ...; the adaptation keys in ``adapt.py``), and
the registry maps each name to its tuple (:data:`tasks.representations.REPRESENTATION_OPTIONS`).
The command line reads nothing else: ``--repr-set KEY=VALUE`` is checked against the
declaration (:func:`check_value`), ``python -m experiments representations list`` prints it, and
the flags that give some keys (``--elmo``, ``--glove``, ``--cove``: :class:`ReprFlag`) are built
from it. A test holds every declaration to its builder's signature.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SET_BY_HARNESS", "ReprFlag", "ReprOption", "type_label"]

#: Builder parameters a user never sets through the configuration → what sets them instead.
SET_BY_HARNESS: dict[str, str] = {
    "state": "the run's LSTM state policy (--state)",
    "trainable": "adapt=finetune",
}

_TYPE_NAMES: dict[type, str] = {
    Path: "path",
    str: "str",
    int: "int",
    float: "float",
    bool: "bool",
    list: "list",
}


@dataclass(frozen=True)
class ReprFlag:
    """A command-line flag that gives keys of one or more representations' configurations.

    Attributes:
        name: the flag, e.g. ``"--glove"``.
        metavar: what its value is called in help text.
        help: one line for ``--help``.
        many: it takes one or more values (else exactly one).
        parse: its values → the keys they give, for a flag whose values are not simply one
            key's value (``--elmo``: ``OPTIONS.json WEIGHTS.hdf5`` | ``CHECKPOINT`` |
            ``published:NAME``); raises ``ValueError`` for values it cannot read. ``None``: the
            flag's value is the value of every option declared with it.
        task_key: a key of the task's own configuration that the flag also sets (``--glove``:
            ``word_vectors``), or ``None``.
    """

    name: str
    metavar: str
    help: str
    many: bool = False
    parse: Callable[[Sequence[str]], dict[str, str]] | None = None
    task_key: str | None = None

    @property
    def dest(self) -> str:
        """The ``argparse`` attribute that holds its value (``--glove`` → ``glove``)."""
        return self.name.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class ReprOption:
    """One key of a representation's configuration (``--repr-set KEY=VALUE``).

    Attributes:
        name: the key (a builder parameter, or a key the harness reads itself).
        help: one line saying what it does.
        types: the JSON types a value may have (``Path``: a string naming a file or folder;
            ``int`` values pass for ``float``); empty: any value.
        choices: the values allowed, where there is a fixed set.
        default: the value the builder uses when the key is not given (``None``: none, or one
            the builder works out; ``null`` may then be given for it).
        flag: the command-line flag that also gives it, or ``None``.
        required: a run needs it (by its flag, where it has one).
        presets: ``(task preset, value)`` pairs: the value it takes under that preset when its
            flag is not given (ELMo's ``published``: ``original`` under ``paper``).
    """

    name: str
    help: str
    types: tuple[type, ...] = (str,)
    choices: tuple[object, ...] = ()
    default: object = None
    flag: ReprFlag | None = None
    required: bool = False
    presets: tuple[tuple[str, object], ...] = ()

    def check(self, value: object) -> None:
        """Refuse a value of the wrong type or outside :attr:`choices`.

        Raises:
            ValueError: the message names the key, the value and what is allowed.
        """
        if value is None and self.default is None and not self.required:
            return
        if self.choices:
            if not any(value == c and type(value) is type(c) for c in self.choices):
                allowed = ", ".join(str(c) for c in self.choices)
                raise ValueError(f"{self.name}={json.dumps(value)}: choose one of {allowed}")
            return
        if self.types and not any(_is(value, t) for t in self.types):
            raise ValueError(f"{self.name}={json.dumps(value)}: expected {type_label(self)}")


def _is(value: object, kind: type) -> bool:
    """Whether a JSON value has the declared type (no bool passes as a number)."""
    if kind is Path:
        return isinstance(value, str)
    if kind in (int, float) and isinstance(value, bool):
        return False
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


def type_label(option: ReprOption) -> str:
    """``{a,b,c}`` for an option with choices, else its types (``path``, ``float|bool``), ``any``
    for none."""
    if option.choices:
        return "{" + ",".join(str(c) for c in option.choices) + "}"
    return "|".join(_TYPE_NAMES.get(t, t.__name__) for t in option.types) or "any"
