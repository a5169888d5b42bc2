"""SNLI 1.0 reader (Bowman et al., 2015): premise/hypothesis pairs with a 3-way label.

Format (``snli_1.0_{train,dev,test}.jsonl``): one JSON object per line with ``gold_label``,
``sentence1`` (premise), ``sentence2`` (hypothesis), ``pairID`` and, optionally,
``sentence{1,2}_binary_parse`` (unlabelled binarised PTB parse: removing the parentheses leaves the
PTB tokens), ``sentence{1,2}_parse``, ``annotator_labels`` and ``captionID``.

Pairs whose ``gold_label`` is ``"-"`` (no annotator majority) are dropped, as in every published
setup, and counted under ``ReadStats.skipped["no gold label"]``: 550,152 / 10,000 / 10,000 raw pairs
give 549,367 / 9,842 / 9,824 examples.

Also here: :class:`PlainPairReader` for ``{"premise", "hypothesis", "label"}`` JSON lines with any
label set (MultiNLI-style user data), tokenised by :func:`tokenize`; :func:`pair_reader` picks the
reader from the first record; :func:`split_file` finds a split in a ``--data`` folder;
:func:`load_hf` reads ``stanfordnlp/snli`` through Hugging Face ``datasets``; :func:`load_splits`
reads every split from the sources in order (``tasks/snli/task.py`` lists them) and
:func:`apply_policy` applies the model's policy for empty and over-long pairs.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tasks.common.io import DataError, ReadStats, attribute_columns, iter_lines, require_datasets

if TYPE_CHECKING:
    import datasets

    from tasks.snli.config import SnliConfig

logger = logging.getLogger(__name__)

LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")
NO_GOLD_LABEL = "-"
SKIP_NO_GOLD = "no gold label"


@dataclass(frozen=True)
class SnliExample:
    """One labelled SNLI pair.

    Attributes:
        pair_id: the ``pairID`` (unique within a split).
        premise: ``sentence1`` as given.
        hypothesis: ``sentence2`` as given.
        label: one of :data:`LABELS`.
        premise_tokens: tokens of ``sentence1_binary_parse``, or ``None`` when the field is absent.
        hypothesis_tokens: tokens of ``sentence2_binary_parse``, or ``None`` when absent.
        line: 1-based line of the pair in its file (``None`` for Hugging Face rows); not compared.
    """

    pair_id: str
    premise: str
    hypothesis: str
    label: str
    premise_tokens: tuple[str, ...] | None = None
    hypothesis_tokens: tuple[str, ...] | None = None
    line: int | None = field(default=None, compare=False)


def binary_parse_tokens(parse: str) -> tuple[str, ...]:
    """Tokens of an SNLI binary parse: ``"( ( A person ) runs )"`` → ``("A", "person", "runs")``."""
    return tuple(token for token in parse.split() if token not in ("(", ")"))


class SnliReader:
    """Streams the labelled pairs of an SNLI 1.0 jsonl file.

    Iterating yields :class:`SnliExample` objects lazily; ``stats`` and ``unlabeled_ids`` (the
    ``pairID`` of every dropped ``"-"`` pair) describe the last iteration and are complete once it
    is exhausted. Blank lines are ignored.

    Raises (while iterating):
        DataError: invalid UTF-8, an empty file, a line that is not a JSON object, a missing or
            non-string ``gold_label`` / ``sentence1`` / ``sentence2`` / ``pairID``, an unknown
            label, a non-string binary parse, or a repeated ``pairID``.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.stats = ReadStats()
        self.unlabeled_ids: list[str] = []

    def __iter__(self) -> Iterator[SnliExample]:
        self.stats = ReadStats()
        self.unlabeled_ids = []
        seen: set[str] = set()
        for number, record in _json_records(self.path):
            fields = {
                key: require_string(self.path, number, record, key)
                for key in ("gold_label", "sentence1", "sentence2", "pairID")
            }
            pair_id = fields["pairID"]
            if pair_id in seen:
                raise DataError(self.path, number, f"duplicate pairID {pair_id!r}")
            seen.add(pair_id)
            label = fields["gold_label"]
            if label == NO_GOLD_LABEL:
                self.stats.skip(SKIP_NO_GOLD)
                self.unlabeled_ids.append(pair_id)
                continue
            if label not in LABELS:
                raise DataError(
                    self.path, number, f"unknown gold_label {label!r}; expected one of {LABELS}"
                )
            tokens = [
                _optional_tokens(self.path, number, record, f"sentence{side}_binary_parse")
                for side in (1, 2)
            ]
            self.stats.examples += 1
            yield SnliExample(
                pair_id,
                fields["sentence1"],
                fields["sentence2"],
                label,
                tokens[0],
                tokens[1],
                number,
            )


