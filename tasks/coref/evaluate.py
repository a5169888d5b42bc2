"""Score CoNLL-2012 coreference responses as the reference scorer v8.01 does; write response files.

Usage::

    python -m tasks.coref.evaluate KEY RESPONSE

``KEY`` is a CoNLL-2012 ``*_conll`` file (or a directory of them); ``RESPONSE`` is the key with the
last column replaced by predicted clusters (what :func:`write_response` produces). Prints JSON with
``muc``, ``bcub`` and ``ceafe`` recall/precision/f1, ``conll_f1`` (all percent) and mention
identification. It matches ``scorer.pl {muc,bcub,ceafe} KEY RESPONSE none`` averaged as e2e-coref
does, except that scorer.pl *prints* values truncated to two decimals while this prints full
precision.

Documents are paired by ``(document id, part)``. As in v8.01, a key document missing from the
response is scored against an empty response and response documents absent from the key are
ignored (both counted in the report). Stricter than v8.01: a document repeated within a file, or
a response document whose token count differs from the key's, raises
:class:`~tasks.common.io.DataError`.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from tasks.common.conll2012 import (
    Document,
    Mention,
    conll_files,
    parse_begin_document,
    read_documents,
)
from tasks.common.io import DataError, iter_lines, run_json_cli
from tasks.coref.metric import MAX_REPEATED_MENTIONS, CorefScore, score_corpus

__all__ = [
    "encode_clusters",
    "evaluate_files",
    "main",
    "write_document_response",
    "write_response",
]

Clusters = Sequence[Sequence[Mention]]
_LAST_FIELD = re.compile(r"\S+\s*$")


def _last_field_start(text: str) -> int:
    """Where a token line's coreference field starts: after the last tab of a tab-separated
    line (LitBank leaves it empty for no mention), else at the last whitespace-separated field."""
    if "\t" in text:
        return text.rstrip(" \r\n").rfind("\t") + 1
    match = _LAST_FIELD.search(text)
    assert match is not None  # a token line has at least 12 fields (checked by the reader)
    return match.start()


def encode_clusters(num_tokens: int, clusters: Clusters) -> list[str]:
    """The coreference column (``(3``, ``3)``, ``(3)``, ``|``-joined, ``-``) for one document.

    Cluster ``i`` is written with number ``i``. Per token: openings (longest first), single-token
    mentions, closings (shortest first).

    Raises:
        ValueError: a mention lies outside the document, or two multi-token mentions of one cluster
            cross (the bracket notation pairs each closing with the latest opening of its cluster,
            so crossing mentions cannot be written).
    """
    opens: list[list[tuple[int, str]]] = [[] for _ in range(num_tokens)]
    singles: list[list[str]] = [[] for _ in range(num_tokens)]
    closes: list[list[tuple[int, str]]] = [[] for _ in range(num_tokens)]
    for number, cluster in enumerate(clusters):
        stack: list[Mention] = []
        for start, end in sorted(set(cluster), key=lambda m: (m[0], -m[1])):
            if not 0 <= start <= end < num_tokens:
                raise ValueError(
                    f"mention {(start, end)} outside a document of {num_tokens} tokens"
                )
            if start == end:
                continue
            while stack and stack[-1][1] < start:
                stack.pop()
            if stack and end > stack[-1][1]:
                raise ValueError(f"cluster {number}: mentions {stack[-1]} and {(start, end)} cross")
            stack.append((start, end))
        for start, end in cluster:
            if start == end:
                singles[start].append(f"({number})")
            else:
                opens[start].append((-end, f"({number}"))
                closes[end].append((-start, f"{number})"))
    column = []
    for i in range(num_tokens):
        pieces = [p for _, p in sorted(opens[i])] + singles[i] + [p for _, p in sorted(closes[i])]
        column.append("|".join(pieces) if pieces else "-")
    return column


def _documents(path: str | Path) -> dict[tuple[str, int], Document]:
    documents: dict[tuple[str, int], Document] = {}
    for document in read_documents(path, layers="coreference"):
        if document.key in documents:
            first = documents[document.key]
            raise DataError(
                document.path,
                document.line,
                f"document {document.document_id} part {document.part} repeated "
                f"(first at {first.path}:{first.line})",
            )
        documents[document.key] = document
    return documents


def write_response(
    key_path: str | Path, predictions: Mapping[tuple[str, int], Clusters], out_path: str | Path
) -> None:
    """Write a response file: the key's lines with the last column replaced by predicted clusters.

    Args:
        key_path: CoNLL-2012 key file or directory (a directory's files are concatenated).
        predictions: clusters of document-level ``(start, end)`` mentions keyed by
            ``(document_id, part)``; a key document without an entry gets no mentions.
        out_path: the response file.

    Raises:
        DataError: the key is malformed or repeats a document.
        ValueError: a prediction names no key document or cannot be encoded.
    """
    documents = _documents(key_path)
    unknown = sorted(set(predictions) - set(documents))
    if unknown:
        raise ValueError(f"predictions for documents absent from the key: {unknown[:5]}")
    with Path(out_path).open("w", encoding="utf-8") as handle:
        for file in conll_files(key_path):
            handle.writelines(line + "\n" for line in _rewrite(file, documents, predictions))


def _rewrite(
    path: Path,
    documents: Mapping[tuple[str, int], Document],
    predictions: Mapping[tuple[str, int], Clusters],
) -> Iterator[str]:
    column: list[str] | None = None
    token = 0
    for _, text in iter_lines(path):
        stripped = text.strip()
        header = parse_begin_document(stripped)
        if header is not None:
            column = encode_clusters(documents[header].num_tokens, predictions.get(header, ()))
            token = 0
        elif stripped.startswith("#"):
            column = None if re.match(r"^#\s*end document", stripped) else column
        elif stripped and column is not None:
            text = text[: _last_field_start(text)] + column[token]
            token += 1
        yield text


def write_document_response(
    documents: Sequence[tuple[str, tuple[str, int], int]],
    predictions: Mapping[tuple[str, int], Clusters],
    out_path: str | Path,
    key_out: str | Path | None = None,
) -> None:
    """Write the response for some documents of key files: exactly their lines (headers, token
    lines, blank lines, ``#end document``) with the last column replaced by the predictions.

    Args:
        documents: ``(key file, (document id, part), number of tokens)`` of each document, in
            the order to write (documents of one file in file order).
        predictions: clusters per ``(document id, part)``; a document without an entry gets
            no mentions.
        out_path: the response file.
        key_out: when given, the same documents' key lines unchanged (so that
            ``python -m tasks.coref.evaluate key_out out_path`` scores exactly these documents).

    Raises:
        ValueError: a document is absent from its file, or a prediction cannot be encoded.
    """
    wanted: dict[str, dict[tuple[str, int], int]] = {}
    for path, doc_key, num_tokens in documents:
        wanted.setdefault(path, {})[doc_key] = num_tokens
    response: list[str] = []
    key: list[str] = []
    for path, keys in wanted.items():
        found: set[tuple[str, int]] = set()
        column: list[str] | None = None
        token = 0
        for _, text in iter_lines(path):
            stripped = text.strip()
            header = parse_begin_document(stripped)
            if header is not None:
                column = None
                if header in keys:
                    found.add(header)
                    column = encode_clusters(keys[header], predictions.get(header, ()))
                    token = 0
            if column is None:
                continue
            key.append(text)
            if stripped and not stripped.startswith("#"):
                text = text[: _last_field_start(text)] + column[token]
                token += 1
            response.append(text)
            if re.match(r"^#\s*end document", stripped):
                column = None
        missing = sorted(set(keys) - found)
        if missing:
            raise ValueError(f"{path}: no document {missing[0]}")
    Path(out_path).write_text("".join(line + "\n" for line in response), encoding="utf-8")
    if key_out is not None:
        Path(key_out).write_text("".join(line + "\n" for line in key), encoding="utf-8")


def evaluate_files(
    key_path: str | Path,
    response_path: str | Path,
    max_repeated_mentions: int | None = MAX_REPEATED_MENTIONS,
) -> tuple[CorefScore, dict[str, int]]:
    """Score a response file against a key file.

    Args:
        key_path: CoNLL-2012 key file or directory.
        response_path: response file or directory.
        max_repeated_mentions: refuse to score (``ValueError``) above this many repeated
            key-matching response mentions, as v8.01 does with 10; ``None`` disables the check.

    Returns:
        The score and document bookkeeping: ``missing_response_documents`` (scored as empty) and
        ``ignored_response_documents`` (not in the key).

    Raises:
        DataError: a file is malformed, repeats a document, or a response document's token count
            differs from the key's.
        ValueError: too many repeated mentions.
    """
    keys = _documents(key_path)
    responses = _documents(response_path)
    for doc_key, response in responses.items():
        if doc_key in keys and response.num_tokens != keys[doc_key].num_tokens:
            raise DataError(
                response.path,
                response.line,
                f"document {doc_key[0]} part {doc_key[1]} has {response.num_tokens} tokens, "
                f"the key {keys[doc_key].num_tokens}",
            )
    pairs = [
        (key.clusters, responses[doc_key].clusters if doc_key in responses else ())
        for doc_key, key in keys.items()
    ]
    score = score_corpus(pairs)
    if max_repeated_mentions is not None and score.repeated_mentions > max_repeated_mentions:
        raise ValueError(
            f"found too many repeated mentions ({score.repeated_mentions} > "
            f"{max_repeated_mentions}) in the response; the reference scorer refuses to score it"
        )
    bookkeeping = {
        "missing_response_documents": sum(1 for k in keys if k not in responses),
        "ignored_response_documents": sum(1 for k in responses if k not in keys),
    }
    return score, bookkeeping


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m tasks.coref.evaluate",
        description="MUC, B3, CEAF-e and CoNLL F1 as reference scorer v8.01; prints JSON.",
    )
    parser.add_argument("key", help="CoNLL-2012 key file (or directory of *_conll files)")
    parser.add_argument("response", help="response file: the key with predicted clusters")
    args = parser.parse_args(argv)

    def report() -> dict[str, object]:
        score, bookkeeping = evaluate_files(args.key, args.response)
        return {**score.to_dict(), **bookkeeping}

    return run_json_cli(report, errors=(DataError, ValueError))


if __name__ == "__main__":
    sys.exit(main())
