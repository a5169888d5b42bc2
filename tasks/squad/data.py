"""SQuAD v1.1 reader (Rajpurkar et al., 2016): questions on Wikipedia paragraphs, span answers.

Peters et al. (2018), §4 "Question answering": train on the 87,599 training questions (one answer
each), report F1 on the 10,570 dev questions (usually three answers each).

Format (``train-v1.1.json`` / ``dev-v1.1.json``)::

    {"version": "1.1", "data": [{"title": str, "paragraphs": [{"context": str,
        "qas": [{"id": str, "question": str, "answers": [{"answer_start": int, "text": str}]}]}]}]}

``answer_start`` is a character offset into ``context``. Each question becomes one frozen
:class:`SquadExample` holding the context tokens with their character offsets in the *original*
context (spaCy's rule-based English tokenizer, ``spacy.blank("en")``; whitespace tokens dropped),
the answers as ``(text, start)`` pairs whose text is always ``context[start:start + len(text)]``,
and ``span``: the inclusive token span of the first answer, i.e. every token that overlaps its
characters. An answer that starts or ends inside a token (``"Nieuwl"`` of ``"Nieuwland"``) gets the
smallest token span that covers it, so a model restricted to token spans can at best predict the
whole token; predictions are sliced from the original context by the tokens' character offsets,
never re-joined from tokens.

Bad-input policy (see :mod:`tasks.common.io` for the project-wide rules):

* **Errors** (:class:`DataError`, nothing partial is returned): a missing or empty file, invalid
  UTF-8 (with its line), malformed JSON (with its line and column), a top level that is not an
  object with a ``data`` list, a missing or wrongly typed field at any level (``context``, ``qas``,
  ``id``, ``question``, ``answers``, ``text``, ``answer_start``; ``paragraphs``), named by its JSON
  path, e.g. ``data[3].paragraphs[0].qas[2]: missing "id"``, and a duplicate question id. ``title``
  may be absent (it becomes ``""``); a top-level ``version`` other than ``"1.1"`` is logged.
* **Repaired** (counted in ``SquadReader.stats.repaired``, also :attr:`SquadReader.repairs`,
  under ``"offset_repaired"``, so the run's read line and ``read-stats.json`` show it): an answer
  whose ``answer_start`` does not slice its text, when the text occurs within ±20 characters of
  the given offset; the occurrence closest to the given offset (the earlier one on a tie) is used.
* **Skipped** (counted in ``SquadReader.stats.skipped``): per *answer*, ``"answer_offset_mismatch"``
  (not repairable) and ``"empty_answer"`` (empty or whitespace-only text); per *question*,
  ``"empty_context"``, ``"empty_question"`` (empty or whitespace-only) and ``"no_usable_answer"``
  (it listed answers but every one was dropped). A question that lists no answers at all (a
  prediction-only file) is kept with ``answers == ()`` and ``span is None``, unless the reader
  requires answers (``require_answers``: the dev split, which is scored against them), where it
  is a :class:`DataError` naming the file, the question's JSON path and id. SQuAD v1.1 has no
  unanswerable questions; SQuAD 2.0 (``"is_impossible": true``, ``"answers": []``) is not
  supported.

Training keeps the first usable answer (``keep="first"``); evaluation keeps all (``keep="all"``).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from bilm.pretrained import sha256_of
from tasks.common.io import BOM, DataError, ReadStats, require_datasets, require_package

if TYPE_CHECKING:
    import datasets

logger = logging.getLogger(__name__)

READER_VERSION = 1  # bump when tokenization, repair or skip rules change (part of the cache key)
EXPECTED_VERSION = "1.1"
REPAIR_WINDOW = 20  # characters either side of answer_start searched by the repair
HF_DATASET = "rajpurkar/squad"
SPLIT_FILES: Mapping[str, str] = {"train": "train-v1.1.json", "dev": "dev-v1.1.json"}

SKIP_EMPTY_CONTEXT = "empty_context"
SKIP_EMPTY_QUESTION = "empty_question"
SKIP_OFFSET_MISMATCH = "answer_offset_mismatch"
SKIP_EMPTY_ANSWER = "empty_answer"
SKIP_NO_USABLE_ANSWER = "no_usable_answer"
REPAIRED = "offset_repaired"

Keep = Literal["all", "first"]


@dataclass(frozen=True)
class Answer:
    """One gold answer: ``text == context[start:start + len(text)]`` always holds.

    Attributes:
        text: the answer text.
        start: character offset of ``text`` in the original context.
    """

    text: str
    start: int

    @property
    def end(self) -> int:
        """Exclusive character end offset."""
        return self.start + len(self.text)


@dataclass(frozen=True)
class SquadExample:
    """One SQuAD question with its tokenized paragraph.

    Attributes:
        qid: the question ``id`` (unique within a file).
        title: the article title (``""`` when absent).
        context: the paragraph, exactly as in the file.
        question: the question, exactly as in the file.
        context_tokens: non-whitespace tokens of ``context``.
        context_offsets: ``(start, end)`` character offsets of each token in ``context``
            (``context[start:end] == token``).
        question_tokens: non-whitespace tokens of ``question``.
        answers: the kept answers (all usable ones, or only the first when training).
        span: inclusive ``(first_token, last_token)`` of ``answers[0]``, or ``None`` when there are
            no answers.
    """

    qid: str
    title: str
    context: str
    question: str
    context_tokens: tuple[str, ...]
    context_offsets: tuple[tuple[int, int], ...]
    question_tokens: tuple[str, ...]
    answers: tuple[Answer, ...]
    span: tuple[int, int] | None

    def span_text(self, first: int, last: int) -> str:
        """The original context text covered by tokens ``first..last`` (inclusive)."""
        return self.context[self.context_offsets[first][0] : self.context_offsets[last][1]]


class SquadNotAvailable(FileNotFoundError):
    """A ``--data`` folder lacks a SQuAD file, or (``--data hf:NAME``) the Hugging Face Hub
    could not be reached."""


def missing_files_error(folder: str | Path, missing: Sequence[str]) -> SquadNotAvailable:
    """The one-line error for a data folder without ``missing`` (names of :data:`SPLIT_FILES`)."""
    where = str(folder) if Path(folder).is_dir() else f"{folder} (no such folder)"
    return SquadNotAvailable(
        f"{where}: no {' and no '.join(missing)}; a SQuAD data folder holds train-v1.1.json and "
        "dev-v1.1.json (https://rajpurkar.github.io/SQuAD-explorer/). A data folder is never "
        f"completed from the Hugging Face Hub: pass --data hf:{HF_DATASET} to read it from there"
    )


def folder_files(folder: str | Path) -> list[Path]:
    """The files :func:`load_splits` reads from a data folder (:data:`SPLIT_FILES`), checked
    to be there without reading any.

    Raises:
        SquadNotAvailable: the folder lacks one (naming every missing one).
    """
    missing = [name for name in SPLIT_FILES.values() if not (Path(folder) / name).is_file()]
    if missing:
        raise missing_files_error(folder, missing)
    return [Path(folder) / name for name in SPLIT_FILES.values()]


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    return require_package("spacy", "the SQuAD reader needs spaCy").blank("en").tokenizer


def tokenize(text: str) -> tuple[tuple[str, ...], tuple[tuple[int, int], ...]]:
    """Tokens of ``text`` and their character offsets (spaCy ``blank("en")``; spaces dropped).

    >>> tokenize("Hi,  there")
    (('Hi', ',', 'there'), ((0, 2), (2, 3), (5, 10)))
    """
    tokens: list[str] = []
    offsets: list[tuple[int, int]] = []
    for token in _tokenizer()(text):
        if token.text.isspace():
            continue
        tokens.append(token.text)
        offsets.append((token.idx, token.idx + len(token.text)))
    return tuple(tokens), tuple(offsets)


def char_span_to_token_span(
    offsets: Sequence[tuple[int, int]], start: int, end: int
) -> tuple[int, int] | None:
    """Inclusive token span of every token overlapping characters ``[start, end)``.

    Returns ``None`` when no token overlaps (an empty or whitespace-only range).

    >>> char_span_to_token_span([(0, 6), (7, 13)], 2, 9)
    (0, 1)
    """
    covered = [i for i, (s, e) in enumerate(offsets) if s < end and e > start]
    return (covered[0], covered[-1]) if covered else None


def repair_offset(context: str, text: str, start: int, window: int = REPAIR_WINDOW) -> int | None:
    """Start of the occurrence of ``text`` nearest ``start`` within ±``window`` characters.

    Ties go to the earlier occurrence; ``None`` when ``text`` does not occur in the window.
    """
    if not text:
        return None
    low = max(0, start - window)
    high = min(len(context), max(start, 0) + len(text) + window)
    best: int | None = None
    position = context.find(text, low, high)
    while position != -1:
        if best is None or abs(position - start) < abs(best - start):
            best = position
        position = context.find(text, position + 1, high)
    return best


def load_json_document(path: str | Path) -> Any:
    """Read and parse a UTF-8 JSON file, raising a located :class:`DataError` on failure."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, "no such file")
    raw = path.read_bytes()
    if not raw.strip():
        raise DataError(path, None, "empty file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(path, line, f"invalid UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        return json.loads(text.removeprefix(BOM))
    except json.JSONDecodeError as exc:
        raise DataError(path, exc.lineno, f"bad JSON: {exc.msg} (column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:  # huge integers, deep nesting
        raise DataError(path, None, f"bad JSON: {exc or 'nested too deeply'}") from None


class _Fields:
    """Typed field access on parsed JSON that raises :class:`DataError` naming the JSON path."""

    def __init__(self, source: str | Path) -> None:
        self.source = source

    def fail(self, where: str, reason: str) -> DataError:
        return DataError(self.source, None, f"{where}: {reason}")

    def obj(self, value: object, where: str) -> Mapping[str, object]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {_type_name(value)}")
        return value

    def get(self, record: Mapping[str, object], key: str, where: str, kind: type) -> Any:
        if key not in record:
            raise self.fail(where, f'missing "{key}"')
        value = record[key]
        if kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, kind)
        if not ok:
            expected = {str: "a string", int: "an integer", list: "a list"}[kind]
            raise self.fail(f"{where}.{key}", f"expected {expected}, got {_type_name(value)}")
        return value


def _type_name(value: object) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )


