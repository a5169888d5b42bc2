"""``representations list``: every representation's configuration keys, as declared beside its
builder (:data:`tasks.representations.REPRESENTATION_OPTIONS`).

    python -m experiments representations list
    python -m experiments representations list elmo hf
    python -m experiments representations list my_package:MyRep

Each key is printed with its type (or its choices), its default where it has one, the flag that
also gives it, and one line of help: what ``--repr-set KEY=VALUE`` of ``run``, ``sweep`` and
``compare`` accepts. The same declarations end those commands' ``--help`` (:func:`keys_epilog`).
"""

from __future__ import annotations

import argparse
import json
import re
import textwrap
from collections.abc import Sequence

from experiments.cli.errors import UsageError, one_line
from tasks.representations import (
    REPRESENTATION_OPTIONS,
    REPRESENTATIONS,
    ReprOption,
    check_representation,
    declared_options,
)
from tasks.representations.adapt import ADAPT_OPTIONS
from tasks.representations.options import type_label

__all__ = ["LIST_COMMAND", "configure", "keys_epilog", "list_lines", "run"]

#: The command that lists every key (named by ``--repr-set``'s help and its errors).
LIST_COMMAND = "python -m experiments representations list"
#: How the listing and the epilog call :data:`~tasks.representations.adapt.ADAPT_OPTIONS`.
ADAPTATION = "the adaptation keys"
_WIDTH = 100


# ------------------------------------------------------------------------- representations list
def configure(parser: argparse.ArgumentParser) -> None:
    """``representations list [NAME ...]``."""
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = actions.add_parser(
        "list",
        help="per representation: each --repr-set key with its type or choices, default, flag "
        "and help",
    )
    listing.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="representations to list (default: every registered one); package.module:Factory "
        "for your own",
    )


def run(args: argparse.Namespace) -> int:
    """Run ``representations ACTION`` (``list``: print :func:`list_lines`)."""
    for line in list_lines(args.names):
        print(line)
    return 0


def list_lines(names: Sequence[str] = ()) -> list[str]:
    """``representations list``'s lines: a heading per representation (its name and what it
    is), then a line per key (:func:`key_line`); the adaptation keys, shared by the
    representations that can be adapted, once at the end.

    Raises:
        UsageError: an unknown name or an unimportable ``package.module:Factory``.
    """
    lines = [
        "Keys of --repr-set KEY=VALUE (run, sweep, compare), per representation; values are "
        "JSON when they parse.",
    ]
    adaptable: list[str] = []
    for name in names or REPRESENTATIONS:
        try:
            declared = declared_options(name)
        except (KeyError, TypeError) as error:
            raise UsageError(one_line(error)) from None
        lines.append("")
        lines.append(f"{name}: {_summary(name)}")
        if declared is None:
            lines.append("  any key (it takes **kwargs and declares no OPTIONS)")
            continue
        own, adapts = _split(declared)
        adaptable += [name] if adapts else []
        width = max((len(o.name) for o in own), default=0)
        lines += [key_line(o, width) for o in own]
        if adapts:
            lines.append(f"  and {ADAPTATION} (below)")
        elif not own:
            lines.append("  no keys")
    if adaptable:
        lines += ["", f"{ADAPTATION} ({', '.join(adaptable)}; docs/adaptation.md):"]
        width = max(len(o.name) for o in ADAPT_OPTIONS)
        lines += [key_line(o, width) for o in ADAPT_OPTIONS]
    lines += [
        "",
        "Your own (--repr package.module:Factory) declares its keys as Factory.OPTIONS, a "
        "tuple of tasks.representations.ReprOption; without it, its parameters are its keys.",
    ]
    return lines


def key_line(option: ReprOption, width: int = 0) -> str:
    """One key: ``  name  type-or-choices[, default D][, required]: help[; also --flag]``."""
    kind = type_label(option)
    if option.default is not None:
        kind += f", default {_shown(option.default)}"
    if option.required:
        kind += ", required"
    extra = f"; also {option.flag.name} {option.flag.metavar}" if option.flag else ""
    extra += "".join(f"; {value} under the {p} preset" for p, value in option.presets)
    return textwrap.fill(
        f"{option.name:<{width}}  {kind}: {option.help}{extra}",
        _WIDTH,
        initial_indent="  ",
        subsequent_indent=" " * (width + 6),
        break_on_hyphens=False,
        break_long_words=False,
    )


def keys_epilog() -> str:
    """The end of ``run``/``sweep``/``compare --help``: each registered representation's keys
    in one wrapped line (``key=type`` or ``key={choices}``), the adaptation keys once."""
    lines = [f"representation keys (--repr-set KEY=VALUE; help: {LIST_COMMAND}):"]
    for name, declared in REPRESENTATION_OPTIONS.items():
        own, adapts = _split(declared)
        keys = [f"{o.name}={type_label(o)}" for o in own] + (
            [f"and {ADAPTATION}"] if adapts else []
        )
        lines.append(_wrapped(f"{name}: {', '.join(keys) or 'no keys'}"))
    adaptation = ", ".join(f"{o.name}={type_label(o)}" for o in ADAPT_OPTIONS)
    lines.append(_wrapped(f"{ADAPTATION}: {adaptation}"))
    return "\n".join(lines)


def _split(declared: Sequence[ReprOption]) -> tuple[list[ReprOption], bool]:
    """A representation's own keys, and whether it also has every adaptation key."""
    if all(o in declared for o in ADAPT_OPTIONS):
        return [o for o in declared if o not in ADAPT_OPTIONS], True
    return list(declared), False


def _summary(name: str) -> str:
    """The first line of the builder's docstring, without reST markup."""
    doc = (check_representation(name).__doc__ or "").strip().splitlines()
    text = doc[0] if doc else "(no docstring)"
    return re.sub(r":\w+:`~?([^`]+)`|``([^`]+)``", lambda m: m.group(1) or m.group(2), text)


def _shown(value: object) -> str:
    """A default as the command line writes it (``both``, ``100``, ``false``)."""
    return value if isinstance(value, str) else json.dumps(value)


def _wrapped(text: str) -> str:
    return textwrap.fill(text, _WIDTH, initial_indent="  ", subsequent_indent="      ")
