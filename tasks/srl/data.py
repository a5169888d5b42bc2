"""SRL instances from CoNLL-2012 (OntoNotes 5.0): one BIO-tagged instance per predicate.

He et al. (2017), the SRL baseline of Peters et al. (2018) §4, tag every predicate of a sentence
separately: the input is the sentence plus the predicate position, the output one BIO tag per token
(``B-ARG0``, ``I-ARG0``, ``B-V``, ``O`` …; see :mod:`tasks.common.spans`). Continuation
(``C-ARG1``) and reference (``R-ARG0``) arguments keep their labels; the scorer
(:mod:`tasks.srl.metric`) merges ``C-`` pieces as srl-eval.pl does.

Dropped, and counted in :class:`~tasks.common.io.ReadStats`:

* ``no_predicate_sentence``: sentences without predicate columns (allennlp emits an all-``O``
  instance for them; they add nothing to srl-eval counts, but change instance counts).
* ``frame_without_V``: a predicate column without a ``V`` span (no predicate position to give).
* ``nested_argument``: an argument nested inside another of the same frame (BIO cannot encode it;
  the outer one is kept). Gold props written by :mod:`tasks.srl.evaluate` keep it, so scores stay
  honest.
* ``sentence_too_long``: a training sentence over ``max_length`` tokens gives no instance (dev
  and test sentences are never skipped for their length).

Splits (:func:`load_splits`): the CoNLL-2012 split of Pradhan et al. (2013), which He et
al. (2017) and Peters et al. (2018) use, read from the ``train``, ``development`` (or ``dev``)
and test folders of either release layout (the folder given, or any folder below it with those
names):

* ``conll-2012/v4/data/{train,development,test}`` (OntoNotes 5.0 built with the CoNLL-2012
  scripts; ``*_gold_conll`` files such as ``wsj_0001.v4_gold_conll``);
* ``conll-formatted-ontonotes-5.0/data/{train,development,conll-2012-test}``, the release He et
  al. (deep_srl ``scripts/make_conll2012_data.sh``) and allennlp read (``*.gold_conll`` files
  beside ``*.gold_skel`` ones). Its ``test/`` folder is the larger v12 test set, not the
  CoNLL-2012 one (allennlp #4220: 29,669 vs 25,624 instances), so ``conll-2012-test/`` wins
  whenever both are there.

Only the columns SRL uses are checked (:data:`SRL_LAYERS`): a file whose named-entity or
coreference column holds other annotations gives the same instances as with ``*`` and ``-`` there,
and a malformed word index or SRL cell is a :class:`~tasks.common.io.DataError` with file and line.

Only files whose name ends in ``gold_conll`` are read (allennlp's rule), so ``*_auto_conll`` and
``*.gold_skel`` files next to them are never mixed in. Any other folder with ``train`` and
``development`` (or ``dev``) folders of such files is read the same way, e.g. the PropBank
release's WSJ sample; the test folder is optional (the splits then have no ``test``). A missing
train or dev folder is an error naming the folder given (:class:`SrlNotAvailable`): a data folder
never falls back to the Hugging Face Hub. :func:`hf_sentences` reads the Hub's
``conll2012_ontonotesv5`` / ``english_v4`` (the same split) when called explicitly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tasks.common.conll2012 import Layers, Sentence, SrlFrame, read_sentences
from tasks.common.io import DataError, ReadStats, require_datasets
from tasks.common.spans import drop_overlapping, spans_to_tags, tags_to_spans

if TYPE_CHECKING:
    import datasets

__all__ = [
    "GOLD_GLOB",
    "HF_CONFIG",
    "HF_DATASET",
    "LAYOUTS",
    "SPLIT_FOLDERS",
    "SPLIT_FOLDER_NAMES",
    "SRL_LAYERS",
    "SrlExample",
    "SrlInstance",
    "SrlNotAvailable",
    "folder_files",
    "hf_sentences",
    "load_split_sentences",
    "load_splits",
    "read_srl",
    "split_files",
    "split_folder",
    "srl_instances",
    "to_hf_dataset",
]

#: The columns read (:func:`tasks.common.conll2012.read_documents`): word index, words and the
#: predicate-argument columns, checked; the named-entity and coreference columns, which SRL does
#: not use, neither checked nor parsed.
SRL_LAYERS: Layers = "predicates"

#: split → the CoNLL-2012 v4 folder holding it (Pradhan et al. 2013).
SPLIT_FOLDERS = {"train": "train", "dev": "development", "test": "test"}
#: split → the folder names accepted for it, in order of preference.
SPLIT_FOLDER_NAMES: dict[str, tuple[str, ...]] = {
    "train": ("train",),
    "dev": ("development", "dev"),
    "test": ("conll-2012-test", "test"),  # the release's test/ is v12's; see module docstring
}
#: The glob of the files read: allennlp's ``endswith("gold_conll")`` (``*.v4_gold_conll`` of
#: the CoNLL-2012 scripts, ``*.gold_conll`` of ``conll-formatted-ontonotes-5.0``).
GOLD_GLOB = "*gold_conll"
#: The splits a data folder must hold (test is optional).
REQUIRED_SPLITS = ("train", "dev")
#: The folder layouts ``--data DIR`` accepts, in words (for error messages and help).
LAYOUTS = (
    "the conll-2012/v4/data folder (or a folder above it) with train/, development/ and test/ "
    "holding *gold_conll files (OntoNotes 5.0, LDC2013T19, built with the CoNLL-2012 scripts), "
    "the conll-formatted-ontonotes-5.0/data folder (or one above it) with train/, development/ "
    "and conll-2012-test/ (He et al.'s and allennlp's release; its test/ is ignored when "
    "conll-2012-test/ is there), "
    "or any folder with train/ and development/ (or dev/) holding *gold_conll files below "
    "them, test/ optional (e.g. the PropBank release's WSJ sample)"
)
HF_DATASET = "ontonotes/conll2012_ontonotesv5"
HF_CONFIG = "english_v4"
HF_SPLITS = {"train": "train", "dev": "validation", "test": "test"}


class SrlNotAvailable(FileNotFoundError):
    """A required split folder is missing from the data folder, or (:func:`hf_sentences`) the
    Hugging Face Hub could not be reached."""


@dataclass(frozen=True)
class SrlInstance:
    """One predicate of one sentence.

    Attributes:
        sentence_id: 0-based position of the sentence in the read order, predicate-less sentences
            included (unique even when two files share a document id); ties the instance back to the
            sentence for the props writer.
        tokens: the sentence's words.
        predicate_index: token index of the predicate (the ``V`` span start).
        tags: BIO tags, one per token, ``V`` included.
        genre: first path component of the document id.
    """

    sentence_id: int
    tokens: tuple[str, ...]
    predicate_index: int
    tags: tuple[str, ...]
    genre: str


@dataclass(frozen=True)
class SrlExample:
    """One predicate instance and the split it belongs to (sentence ids are per split).

    Attributes:
        instance: the instance (tokens, predicate position, gold IOB2 tags).
        split: ``train``, ``dev`` or ``test``.
    """

    instance: SrlInstance
    split: str

    @property
    def tokens(self) -> tuple[str, ...]:
        return self.instance.tokens

    @property
    def key(self) -> tuple[int, int]:
        """``(sentence_id, predicate_index)``: the key of the predictions."""
        return (self.instance.sentence_id, self.instance.predicate_index)


def srl_instances(
    sentences: Iterable[Sentence], stats: ReadStats | None = None, max_length: int | None = None
) -> Iterator[SrlInstance]:
    """One :class:`SrlInstance` per predicate column with a ``V`` span (see module docstring);
    sentences over ``max_length`` tokens give none (counted once as ``sentence_too_long``)."""
    stats = stats if stats is not None else ReadStats()
    for sentence_id, sentence in enumerate(sentences):
        if not sentence.srl_frames:
            stats.skip("no_predicate_sentence", exempt=True)  # nothing to label
            continue
        if max_length is not None and len(sentence) > max_length:
            stats.skip("sentence_too_long", exempt=True)  # configured filter
            continue
        for frame in sentence.srl_frames:
            if frame.predicate_index is None:
                stats.skip("frame_without_V")
                continue
            arguments, dropped = drop_overlapping(frame.arguments)
            tags = tuple(spans_to_tags(len(sentence), arguments, "IOB2"))
            for _ in range(dropped):
                stats.skip("nested_argument", exempt=True)  # the frame is kept
            stats.examples += 1
            yield SrlInstance(
                sentence_id=sentence_id,
                tokens=sentence.words,
                predicate_index=frame.predicate_index,
                tags=tags,
                genre=sentence.document_id.split("/", 1)[0],
            )


def read_srl(path: str | Path, stats: ReadStats | None = None) -> Iterator[SrlInstance]:
    """Stream SRL instances from a CoNLL-2012 file or directory (``*_conll`` files, recursively).

    Raises:
        DataError: malformed input (file and line given).
    """
    return srl_instances(read_sentences(path, layers=SRL_LAYERS), stats)


def split_folder(data_dir: str | Path, split: str) -> Path | None:
    """The folder holding ``split``: a folder named for it (:data:`SPLIT_FOLDER_NAMES`, in order)
    directly in ``data_dir``, else the one folder of that name below it; None when there is none.

    Raises:
        ValueError: an unknown split.
        DataError: two folders below ``data_dir`` carry the split's name (it would be ambiguous).
    """
    if split not in SPLIT_FOLDER_NAMES:
        raise ValueError(f"unknown split {split!r}; choose {', '.join(SPLIT_FOLDER_NAMES)}")
    root = Path(data_dir)
    if not root.is_dir():
        return None
    names = SPLIT_FOLDER_NAMES[split]
    for name in names:
        if (root / name).is_dir():
            return root / name
    for name in names:
        found = sorted(p for p in root.rglob(name) if p.is_dir())
        if len(found) > 1:
            raise DataError(
                root,
                None,
                f"several {name!r} folders ({', '.join(map(str, found[:3]))}); "
                "pass the folder that holds train/ and development/ itself",
            )
        if found:
            return found[0]
    return None


def split_files(data_dir: str | Path, split: str) -> list[Path] | None:
    """The sorted ``*gold_conll`` files of ``split`` below ``data_dir`` (:func:`split_folder`),
    or None when no folder for the split exists there.

    Raises:
        ValueError: an unknown split.
        DataError: the split folder holds no ``*gold_conll`` file, or the folder is ambiguous.
    """
    folder = split_folder(data_dir, split)
    return None if folder is None else _gold_files(folder)


def _gold_files(folder: Path) -> list[Path]:
    """The :data:`GOLD_GLOB` files below ``folder``, sorted by relative path.

    Raises:
        DataError: there is none.
    """
    files = sorted(
        (p for p in folder.rglob(GOLD_GLOB) if p.is_file()),
        key=lambda p: p.relative_to(folder).as_posix(),
    )
    if not files:
        raise DataError(folder, None, f"split folder holds no {GOLD_GLOB} file")
    return files


def folder_files(data_dir: str | Path) -> list[Path]:
    """Every file :func:`load_splits` reads below ``data_dir``: the ``*gold_conll`` files of
    each split folder there (:func:`split_folder`, :func:`split_files`), found without reading
    any.

    Raises:
        SrlNotAvailable: no train or no dev folder (naming the folder and the layouts).
        DataError: an empty split folder or an ambiguous one.
    """
    files: list[Path] = []
    for split in SPLIT_FOLDER_NAMES:
        found = split_folder(data_dir, split)
        if found is not None:
            files.extend(_gold_files(found))
        elif split in REQUIRED_SPLITS:
            raise _missing_split(data_dir, split)
    return files


def _missing_split(data_dir: str | Path, split: str) -> SrlNotAvailable:
    """The error for a split folder ``data_dir`` lacks: what was looked for, and the layouts."""
    names = " or ".join(f"{name}/" for name in SPLIT_FOLDER_NAMES[split])
    where = str(data_dir) if Path(data_dir).is_dir() else f"{data_dir} (no such folder)"
    return SrlNotAvailable(
        f"CoNLL-2012 SRL {split!r} split not found: no {names} folder in or below {where}. "
        f"Accepted layouts: {LAYOUTS}. A data folder is never completed from the Hugging Face Hub."
    )


def load_split_sentences(data_dir: str | Path, split: str) -> list[Sentence]:
    """Every sentence of one split, in read order (predicate-less sentences included), from the
    split's folder below ``data_dir`` (:func:`split_files`; never from the Hub).

    Raises:
        DataError: a malformed file (file and line given).
        SrlNotAvailable: ``data_dir`` has no folder for the split (naming what was looked for).
    """
    files = split_files(data_dir, split)
    if files is None:
        raise _missing_split(data_dir, split)
    return [sentence for file in files for sentence in read_sentences(file, layers=SRL_LAYERS)]


def hf_sentences(
    split: str, looked: str = "", rows: Iterable[Mapping[str, Any]] | None = None
) -> list[Sentence]:
    """The sentences of one split of ``conll2012_ontonotesv5`` / ``english_v4`` as
    :class:`~tasks.common.conll2012.Sentence` (words and SRL frames; the other columns ``-``).

    Args:
        split: ``train``, ``dev`` or ``test``.
        looked: what was looked for locally (for the error message).
        rows: the dataset's documents (tests); None loads them from the Hub or its cache (only
            when called so: the recipe reads folders and never calls this).

    Raises:
        SrlNotAvailable: the Hub cannot be reached and no local cache holds the data.
    """
    name = f"hf:{HF_DATASET}/{HF_CONFIG}[{HF_SPLITS[split]}]"
    if rows is None:
        ds = require_datasets()
        try:
            rows = ds.load_dataset(HF_DATASET, HF_CONFIG, split=HF_SPLITS[split])
        except Exception as exc:  # offline, DNS, missing cache entry, unsupported script
            raise SrlNotAvailable(
                f"CoNLL-2012 SRL {split!r} split is not available: {looked or 'no --data'}, and "
                f"the Hugging Face dataset {HF_DATASET!r} ({HF_CONFIG}) could not be loaded "
                f"({type(exc).__name__}: {exc}). Supply --data DIR: the conll-2012/v4/data "
                "folder with train/, development/ and test/ holding *gold_conll files (built "
                "from OntoNotes 5.0, LDC2013T19, with the CoNLL-2012 scripts), or fill a local "
                "Hugging Face cache while online and rerun with HF_DATASETS_OFFLINE=1."
            ) from exc
    sentences = []
    for row_number, document in enumerate(rows, start=1):
        for index, sent in enumerate(document["sentences"]):
            words = tuple(sent["words"])
            frames = []
            for frame in sent["srl_frames"]:
                tags = list(frame["frames"])
                if len(tags) != len(words):
                    raise DataError(
                        name,
                        row_number,
                        f"SRL frame of {len(tags)} tags for {len(words)} words (sentence {index})",
                    )
                spans = tuple(sorted(tags_to_spans(tags, "IOB2"), key=lambda s: (s.start, -s.end)))
                predicate = next((s.start for s in spans if s.label == "V"), None)
                frames.append(SrlFrame(predicate, spans))
            dash = ("-",) * len(words)
            sentences.append(
                Sentence(
                    document_id=str(document["document_id"]),
                    part=int(sent.get("part_id", 0) or 0),
                    index=index,
                    start=0,
                    line=row_number,
                    words=words,
                    pos_tags=dash,
                    parse_bits=dash,
                    predicate_lemmas=dash,
                    framesets=dash,
                    word_senses=dash,
                    speakers=dash,
                    named_entities=(),
                    srl_frames=tuple(frames),
                )
            )
    return sentences


def instances_by_split(
    sentences: Mapping[str, Sequence[Sentence]], max_length: int | None
) -> tuple[dict[str, list[SrlInstance]], dict[str, ReadStats]]:
    """Instances and read statistics of each split. Only training sentences over ``max_length``
    are skipped (counted as exempt ``sentence_too_long``): dev and test are never cut for length.
    """
    instances, stats = {}, {}
    for split, split_sentences in sentences.items():
        stats[split] = ReadStats()
        limit = max_length if split == "train" else None
        instances[split] = list(srl_instances(split_sentences, stats[split], limit))
    return instances, stats


def to_hf_dataset(path: str | Path) -> datasets.Dataset:
    """The instances of :func:`read_srl` as an in-memory Hugging Face ``datasets.Dataset``.

    Columns: ``sentence_id``, ``tokens``, ``predicate_index``, ``tags``, ``genre``.
    """
    datasets = require_datasets()
    rows: list[dict[str, Any]] = [
        {
            "sentence_id": instance.sentence_id,
            "tokens": list(instance.tokens),
            "predicate_index": instance.predicate_index,
            "tags": list(instance.tags),
            "genre": instance.genre,
        }
        for instance in read_srl(path)
    ]
    features = datasets.Features(
        {
            "sentence_id": datasets.Value("int64"),
            "tokens": datasets.Sequence(datasets.Value("string")),
            "predicate_index": datasets.Value("int64"),
            "tags": datasets.Sequence(datasets.Value("string")),
            "genre": datasets.Value("string"),
        }
    )
    return datasets.Dataset.from_list(rows, features=features)


def load_splits(
    folder: str | Path, max_length: int | None
) -> tuple[dict[str, list[Sentence]], dict[str, list[SrlInstance]], dict[str, ReadStats]]:
    """Every sentence, the instances and the read statistics of train, dev and test (test only
    when its folder exists), from the split folders below ``folder`` (:func:`split_folder`).

    Each split's statistics name the files read (``source``) and what was found (``variant``:
    the split folders, ``test split absent`` when it is, and the split's files, sentences and
    predicates).

    Args:
        folder: the data folder (see :data:`LAYOUTS`).
        max_length: training sentences over this many tokens give no instance.

    Returns:
        ``(sentences, instances, stats)``, each keyed by split.

    Raises:
        SrlNotAvailable: no train or no dev folder (naming ``folder`` and the layouts).
        DataError: a malformed file, an empty split folder or an ambiguous one.
    """
    folders: dict[str, Path] = {}
    for split in SPLIT_FOLDER_NAMES:
        found = split_folder(folder, split)
        if found is not None:
            folders[split] = found
        elif split in REQUIRED_SPLITS:
            raise _missing_split(folder, split)
    files = {split: _gold_files(path) for split, path in folders.items()}
    sentences = {
        split: [sentence for file in paths for sentence in read_sentences(file, layers=SRL_LAYERS)]
        for split, paths in files.items()
    }
    instances, stats = instances_by_split(sentences, max_length)
    for split, split_stats in stats.items():
        split_stats.source = _source(folders[split], files[split])
        split_stats.variant = _variant(Path(folder), folders, split, files[split], sentences[split])
    return sentences, instances, stats


def _source(folder: Path, files: Sequence[Path]) -> str:
    """The file read, or the folder's ``**/*gold_conll`` when there are several."""
    return str(files[0]) if len(files) == 1 else f"{folder}/**/{GOLD_GLOB}"


def _variant(
    root: Path,
    folders: Mapping[str, Path],
    split: str,
    files: Sequence[Path],
    sentences: Sequence[Sentence],
) -> str:
    """E.g. ``"CoNLL-2012 folders train/, development/, test split absent; train/: 115
    *gold_conll files, 2,458 sentences, 7,631 predicates"``."""

    def name(path: Path) -> str:
        return f"{path.relative_to(root).as_posix()}/"

    found = ", ".join(name(path) for path in folders.values())
    absent = "".join(f", {s} split absent" for s in SPLIT_FOLDER_NAMES if s not in folders)
    predicates = sum(len(sentence.srl_frames) for sentence in sentences)
    return (
        f"CoNLL-2012 folders {found}{absent}; {name(folders[split])}: {len(files):,} "
        f"{GOLD_GLOB} file{'s' if len(files) != 1 else ''}, {len(sentences):,} sentences, "
        f"{predicates:,} predicates"
    )