class SquadReader:
    """Reads a SQuAD v1.1 JSON file into :class:`SquadExample` objects, in file order.

    Iterating parses the whole file first (it is one JSON document), then yields the examples.
    ``stats`` (examples, skips and repairs by reason) and ``repairs`` (``stats.repaired``)
    describe the last iteration and are complete once it is exhausted. See the module docstring
    for the bad-input policy.

    Args:
        path: the JSON file.
        keep: ``"all"`` keeps every usable answer (evaluation); ``"first"`` keeps only the first
            usable answer (training) and does not look at the rest.
        require_answers: a question that lists no answers (``"answers": []``) is an error
            instead of an example without answers (a split that is scored).

    Raises (while iterating):
        DataError: see the module docstring.
    """

    def __init__(
        self, path: str | Path, *, keep: Keep = "all", require_answers: bool = False
    ) -> None:
        if keep not in ("all", "first"):
            raise ValueError(f'keep must be "all" or "first", got {keep!r}')
        self.path = Path(path)
        self.source: str | Path = self.path
        self.keep: Keep = keep
        self.require_answers = require_answers
        self.stats = ReadStats()
        self._document: object = None

    @classmethod
    def from_document(
        cls, document: object, source: str, *, keep: Keep = "all", require_answers: bool = False
    ) -> SquadReader:
        """A reader over an already parsed SQuAD JSON document; ``source`` names it in errors."""
        reader = cls(source, keep=keep, require_answers=require_answers)
        reader.source = source
        reader._document = document
        return reader

    @property
    def repairs(self) -> Counter[str]:
        """Repairs by reason (``stats.repaired``: ``{"offset_repaired": n}`` or empty)."""
        return self.stats.repaired

    def __iter__(self) -> Iterator[SquadExample]:
        self.stats = ReadStats()
        document = self._document
        if document is None:
            document = load_json_document(self.path)
        fields = _Fields(self.source)
        if not isinstance(document, dict):
            raise fields.fail("top level", f"expected an object, got {_type_name(document)}")
        version = document.get("version")
        if version is not None and version != EXPECTED_VERSION:
            logger.warning("%s: expected SQuAD v%s, got %r", self.source, EXPECTED_VERSION, version)
        articles = fields.get(document, "data", "top level", list)
        seen: dict[str, str] = {}
        for a, article_value in enumerate(articles):
            where_article = f"data[{a}]"
            article = fields.obj(article_value, where_article)
            title = article.get("title", "")
            if not isinstance(title, str):
                raise fields.fail(
                    f"{where_article}.title", f"expected a string, got {_type_name(title)}"
                )
            paragraphs = fields.get(article, "paragraphs", where_article, list)
            for p, paragraph_value in enumerate(paragraphs):
                where_paragraph = f"{where_article}.paragraphs[{p}]"
                yield from self._paragraph(fields, paragraph_value, where_paragraph, title, seen)

    def _paragraph(
        self,
        fields: _Fields,
        paragraph_value: object,
        where: str,
        title: str,
        seen: dict[str, str],
    ) -> Iterator[SquadExample]:
        paragraph = fields.obj(paragraph_value, where)
        context: str = fields.get(paragraph, "context", where, str)
        qas = fields.get(paragraph, "qas", where, list)
        tokenized: tuple[tuple[str, ...], tuple[tuple[int, int], ...]] | None = None
        for q, qa_value in enumerate(qas):
            where_qa = f"{where}.qas[{q}]"
            qa = fields.obj(qa_value, where_qa)
            qid: str = fields.get(qa, "id", where_qa, str)
            question: str = fields.get(qa, "question", where_qa, str)
            raw_answers = fields.get(qa, "answers", where_qa, list)
            answers: list[tuple[str, int]] = []
            for n, answer_value in enumerate(raw_answers):
                where_answer = f"{where_qa}.answers[{n}]"
                answer = fields.obj(answer_value, where_answer)
                text: str = fields.get(answer, "text", where_answer, str)
                start: int = fields.get(answer, "answer_start", where_answer, int)
                answers.append((text, start))
            if qid in seen:
                raise fields.fail(where_qa, f"duplicate question id {qid!r} (first at {seen[qid]})")
            seen[qid] = where_qa
            if self.require_answers and not raw_answers:
                raise fields.fail(where_qa, _no_answers(qid, qa))
            if not context.strip():
                self.stats.skip(SKIP_EMPTY_CONTEXT)
                continue
            if not question.strip():
                self.stats.skip(SKIP_EMPTY_QUESTION)
                continue
            kept = self._usable_answers(context, answers)
            if answers and not kept:
                self.stats.skip(SKIP_NO_USABLE_ANSWER)
                continue
            if tokenized is None:
                tokenized = tokenize(context)
            tokens, offsets = tokenized
            span = char_span_to_token_span(offsets, kept[0].start, kept[0].end) if kept else None
            self.stats.examples += 1
            yield SquadExample(
                qid=qid,
                title=title,
                context=context,
                question=question,
                context_tokens=tokens,
                context_offsets=offsets,
                question_tokens=tokenize(question)[0],
                answers=tuple(kept),
                span=span,
            )

    def _usable_answers(self, context: str, answers: Sequence[tuple[str, int]]) -> list[Answer]:
        kept: list[Answer] = []
        for text, start in answers:
            if not text.strip():
                self.stats.skip(SKIP_EMPTY_ANSWER, part="answer")  # the question may stay
                continue
            if not (0 <= start and context[start : start + len(text)] == text):
                repaired = repair_offset(context, text, start)
                if repaired is None:
                    self.stats.skip(SKIP_OFFSET_MISMATCH, part="answer")
                    continue
                self.stats.repair(REPAIRED)  # kept: counted where the run reports reads
                start = repaired
            kept.append(Answer(text, start))
            if self.keep == "first":
                break
        return kept


