"""``key=value`` overrides on frozen dataclass configs, validated against the fields.

The one override syntax of the project: ``--set`` on the command line, ``RunSpec.overrides`` and
presets all use it. Nested configurations take dotted keys (``train.epochs=3``,
``train.optimizer.lr=0.002``); values are parsed by the field's type (JSON for anything else).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Sequence
from typing import Any, TypeVar

C = TypeVar("C")


def _coerce(value: str, annotation: Any, key: str) -> Any:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        if value.lower() in ("none", "null") and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, key)
            except ValueError:
                continue
        raise ValueError(f"{key}={value!r}: expected {annotation}")
    if origin is typing.Literal:
        if value not in args:
            raise ValueError(f"{key}={value!r}: expected one of {list(args)}")
        return value
    if annotation is bool:
        if value.lower() in ("true", "1", "yes"):
            return True
        if value.lower() in ("false", "0", "no"):
            return False
        raise ValueError(f"{key}={value!r}: expected true or false")
    if annotation in (int, float, str):
        try:
            return annotation(value)
        except ValueError:
            raise ValueError(f"{key}={value!r}: expected {annotation.__name__}") from None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        raise ValueError(f"{key}={value!r}: expected JSON for {annotation}") from None
    return tuple(parsed) if origin is tuple and isinstance(parsed, list) else parsed


def _set(config: Any, path: list[str], value: str, full_key: str) -> Any:
    hints = typing.get_type_hints(type(config))
    names = [f.name for f in dataclasses.fields(config)]
    name = path[0]
    if name not in names:
        where = full_key[: len(full_key) - len(".".join(path))]
        valid = ", ".join(where + n for n in names)
        raise ValueError(f"unknown config key {full_key!r}; valid: {valid}")
    current = getattr(config, name)
    if len(path) > 1:
        if not dataclasses.is_dataclass(current):
            raise ValueError(f"config key {full_key!r}: {name!r} has no sub-keys")
        return dataclasses.replace(config, **{name: _set(current, path[1:], value, full_key)})
    if dataclasses.is_dataclass(current):
        sub = ", ".join(f"{name}.{f.name}" for f in dataclasses.fields(current))
        raise ValueError(f"config key {full_key!r} is a group; set one of {sub}")
    return dataclasses.replace(config, **{name: _coerce(value, hints[name], full_key)})


def apply_overrides(config: C, overrides: Sequence[str]) -> C:
    """Return ``config`` with ``key=value`` overrides applied (types checked).

    Raises:
        ValueError: malformed item, unknown key (the valid ones are listed) or bad value (the
            config's own validation runs on the result).
    """
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r} is not key=value")
        key, value = item.split("=", 1)
        config = _set(config, key.split("."), value, key)
    return config
