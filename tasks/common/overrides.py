"""``key=value`` overrides on frozen dataclass configs, validated against the fields."""

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
    return json.loads(value)


def apply_overrides(config: C, overrides: Sequence[str]) -> C:
    """Return ``config`` with ``key=value`` overrides applied (types checked).

    Raises:
        ValueError: malformed item, unknown key (the valid ones are listed) or bad value.
    """
    hints = typing.get_type_hints(type(config))
    names = [f.name for f in dataclasses.fields(config)]  # type: ignore[arg-type]
    changes: dict[str, Any] = {}
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r} is not key=value")
        key, value = item.split("=", 1)
        if key not in names:
            raise ValueError(f"unknown config key {key!r}; valid: {', '.join(names)}")
        changes[key] = _coerce(value, hints[key], key)
    return dataclasses.replace(config, **changes)  # type: ignore[type-var]