def _no_answers(qid: str, qa: Mapping[str, object]) -> str:
    """Why a scored question without answers is refused (SQuAD 2.0 named when it looks so)."""
    impossible = ' (marked "is_impossible": SQuAD 2.0)' if qa.get("is_impossible") else ""
    return (
        f'question {qid!r} has no answers ("answers": []){impossible}; a scored split needs '
        "at least one per question: SQuAD v1.1 has no unanswerable questions and SQuAD 2.0 is "
        "not supported"
    )


def read_squad(path: str | Path, *, keep: Keep = "all") -> list[SquadExample]:
    """All examples of a SQuAD v1.1 file (see :class:`SquadReader`)."""
    return list(SquadReader(path, keep=keep))


# --- Hugging Face datasets -------------------------------------------------------------------


def hf_features() -> datasets.Features:
    """The column types of :func:`to_hf_dataset`."""
    ds = require_datasets()
    string, int32 = ds.Value("string"), ds.Value("int32")
    return ds.Features(
        {
            "qid": string,
            "title": string,
            "context": string,
            "question": string,
            "context_tokens": ds.List(string),
            "context_offsets": ds.List(ds.List(int32, length=2)),
            "question_tokens": ds.List(string),
            "answers": ds.List({"text": string, "start": int32}),
            "span": ds.List(int32, length=2),
        }
    )