def _json_records(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    """``(line number, JSON object)`` of every non-blank line of ``path``.

    Raises (while iterating):
        DataError: a line that is not a JSON object, or a file with no non-blank line.
    """
    records = 0
    for number, line in iter_lines(path):
        if line.strip():
            records += 1
            yield number, parse_json_line(path, number, line)
    if records == 0:
        raise DataError(path, None, "no JSON lines (only blank lines)")


def to_hf_dataset(path: str | Path) -> datasets.Dataset:
    """Read an SNLI jsonl file into a Hugging Face ``datasets.Dataset`` (labelled pairs only).

    Columns: ``pair_id``, ``premise``, ``hypothesis``, ``label`` (a ``ClassLabel`` over
    :data:`LABELS`), ``premise_tokens``, ``hypothesis_tokens`` (``None`` when the file has no
    binary parses).
    """
    datasets = require_datasets()
    names = ("pair_id", "premise", "hypothesis", "label", "premise_tokens", "hypothesis_tokens")
    columns = attribute_columns(SnliReader(path), names)
    features = datasets.Features(
        {
            "pair_id": datasets.Value("string"),
            "premise": datasets.Value("string"),
            "hypothesis": datasets.Value("string"),
            "label": datasets.ClassLabel(names=list(LABELS)),
            "premise_tokens": datasets.Sequence(datasets.Value("string")),
            "hypothesis_tokens": datasets.Sequence(datasets.Value("string")),
        }
    )
    return datasets.Dataset.from_dict(columns, features=features)


def parse_json_line(path: Path, number: int, line: str) -> dict[str, object]:
    """Parse one line holding a JSON object, or raise a located :class:`DataError`."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, huge ints, deep nesting
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc) or "too deep"
        raise DataError(path, number, f"bad JSON: {reason}") from None
    if not isinstance(record, dict):
        raise DataError(path, number, f"expected a JSON object, got {type(record).__name__}")
    return record


def require_string(path: Path, number: int, record: dict[str, object], key: str) -> str:
    """``record[key]`` if it is a string, else a located :class:`DataError`."""
    if key not in record:
        raise DataError(path, number, f"missing field {key!r}")
    value = record[key]
    if not isinstance(value, str):
        raise DataError(path, number, f"field {key!r} must be a string, got {type(value).__name__}")
    return value


def _optional_tokens(
    path: Path, number: int, record: dict[str, object], key: str
) -> tuple[str, ...] | None:
    if record.get(key) is None:
        return None
    return binary_parse_tokens(require_string(path, number, record, key))


# --- plain JSON-lines pairs, file lookup, Hugging Face ------------------------------------------

PLAIN_FIELDS = ("premise", "hypothesis", "label")
SKIP_NO_LABEL = "no label"
NO_LABEL_VALUES = ("-", "", "-1")  # plain-file labels that mean "no gold label" (skipped)
HF_DATASET = "stanfordnlp/snli"
HF_SPLITS = {"train": "train", "dev": "validation", "test": "test"}
SPLIT_NAMES = {  # file names looked for in --data DIR, in order
    split: (f"snli_1.0_{split}.jsonl", f"{split}.jsonl") for split in ("train", "dev", "test")
}

_TOKEN = re.compile(
    r"""[^\W\d_]+(?=n't\b)       # the "do" of "don't"
      | n't\b                    # the clitic itself
      | '(?:s|re|ve|ll|d|m)\b    # 's 're 've 'll 'd 'm
      | \d+(?:[.,:]\d+)*         # 3  3,000  2.5  10:30
      | \w+(?:-\w+)*             # words, hyphenated words
      | \S                       # any other character on its own
    """,
    re.VERBOSE | re.IGNORECASE,
)


def tokenize(text: str) -> tuple[str, ...]:
    """A simple PTB-like tokenizer for plain files (the official files carry PTB tokens).

    Words (with inner hyphens), numbers (with inner ``.,:``), the clitics ``n't 's 're 've 'll
    'd 'm`` and every other non-space character on its own. No abbreviation list: ``U.S.`` gives
    ``U . S .``.

    >>> tokenize("The dog's owner didn't see 3,000 well-fed cats.")
    ('The', 'dog', "'s", 'owner', 'did', "n't", 'see', '3,000', 'well-fed', 'cats', '.')
    """
    return tuple(_TOKEN.findall(text))


class PlainPairReader:
    """Streams ``{"premise", "hypothesis", "label"}`` JSON lines (any label set).

    Optional fields: ``pairID`` or ``id`` (a string or integer; default ``"<file stem>:<line>"``).
    Labels are strings (integers are read as their decimal string, as in Hugging Face exports);
    ``"-"``, ``""``, ``-1`` and ``null`` mean "no gold label": skipped and counted under
    ``stats.skipped["no label"]`` (their ids in ``unlabeled_ids``). Tokens come from
    :func:`tokenize`. Blank lines are ignored.

    Args:
        path: the file.
        labels: the allowed labels (e.g. those of the training file); ``None`` accepts any.

    Raises (while iterating):
        DataError: invalid UTF-8, an empty file, a line that is not a JSON object, a missing or
            non-string premise / hypothesis, a label that is not a string or an integer, a label
            outside ``labels``, or a repeated id.
    """

    def __init__(self, path: str | Path, labels: Sequence[str] | None = None) -> None:
        self.path = Path(path)
        self.labels = None if labels is None else tuple(labels)
        self.stats = ReadStats()
        self.unlabeled_ids: list[str] = []

    def __iter__(self) -> Iterator[SnliExample]:
        self.stats = ReadStats()
        self.unlabeled_ids = []
        seen: set[str] = set()
        for number, record in _json_records(self.path):
            premise = require_string(self.path, number, record, "premise")
            hypothesis = require_string(self.path, number, record, "hypothesis")
            pair_id = _plain_id(self.path, number, record)
            if pair_id in seen:
                raise DataError(self.path, number, f"duplicate pair id {pair_id!r}")
            seen.add(pair_id)
            label = _plain_label(self.path, number, record)
            if label is None:
                self.stats.skip(SKIP_NO_LABEL)
                self.unlabeled_ids.append(pair_id)
                continue
            if self.labels is not None and label not in self.labels:
                raise DataError(
                    self.path,
                    number,
                    f"label {label!r} is not in the label set {list(self.labels)} (read from the "
                    "training file)",
                )
            self.stats.examples += 1
            yield SnliExample(
                pair_id, premise, hypothesis, label, tokenize(premise), tokenize(hypothesis), number
            )


def _plain_id(path: Path, number: int, record: dict[str, object]) -> str:
    for key in ("pairID", "id"):
        value = record.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise DataError(path, number, f"field {key!r} must be a string or an integer")
        return str(value)
    return f"{path.stem}:{number}"


def _plain_label(path: Path, number: int, record: dict[str, object]) -> str | None:
    if "label" not in record:
        raise DataError(path, number, "missing field 'label'")
    value = record["label"]
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise DataError(
            path, number, f"field 'label' must be a string or an integer, got {value!r}"
        )
    label = str(value)
    return None if label in NO_LABEL_VALUES else label


PairReader = SnliReader | PlainPairReader


def pair_reader(path: str | Path, labels: Sequence[str] | None = None) -> PairReader:
    """The reader for ``path``: official SNLI/MultiNLI jsonl (records with ``gold_label``) or
    plain ``{"premise", "hypothesis", "label"}`` jsonl, decided by the first record.

    ``labels`` applies to plain files (the official reader has the three SNLI labels).

    Raises:
        DataError: the file is missing or empty, its first record is not a JSON object, or it has
            neither ``gold_label`` nor ``premise``.
    """
    path = Path(path)
    number, record = next(_json_records(path))  # raises on a file without JSON lines
    if "gold_label" in record:
        return SnliReader(path)
    if "premise" in record:
        return PlainPairReader(path, labels)
    raise DataError(
        path,
        number,
        'neither an official SNLI record ("gold_label", "sentence1", "sentence2", "pairID") '
        'nor a plain one ("premise", "hypothesis", "label")',
    )


def split_file(data_dir: str | Path, split: str) -> Path | None:
    """The file of ``split`` in ``data_dir``: ``snli_1.0_<split>.jsonl``, else ``<split>.jsonl``
    (``None`` when neither exists)."""
    for name in SPLIT_NAMES[split]:
        path = Path(data_dir) / name
        if path.is_file():
            return path
    return None


class SnliNotAvailable(FileNotFoundError):
    """A ``--data`` folder lacks the train or dev file, or (``--data hf:NAME``) the Hugging Face
    Hub could not be reached."""


def missing_files_error(folder: str | Path, missing: Sequence[str]) -> SnliNotAvailable:
    """The one-line error for a data folder without files for the splits ``missing``."""
    where = str(folder) if Path(folder).is_dir() else f"{folder} (no such folder)"
    looked = " and no ".join(" or ".join(SPLIT_NAMES[split]) for split in missing)
    return SnliNotAvailable(
        f"{where}: no {looked}; an SNLI data folder holds snli_1.0_train.jsonl, "
        "snli_1.0_dev.jsonl (and optionally snli_1.0_test.jsonl), or train.jsonl / dev.jsonl / "
        'test.jsonl with {"premise", "hypothesis", "label"} per line. A data folder is never '
        f"completed from the Hugging Face Hub: pass --data hf:{HF_DATASET} to read it from there"
    )


def load_hf(
    split: str, *, cache_dir: str | Path | None = None, name: str = HF_DATASET
) -> tuple[list[SnliExample], int]:
    """A split of the Hugging Face dataset ``name`` (``stanfordnlp/snli``: columns ``premise``,
    ``hypothesis``, ``label`` 0–2 or -1) from the Hub (or a local HF cache).

    Rows with label -1 (no gold label) are skipped and their number returned. Pair ids are
    ``"<hf split>-<row>"``; tokens come from :func:`tokenize` (the Hub copy has no parses).

    Returns:
        ``(examples, skipped)``.

    Raises:
        SnliNotAvailable: offline (the message says which files to supply instead).
    """
    ds = require_datasets()
    hf_split = HF_SPLITS[split]
    try:
        rows = ds.load_dataset(
            name, split=hf_split, cache_dir=None if cache_dir is None else str(cache_dir)
        )
    except (OSError, ConnectionError, TimeoutError) as exc:  # offline, DNS, missing cache entry
        raise SnliNotAvailable(
            f"SNLI {split!r} split is not available: the Hugging Face Hub could not be "
            f"reached for {name!r} ({type(exc).__name__}: {exc}). Supply the files with "
            "--data DIR: a folder holding snli_1.0_train.jsonl, snli_1.0_dev.jsonl and "
            "snli_1.0_test.jsonl (from https://nlp.stanford.edu/projects/snli/snli_1.0.zip), or "
            'train.jsonl / dev.jsonl / test.jsonl with {"premise", "hypothesis", "label"} '
            "per line; or fill a local Hugging Face cache while online and rerun with "
            "HF_DATASETS_OFFLINE=1."
        ) from exc
    examples: list[SnliExample] = []
    skipped = 0
    for row, item in enumerate(rows):
        if item["label"] not in range(len(LABELS)):  # -1: no gold label
            skipped += 1
            continue
        premise, hypothesis = item["premise"], item["hypothesis"]
        examples.append(
            SnliExample(
                f"{hf_split}-{row}",
                premise,
                hypothesis,
                LABELS[item["label"]],  # ClassLabel order: entailment, neutral, contradiction
                tokenize(premise),
                tokenize(hypothesis),
            )
        )
    return examples, skipped


# ------------------------------------------------------------------------------ splits + policy
SKIP_EMPTY = "empty premise or hypothesis"
SKIP_LONG = "a side longer than max_tokens"
#: Split → examples.
Splits = dict[str, list[SnliExample]]


def pair_tokens(example: SnliExample) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The PTB tokens of the binary parses when present, else :func:`tokenize` of the sentences
    (plain and Hugging Face examples carry tokens already)."""
    premise = example.premise_tokens
    hypothesis = example.hypothesis_tokens
    return (
        premise if premise is not None else tokenize(example.premise),
        hypothesis if hypothesis is not None else tokenize(example.hypothesis),
    )


def _resolve(name: str, data_dir: str | None) -> Path:
    path = Path(name)
    if not path.is_absolute() and data_dir is not None and not path.exists():
        path = Path(data_dir) / name
    if not path.is_file():
        raise DataError(path, None, "no such file")
    return path


def _split_files(
    config: SnliConfig, data_dir: str | None, demo: Callable[[], Path]
) -> dict[str, Path]:
    """Split → file: the config's explicit files, else the split files of the folder (``--data
    DIR``, or the DEMO set when no file is given either)."""
    explicit = {"train": config.train_file, "dev": config.dev_file, "test": config.test_file}
    folder = Path(data_dir) if data_dir else (None if config.train_file else demo())
    files: dict[str, Path] = {}
    for split, name in explicit.items():
        if name is not None:
            files[split] = _resolve(name, data_dir)
        elif folder is not None and (found := split_file(folder, split)) is not None:
            files[split] = found
    return files


def _load_hub(
    stats: dict[str, ReadStats] | None, name: str = HF_DATASET
) -> tuple[Splits, tuple[str, ...], dict[str, str]]:
    """Every split of the Hugging Face dataset ``name`` (pairs without a gold label skipped and
    counted)."""
    splits: Splits = {}
    for split in ("train", "dev", "test"):
        splits[split], unlabeled = load_hf(split, name=name)
        if stats is not None:
            hub = ReadStats(len(splits[split]), source=f"hf:{name}[{split}]")
            hub.skipped[SKIP_NO_GOLD] += unlabeled
            stats[split] = hub
        logger.info("%s %s: %d pairs without a gold label skipped", name, split, unlabeled)
    return splits, LABELS, {s: f"hf:{name}" for s in splits}


def folder_files(config: SnliConfig, folder: str | Path) -> list[Path]:
    """The files a run of ``config`` on the data folder ``folder`` reads, found as
    :func:`load_splits` finds them (its explicit files, resolved in the folder where relative,
    else the folder's split files), without reading any.

    Raises:
        SnliNotAvailable: no train or no dev file (naming the files looked for).
        DataError: an explicit file that does not exist.
    """
    files = _split_files(config, str(folder), lambda: Path(folder))
    missing = [s for s in ("train", "dev") if s not in files]
    if missing:
        raise missing_files_error(folder, missing)
    return list(files.values())


def _first(
    examples: Iterable[SnliExample], limit: int | None, max_tokens: int | None = None
) -> list[SnliExample]:
    """``examples`` up to the ``limit``-th one counted, each counted unless ``max_tokens`` is
    given and :func:`trains` drops it (all of them when ``limit`` is ``None``); the reader stops
    there, reading no further line."""
    out: list[SnliExample] = []
    counted = 0
    for example in examples:
        out.append(example)
        counted += max_tokens is None or trains(example, max_tokens)
        if counted == limit:
            break
    return out


def trains(example: SnliExample, max_tokens: int) -> bool:
    """Whether :func:`apply_policy` keeps a training pair: both sides hold a token and neither
    holds more than ``max_tokens``."""
    premise, hypothesis = pair_tokens(example)
    return bool(premise and hypothesis) and max(len(premise), len(hypothesis)) <= max_tokens


def _load_files(
    files: Mapping[str, Path],
    stats: dict[str, ReadStats] | None,
    limit: int | None = None,
    max_tokens: int | None = None,
) -> tuple[Splits, tuple[str, ...], dict[str, str]]:
    """The splits of ``files``; the label set is SNLI's or the training file's.

    With ``limit``, official SNLI files are read only as far as their first ``limit`` pairs
    (training pairs counted only when :func:`trains` keeps them under ``max_tokens``); plain
    files are read whole: their label set is the whole training file's.
    """
    train_reader = pair_reader(files["train"])
    official = isinstance(train_reader, SnliReader)
    first = limit if official else None
    train = _first(train_reader, first, max_tokens)
    readers = {"train": train_reader}
    labels = LABELS if official else tuple(dict.fromkeys(ex.label for ex in train))
    splits = {"train": train}
    for split in ("dev", "test"):
        if split in files:
            readers[split] = pair_reader(files[split], labels)
            splits[split] = _first(readers[split], first)
    if stats is not None:
        for split, reader in readers.items():
            stats[split] = reader.stats
            stats[split].source = str(files[split])
    for split, path in files.items():
        logger.info("%s: %s, %d labelled pairs", split, path, len(splits[split]))
    return splits, labels, {s: str(p) for s, p in files.items()}


def load_splits(
    config: SnliConfig,
    data_dir: str | None,
    demo: Callable[[], Path],
    stats: dict[str, ReadStats] | None = None,
    limit: int | None = None,
) -> tuple[Splits, tuple[str, ...], dict[str, str]]:
    """Read train, dev and (when present) test; see ``tasks/snli/task.py`` for the sources.

    Args:
        config: the configuration (explicit files).
        data_dir: ``--data DIR``, ``hf:NAME`` (a Hugging Face dataset, e.g.
            ``hf:stanfordnlp/snli``: the only way to the Hub), or None.
        stats: when given, filled with each split's read statistics (pairs read, pairs without
            a gold label skipped, the source).
        demo: builds the DEMO set and returns its folder (read when neither ``data_dir`` nor
            ``train_file`` is given).
        limit: official SNLI files are read only as far as the first ``limit`` pairs of each
            split that :func:`apply_policy` keeps (the same pairs a full read gives first);
            plain files and the Hub are read whole.

    Returns:
        ``(splits, labels, sources)``: the labelled examples, the label set (the three SNLI
        labels for official files; plain files: the training file's labels in order of first
        appearance) and where each split came from.

    Raises:
        DataError: a file is missing or malformed, or a dev/test label is outside the label set.
        SnliNotAvailable: the data folder lacks the train or dev file (never completed from the
            Hub), or ``hf:NAME`` and the Hub cannot be reached.
        ValueError: explicit files with ``hf:NAME``, or only one of them without ``--data``.
    """
    if data_dir is not None and data_dir.startswith("hf:"):
        if config.train_file or config.dev_file or config.test_file:
            raise ValueError(
                f"--data {data_dir} reads every split from the Hugging Face Hub; it cannot be "
                "combined with train_file, dev_file or test_file"
            )
        return _load_hub(stats, data_dir[3:])
    files = _split_files(config, data_dir, demo)
    if "train" in files and "dev" in files:
        return _load_files(files, stats, limit, config.max_tokens)
    if data_dir is None:
        raise ValueError("train_file and dev_file must both be given (or --data DIR)")
    raise missing_files_error(data_dir, [s for s in ("train", "dev") if s not in files])


def apply_policy(
    splits: Splits, config: SnliConfig, sources: Mapping[str, str]
) -> tuple[Splits, Counter[str], Counter[str]]:
    """The model's policy for empty and over-long pairs (``tasks/snli/task.py``).

    Returns:
        ``(splits, skipped, truncated)``: training pairs left out by reason, dev/test pairs cut
        by split.

    Raises:
        DataError: an empty premise or hypothesis in dev or test (file and line).
    """
    skipped: Counter[str] = Counter()
    truncated: Counter[str] = Counter()
    out: Splits = {}
    for split, examples in splits.items():
        kept = []
        for ex in examples:
            premise, hypothesis = pair_tokens(ex)
            empty = not premise or not hypothesis
            long = max(len(premise), len(hypothesis)) > config.max_tokens
            if split == "train" and (empty or long):
                skipped[SKIP_EMPTY if empty else SKIP_LONG] += 1
                continue
            if empty:
                side = "premise" if not premise else "hypothesis"
                raise DataError(
                    sources.get(split, split), ex.line, f"pair {ex.pair_id!r}: empty {side}"
                )
            truncated[split] += long
            kept.append(ex)
        out[split] = kept
    for reason, n in skipped.items():
        logger.warning("train: %d pairs skipped (%s)", n, reason)
    for split, n in truncated.items():
        if n:
            logger.warning("%s: %d pairs cut to max_tokens=%d", split, n, config.max_tokens)
    return out, skipped, truncated


def count_policy(stats: dict[str, ReadStats], kept: int, skipped: Counter[str]) -> None:
    """Add the policy's training skips to the reader's statistics (``max_tokens`` is a
    configured filter, so its skips are exempt)."""
    if "train" not in stats:
        return
    stats["train"].examples = kept
    for reason, n in skipped.items():
        stats["train"].skipped[reason] += n
        if reason == SKIP_LONG:
            stats["train"].exempt.add(reason)
