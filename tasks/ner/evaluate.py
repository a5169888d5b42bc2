"""conlleval-compatible NER evaluator and the writer of its input files.

Usage::

    python -m tasks.ner.evaluate [-r] [-d DELIMITER] [-o OUTSIDE_TAG] [--docstart-token] [FILE|-]

reads conlleval's input (one token per line, the gold and the predicted tag in the **last two**
columns, a blank line between sentences; ``-X-`` and ``-DOCSTART-`` first fields are boundaries)
from ``FILE`` or standard input and prints one JSON object with ``precision``, ``recall``, ``f1``,
``accuracy`` (percent, unrounded) and ``per_type``. Exit status 1 with a located message on
malformed input (conlleval also stops on a change in the number of columns).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Literal

from tasks.common.io import DataError, iter_lines, iter_stream_lines, run_json_cli
from tasks.common.spans import Scheme, convert
from tasks.ner.data import DOCSTART, NerExample
from tasks.ner.metric import BOUNDARY, ConllevalResult, score_rows


def read_conlleval_rows(
    lines: Iterable[tuple[int, str]],
    name: str,
    *,
    delimiter: str | None = None,
    docstart_boundary: bool = True,
) -> Iterator[list[str]]:
    """Split conlleval input lines into fields, checking them as conlleval does.

    Args:
        lines: ``(line_number, text)`` pairs.
        name: file name for errors.
        delimiter: a regular expression as conlleval's ``-d`` (trailing empty fields dropped, as
            Perl's ``split`` does); ``None`` splits on any run of whitespace.
        docstart_boundary: treat ``-DOCSTART-`` lines as boundaries (conlleval scores them as an
            ``O``-tagged token, which changes only the accuracy).

    Raises:
        DataError: a line's number of fields differs from the first line's, or a non-boundary line
            has fewer than 2 fields.
    """
    pattern = re.compile(delimiter) if delimiter is not None else None
    expected: int | None = None
    for number, text in lines:
        if pattern is None:
            fields = text.split()
        else:
            fields = pattern.split(text)
            while fields and fields[-1] == "":
                fields.pop()
        if fields and docstart_boundary and fields[0] == DOCSTART:
            yield []  # any number of fields: document markers are not scored
            continue
        if fields:
            if expected is None:
                expected = len(fields)
            elif len(fields) != expected:
                raise DataError(
                    name, number, f"unexpected number of fields: {len(fields)} ({expected})"
                )
        if not fields or fields[0] == BOUNDARY:
            yield []
            continue
        if len(fields) < 2:
            raise DataError(name, number, "expected at least 2 fields (gold and predicted tag)")
        yield fields


def evaluate_file(
    path: str | Path | None,
    *,
    raw: bool = False,
    delimiter: str | None = None,
    outside_tag: str = "O",
    docstart_boundary: bool = True,
) -> ConllevalResult:
    """Score a conlleval input file (``None`` or ``"-"``: standard input)."""
    if path is None or str(path) == "-":
        name, lines = "<stdin>", iter_stream_lines(sys.stdin.buffer, "<stdin>")
    else:
        name, lines = str(path), iter_lines(path)
    rows = read_conlleval_rows(
        lines, name, delimiter=delimiter, docstart_boundary=docstart_boundary
    )
    return score_rows(rows, raw=raw, outside_tag=outside_tag)


def write_conlleval(
    path: str | Path,
    examples: Iterable[NerExample],
    predictions: Iterable[Sequence[str]],
    *,
    scheme: Scheme = "IOB1",
    output_scheme: Literal["IOB1", "IOB2"] = "IOB1",
) -> int:
    """Write conlleval input: ``WORD POS CHUNK GOLD PREDICTED`` per token, blank line per sentence.

    Gold (``example.ner_tags``) and predicted tags, both in ``scheme``, are re-encoded into the same
    ``output_scheme``: conlleval has no rule for BIOUL's ``L-``/``U-``, and its accuracy compares
    full tags, so mixing schemes would count B-/I- differences as errors.

    Returns:
        The number of sentences written.

    Raises:
        ValueError: counts or lengths differ, a tag is invalid, or a token is empty, contains
            whitespace or is conlleval's boundary marker ``-X-``.
    """
    if output_scheme not in ("IOB1", "IOB2"):
        raise ValueError(f"output_scheme must be IOB1 or IOB2, not {output_scheme!r}")
    count = 0
    with Path(path).open("w", encoding="utf-8", newline="\n") as handle:
        for example, predicted in zip(examples, predictions, strict=True):
            if len(predicted) != len(example.tokens):
                raise ValueError(
                    f"sentence {count}: {len(example.tokens)} tokens but {len(predicted)} "
                    "predicted tags"
                )
            gold_tags = convert(example.ner_tags, scheme, output_scheme)
            predicted_tags = convert(predicted, scheme, output_scheme)
            columns = zip(
                example.tokens,
                example.pos_tags,
                example.chunk_tags,
                gold_tags,
                predicted_tags,
                strict=True,
            )
            for fields in columns:
                if fields[0] in ("", BOUNDARY, DOCSTART) or any(
                    not f or len(f.split()) != 1 for f in fields
                ):
                    raise ValueError(f"sentence {count}: cannot write field in {fields!r}")
                handle.write(" ".join(fields) + "\n")
            handle.write("\n")
            count += 1
    return count


def write_tagged(
    path: str | Path,
    tokens: Iterable[Sequence[str]],
    gold: Iterable[Sequence[str]],
    predicted: Iterable[Sequence[str]],
) -> int:
    """Write conlleval input ``WORD GOLD PREDICTED`` per token, a blank line per sentence.

    The tags are written as given: the caller puts gold and predictions in one IOB scheme (or
    plain tags, scored with ``-r``). conlleval reads only the last two columns.

    Returns:
        The number of sentences written.

    Raises:
        ValueError: counts or lengths differ, or a field is empty, contains whitespace or is a
            boundary marker (``-X-``, ``-DOCSTART-``) in the word column.
    """
    count = 0
    with Path(path).open("w", encoding="utf-8", newline="\n") as handle:
        for words, gold_tags, predicted_tags in zip(tokens, gold, predicted, strict=True):
            if not len(words) == len(gold_tags) == len(predicted_tags):
                raise ValueError(
                    f"sentence {count}: {len(words)} tokens, {len(gold_tags)} gold and "
                    f"{len(predicted_tags)} predicted tags"
                )
            for fields in zip(words, gold_tags, predicted_tags, strict=True):
                if fields[0] in (BOUNDARY, DOCSTART) or any(
                    not f or len(f.split()) != 1 for f in fields
                ):
                    raise ValueError(f"sentence {count}: cannot write field in {fields!r}")
                handle.write(" ".join(fields) + "\n")
            handle.write("\n")
            count += 1
    return count


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tasks.ner.evaluate",
        description="conlleval-compatible chunk/NER scorer printing JSON (percentages).",
    )
    parser.add_argument("file", nargs="?", default="-", help="conlleval input file; '-' = stdin")
    parser.add_argument(
        "-r", "--raw", action="store_true", help="tags have no B-/I- prefix (conlleval -r)"
    )
    parser.add_argument(
        "-d", "--delimiter", default=None, help="field separator regex (default: any whitespace)"
    )
    parser.add_argument(
        "-o", "--outside-tag", default="O", help="outside tag for -r (conlleval -o)"
    )
    parser.add_argument(
        "--docstart-token",
        action="store_true",
        help="score -DOCSTART- lines as tokens, as conlleval does (changes accuracy only)",
    )
    args = parser.parse_args(argv)
    return run_json_cli(
        lambda: evaluate_file(
            args.file,
            raw=args.raw,
            delimiter=args.delimiter,
            outside_tag=args.outside_tag,
            docstart_boundary=not args.docstart_token,
        ).as_dict()
    )


if __name__ == "__main__":
    sys.exit(main())