def example_to_row(example: SquadExample) -> dict[str, object]:
    """One :func:`to_hf_dataset` row (lists instead of tuples)."""
    return {
        "qid": example.qid,
        "title": example.title,
        "context": example.context,
        "question": example.question,
        "context_tokens": list(example.context_tokens),
        "context_offsets": [list(offset) for offset in example.context_offsets],
        "question_tokens": list(example.question_tokens),
        "answers": [{"text": a.text, "start": a.start} for a in example.answers],
        "span": list(example.span) if example.span is not None else None,
    }


def example_from_row(row: Mapping[str, Any]) -> SquadExample:
    """Inverse of :func:`example_to_row`, for rows of :func:`to_hf_dataset`."""
    span = row["span"]
    return SquadExample(
        qid=row["qid"],
        title=row["title"],
        context=row["context"],
        question=row["question"],
        context_tokens=tuple(row["context_tokens"]),
        context_offsets=tuple((s, e) for s, e in row["context_offsets"]),
        question_tokens=tuple(row["question_tokens"]),
        answers=tuple(Answer(a["text"], a["start"]) for a in row["answers"]),
        span=(span[0], span[1]) if span is not None else None,
    )


def to_hf_dataset(
    path: str | Path, cache_dir: str | Path | None = None, *, keep: Keep = "all"
) -> datasets.Dataset:
    """Read a SQuAD v1.1 file into a Hugging Face ``datasets.Dataset`` (:func:`hf_features`).

    With ``cache_dir``, the preprocessed dataset is stored with ``Dataset.save_to_disk`` under
    ``cache_dir/squad-r{READER_VERSION}-{keep}-{sha256 of the file}`` (written to a temporary
    folder, then renamed, so an interrupted run leaves no half-written cache) together with
    ``read_stats.json``, and later calls with the same file bytes, reader version and ``keep``
    return ``datasets.load_from_disk`` of it without re-tokenizing. Without ``cache_dir`` nothing is
    written. Editing the file changes its hash; stale entries are never reused (delete them freely).

    Raises:
        DataError: the file is malformed (see the module docstring).
    """
    ds = require_datasets()
    target: Path | None = None
    if cache_dir is not None:
        target = Path(cache_dir) / f"squad-r{READER_VERSION}-{keep}-{sha256_of(path)}"
        if (target / "read_stats.json").is_file():
            return ds.load_from_disk(str(target))
    reader = SquadReader(path, keep=keep)
    rows = [example_to_row(example) for example in reader]
    columns = {name: [row[name] for row in rows] for name in hf_features()}
    dataset = ds.Dataset.from_dict(columns, features=hf_features())
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".squad-", dir=target.parent))
        try:
            dataset.save_to_disk(str(staging / "data"))
            stats = {**reader.stats.as_dict(), "repairs": dict(reader.repairs), "source": str(path)}
            (staging / "data" / "read_stats.json").write_text(json.dumps(stats), encoding="utf-8")
            try:
                os.replace(staging / "data", target)
            except OSError:  # another process cached the same file first
                pass
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        dataset = ds.load_from_disk(str(target))
    return dataset


