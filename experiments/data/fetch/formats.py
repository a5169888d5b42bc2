"""What every converter shares: the error for malformed sources and small readers.

A converter (:data:`Converter`) takes a set's verified source files, keyed by their paths in
their repositories (``coref/conll/105_persuasion_brat.conll``), and an empty output folder, and
writes the set's files there and nothing else.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["Converter", "FormatError", "decode_utf8", "one_source", "read_member"]

#: A converter: (source path in its repository → verified local file, empty output folder).
Converter = Callable[[Mapping[str, Path], Path], None]


class FormatError(ValueError):
    """A source file is not in the expected format (the message names the file and line)."""


def one_source(files: Mapping[str, Path], suffix: str) -> Path:
    """The one source whose path ends with ``suffix``.

    Raises:
        FormatError: none or several do.
    """
    found = [local for path, local in files.items() if path.endswith(suffix)]
    if len(found) != 1:
        raise FormatError(f"the set needs exactly one source *{suffix}; it has {len(found)}")
    return found[0]


def read_member(archive: Path, member: str) -> bytes:
    """A member of a zip archive.

    Raises:
        FormatError: the archive is not a zip file or lacks the member.
    """
    try:
        with zipfile.ZipFile(archive) as handle:
            return handle.read(member)
    except KeyError:
        raise FormatError(f"{archive}: no member {member}") from None
    except zipfile.BadZipFile as error:
        raise FormatError(f"{archive}: not a zip archive ({error})") from None


def decode_utf8(data: bytes, where: str) -> str:
    """``data`` as UTF-8.

    Raises:
        FormatError: invalid UTF-8 (the message names ``where`` and the line).
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise FormatError(f"{where}:{line}: not UTF-8 ({error.reason})") from None