def _normalise_split(split: str) -> str:
    names = {"train": "train", "dev": "dev", "validation": "dev"}
    if split not in names:
        raise ValueError(f"unknown SQuAD split {split!r}; expected one of {sorted(names)}")
    return names[split]


def hf_rows_to_document(rows: Sequence[Mapping[str, Any]]) -> dict[str, object]:
    """Regroup flat ``rajpurkar/squad`` rows into the SQuAD v1.1 JSON layout.

    Consecutive rows with the same title form an article, and consecutive rows with the same
    context within it a paragraph, as in the official files the Hub copy was made from.
    """
    data: list[dict[str, Any]] = []
    for row in rows:
        if not data or data[-1]["title"] != row["title"]:
            data.append({"title": row["title"], "paragraphs": []})
        paragraphs = data[-1]["paragraphs"]
        if not paragraphs or paragraphs[-1]["context"] != row["context"]:
            paragraphs.append({"context": row["context"], "qas": []})
        answers = row["answers"]
        paragraphs[-1]["qas"].append(
            {
                "id": row["id"],
                "question": row["question"],
                "answers": [
                    {"text": text, "answer_start": start}
                    for text, start in zip(answers["text"], answers["answer_start"], strict=True)
                ],
            }
        )
    return {"version": EXPECTED_VERSION, "data": data}


def load_squad(
    split: str,
    data_dir: str | Path | None = None,
    *,
    cache_dir: str | Path | None = None,
    stats: ReadStats | None = None,
) -> list[SquadExample]:
    """The examples of one SQuAD v1.1 split, from a local folder or the Hugging Face Hub.

    ``train`` keeps the first answer of each question, ``dev`` (alias ``validation``) all answers
    and refuses a question without any (``require_answers``: dev is scored against them).
    A folder ``data_dir`` must hold the split's official file (``train-v1.1.json`` /
    ``dev-v1.1.json``); it is never completed from the Hub. ``data_dir="hf:NAME"`` (or None:
    ``hf:rajpurkar/squad``) reads ``datasets.load_dataset(NAME, split=...)`` (downloading, or
    reading a local Hugging Face cache; ``cache_dir`` is passed to it) through the same reader.
    With ``stats``, the reader's statistics (and the source) are added to it.

    Raises:
        SquadNotAvailable: the folder lacks the split's file, or the Hub cannot be reached
            (offline); the message says how to supply the files.
        DataError: a local file is malformed, or a dev question lists no answers.
    """
    name = _normalise_split(split)
    keep: Keep = "first" if name == "train" else "all"
    scored = name == "dev"
    hub = HF_DATASET
    if data_dir is not None and str(data_dir).startswith("hf:"):
        hub = str(data_dir)[3:]
    elif data_dir is not None:
        path = Path(data_dir) / SPLIT_FILES[name]
        if not path.is_file():
            raise missing_files_error(data_dir, [SPLIT_FILES[name]])
        return _read_into(SquadReader(path, keep=keep, require_answers=scored), stats)
    ds = require_datasets()
    hf_split = "train" if name == "train" else "validation"
    try:
        rows = ds.load_dataset(
            hub, split=hf_split, cache_dir=None if cache_dir is None else str(cache_dir)
        )
    except (OSError, ConnectionError, TimeoutError) as exc:  # offline, DNS, missing cache entry
        raise SquadNotAvailable(
            f"SQuAD v1.1 {name!r} split is not available: the Hugging Face Hub "
            f"could not be reached for {hub!r} ({type(exc).__name__}: {exc}). Supply the "
            "official files with --data DIR (a folder holding train-v1.1.json and dev-v1.1.json, "
            "from https://rajpurkar.github.io/SQuAD-explorer/), or fill a local Hugging Face "
            f"cache while online (datasets.load_dataset({hub!r})) and rerun with "
            "HF_DATASETS_OFFLINE=1."
        ) from exc
    document = hf_rows_to_document(rows)
    source = f"hf:{hub}[{hf_split}]"
    reader = SquadReader.from_document(document, source, keep=keep, require_answers=scored)
    return _read_into(reader, stats)


def _read_into(reader: SquadReader, stats: ReadStats | None) -> list[SquadExample]:
    """Every example of ``reader``; its statistics (with the source) added to ``stats``."""
    examples = list(reader)
    if stats is not None:
        reader.stats.source = str(reader.source)
        stats.merge(reader.stats)
    return examples


SKIP_NO_ANSWER = "no answer"  # a training question that lists no answer
SKIP_BEYOND_CUT = "answer beyond max_context_tokens"
#: A kept question whose context is cut at ``max_context_tokens`` (exempt: part of a kept
#: example dropped by a configured limit); counted per question, in every split.
CONTEXT_CUT = "context cut at max_context_tokens"


def load_splits(
    folder: str | Path, max_context_tokens: int | None
) -> tuple[dict[str, list[SquadExample]], dict[str, ReadStats]]:
    """Train and dev (:func:`load_squad`) and their statistics; SQuAD's test set is hidden.

    ``folder``: a folder holding both official files (checked before either is read), or
    ``hf:NAME`` (a Hugging Face dataset). A training question without an answer cannot train
    (skipped); with ``max_context_tokens`` set, one whose answer ends beyond the cut is skipped
    too (exempt: a configured filter), and every kept question whose context is longer than
    the cut is counted under :data:`CONTEXT_CUT` (exempt), the longest context named in the
    split's :attr:`ReadStats.variant`: a dev answer beyond the cut can never be found.

    Returns:
        ``(splits, stats)``: split → examples, split → read statistics.

    Raises:
        SquadNotAvailable: the folder lacks a file (naming every missing one), or the Hub cannot
            be reached.
        DataError: a malformed file, or a dev question without answers.
    """
    if not str(folder).startswith("hf:"):
        missing = [f for f in SPLIT_FILES.values() if not (Path(folder) / f).is_file()]
        if missing:
            raise missing_files_error(folder, missing)
    stats = {"train": ReadStats(), "dev": ReadStats()}
    read = load_squad("train", folder, stats=stats["train"])
    train = [ex for ex in read if ex.span is not None]
    for _ in range(len(read) - len(train)):
        stats["train"].skip(SKIP_NO_ANSWER)
    dev = list(load_squad("dev", folder, stats=stats["dev"]))
    cut = max_context_tokens
    kept = [ex for ex in train if cut is None or (ex.span is not None and ex.span[1] < cut)]
    for _ in range(len(train) - len(kept)):
        stats["train"].skip(SKIP_BEYOND_CUT, exempt=True)
    stats["train"].examples = len(kept)
    splits = {"train": kept, "dev": dev}
    if cut is not None:
        for split, examples in splits.items():
            _count_cuts(examples, cut, stats[split])
    return splits, stats


def _count_cuts(examples: Sequence[SquadExample], cut: int, stats: ReadStats) -> None:
    """Count (exempt) the questions whose context is longer than ``cut`` tokens, and describe
    them in ``stats.variant`` (:func:`describe_cuts`)."""
    long = sum(len(ex.context_tokens) > cut for ex in examples)
    for _ in range(long):
        stats.skip(CONTEXT_CUT, exempt=True)
    if long:
        words = describe_cuts(examples, cut)
        stats.variant = f"{stats.variant}; {words}" if stats.variant else words


def describe_cuts(examples: Sequence[SquadExample], cut: int) -> str:
    """The questions whose context ``max_context_tokens=cut`` cuts, in words, e.g. ``"3 of
    1,000 contexts truncated to 200 tokens (max 20,000, question 'q7')"`` (``"0 of …"`` when
    none is)."""
    long = [ex for ex in examples if len(ex.context_tokens) > cut]
    counts = f"{len(long):,} of {len(examples):,} contexts truncated to {cut:,} tokens"
    if not long:
        return counts
    longest = max(long, key=lambda ex: len(ex.context_tokens))
    return f"{counts} (max {len(longest.context_tokens):,}, question {longest.qid!r})"
