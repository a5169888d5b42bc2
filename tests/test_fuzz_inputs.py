"""Generated hostile inputs are refused cleanly, never with a crash or a side effect.

The suite keeps four guarantees, each over inputs that Hypothesis generates:

* options: a valid tiny ``options.json`` with one or two fields replaced by a huge, negative or
  zero int, a NaN or infinite float, a string, ``None``, a list or a dict (or removed) either
  reads as valid :class:`~bilm.options.BiLMOptions` or is refused with a one-line
  :class:`~bilm.options.OptionsError` naming its source, by ``from_dict`` and ``from_json``
  alike; and :func:`bilm.weights.build_bilm` constructs a model exactly when
  :func:`bilm.checks.check_options` accepts the options, never after a refusal;
* SST trees: :func:`tasks.sst5.data.parse_tree` returns a well-formed tree (every phrase within
  the tokens, the root spanning them all, labels 0-4) or raises a ``ValueError`` that gives the
  column or names the brackets; a valid generated tree always parses to the leaves written
  and to its nodes' spans in pre-order;
* column files: the CoNLL-2003 reader and :func:`tasks.ner.data.read_columns` yield sentences
  whose columns have equal lengths, or raise :class:`~tasks.common.io.DataError` naming the
  file and a line;
* results store: the read methods of :class:`~experiments.run.store.ResultsStore` given any
  task name or run id answer "not stored" or raise ``ValueError``; they never return a path
  outside the store, never list a folder outside it and never write anything.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from bilm import checks, weights
from bilm.options import BiLMOptions, CharCNNOptions, LSTMOptions, OptionsError
from experiments.run.store import ResultsStore
from tasks.common.io import DataError
from tasks.ner.data import Conll2003Reader, read_columns
from tasks.sst5.data import NUM_LABELS, parse_tree
from tests.bilm.helpers import tiny_options

FUZZ = settings(max_examples=50, deadline=None, derandomize=True)


def _one_line(message: str) -> None:
    assert message and "\n" not in message, repr(message)


# ------------------------------------------------------------------------------------ options
_REMOVE = object()  # a mutation that deletes the field

#: Every field of the options.json layout (``BiLMOptions.to_dict``), as a path of keys.
_OPTION_FIELDS: list[tuple[Any, ...]] = [
    ("lstm",),
    ("lstm", "dim"),
    ("lstm", "projection_dim"),
    ("lstm", "n_layers"),
    ("lstm", "cell_clip"),
    ("lstm", "proj_clip"),
    ("lstm", "use_skip_connections"),
    ("char_cnn",),
    ("char_cnn", "activation"),
    ("char_cnn", "embedding"),
    ("char_cnn", "embedding", "dim"),
    ("char_cnn", "filters"),
    ("char_cnn", "filters", 0),
    ("char_cnn", "filters", 1, 0),
    ("char_cnn", "filters", 2, 1),
    ("char_cnn", "n_highway"),
    ("char_cnn", "n_characters"),
    ("char_cnn", "max_characters_per_token"),
]

_HOSTILE_INTS = st.one_of(
    st.integers(),
    st.sampled_from([0, -1, 1, 2, 3, 261, 262, 10**4, 2**31, 2**63, -(2**63), 10**100]),
)
_HOSTILE_VALUES = st.one_of(
    _HOSTILE_INTS,
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), -0.0, 1e308]),
    st.text(max_size=6),
    st.sampled_from(["12", "relu", "tanh", "nan", "inf", "-1", ""]),
    st.none(),
    st.booleans(),
    st.lists(st.one_of(_HOSTILE_INTS, st.text(max_size=2)), max_size=3),
    st.dictionaries(st.sampled_from(["dim", "x"]), _HOSTILE_INTS, max_size=2),
    st.just(_REMOVE),
)
_MUTATIONS = st.lists(st.tuples(st.sampled_from(_OPTION_FIELDS), _HOSTILE_VALUES), max_size=2)


def _mutated(base: dict[str, Any], mutations: list[tuple[tuple[Any, ...], Any]]) -> dict[str, Any]:
    """``base`` with each field replaced (or removed); ``assume`` away a path that an earlier
    mutation already replaced by something without that field."""
    data = copy.deepcopy(base)
    for path, value in mutations:
        parent: Any = data
        for key in path[:-1]:
            try:
                parent = parent[key]
            except (KeyError, IndexError, TypeError):
                assume(False)
        if not isinstance(parent, (dict, list)) or (
            isinstance(parent, list) and not path[-1] < len(parent)
        ):
            assume(False)
        if value is _REMOVE:
            del parent[path[-1]]
        else:
            parent[path[-1]] = copy.deepcopy(value)
    return data


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the files the properties write (module-scoped: Hypothesis reuses it)."""
    return tmp_path_factory.mktemp("fuzz")


def _read_options(read: Any, source: str) -> BiLMOptions | OptionsError:
    """What ``read()`` gives: the options, or the OptionsError it raised (checked one line
    naming ``source``). Any other exception escapes and fails the property."""
    try:
        options = read()
    except OptionsError as error:
        _one_line(str(error))
        assert str(error).startswith(source), str(error)
        return error
    assert isinstance(options, BiLMOptions)
    return options


@FUZZ
@given(mutations=_MUTATIONS)
def test_options_are_read_or_refused_in_one_line(
    fuzz_dir: Path, mutations: list[tuple[tuple[Any, ...], Any]]
) -> None:
    data = _mutated(tiny_options().to_dict(), mutations)
    from_dict = _read_options(lambda: BiLMOptions.from_dict(data, source="fuzzed"), "fuzzed")
    path = fuzz_dir / "options.json"
    path.write_text(json.dumps(data), encoding="utf-8")  # NaN/Infinity: what json.loads reads
    from_json = _read_options(lambda: BiLMOptions.from_json(path), str(path))
    # the file reads as the dict does (a str key stays a str, NaN stays NaN)
    assert type(from_dict) is type(from_json)
    if isinstance(from_dict, BiLMOptions):
        assert from_dict.to_dict() == from_json.to_dict()  # type: ignore[union-attr]
        from_dict.validate()  # accepted options are within the limits
    _gate_builds_only_what_it_accepts(from_dict if isinstance(from_dict, BiLMOptions) else None)


def _gate_builds_only_what_it_accepts(options: BiLMOptions | None) -> None:
    """``build_bilm`` constructs the BiLM exactly when ``check_options`` accepts ``options``
    (``None``: refused before; nothing may be built)."""
    built: list[BiLMOptions] = []

    def record(opts: BiLMOptions, **_: Any) -> object:
        if options is None:
            raise AssertionError("a BiLM was built from refused options")
        built.append(opts)
        return object()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(weights, "BiLM", record)
        if options is None:
            return
        try:
            checks.check_options(options, "fuzzed")
        except OptionsError as error:  # ModelTooLargeError included
            _one_line(str(error))
            with pytest.raises(OptionsError):
                weights.build_bilm(options, source="fuzzed")
            assert not built
        else:
            weights.build_bilm(options, source="fuzzed")
            assert built == [options]


@FUZZ
@given(
    dim=_HOSTILE_INTS,
    projection_dim=_HOSTILE_INTS,
    n_layers=_HOSTILE_INTS,
    n_highway=_HOSTILE_INTS,
    embedding_dim=_HOSTILE_INTS,
    max_characters=_HOSTILE_INTS,
    filters=st.lists(st.tuples(_HOSTILE_INTS, _HOSTILE_INTS), max_size=4),
)
def test_build_bilm_refuses_out_of_bounds_options_before_building(
    dim: int,
    projection_dim: int,
    n_layers: int,
    n_highway: int,
    embedding_dim: int,
    max_characters: int,
    filters: list[tuple[int, int]],
) -> None:
    """Options made directly (no file): the gate alone stands between them and a model."""
    options = BiLMOptions(
        lstm=LSTMOptions(dim=dim, projection_dim=projection_dim, n_layers=n_layers),
        char_cnn=CharCNNOptions(
            embedding_dim=embedding_dim,
            filters=tuple(filters),
            n_highway=n_highway,
            max_characters_per_token=max_characters,
        ),
    )
    try:
        options.validate("fuzzed")
    except OptionsError as error:
        _one_line(str(error))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(weights, "BiLM", _refuse_to_build)
            with pytest.raises(OptionsError):
                weights.build_bilm(options, source="fuzzed")
        return
    _gate_builds_only_what_it_accepts(options)


def _refuse_to_build(*_: Any, **__: Any) -> None:
    raise AssertionError("a BiLM was built from refused options")


# ------------------------------------------------------------------------------------ SST
_SST_ALPHABET = "( )0123456789ab\u00a0\t\\/"
_WORDS = st.text(alphabet="0123456789ab\\/", min_size=1, max_size=3)
_SPACE = st.text(alphabet=" \u00a0\t", min_size=1, max_size=2)


@st.composite
def _trees(draw: st.DrawFn, depth: int = 0) -> tuple[str, list[str], list[tuple[int, int, int]]]:
    """A valid labelled tree: its text, its leaves, and its nodes' (start, end, label) in
    pre-order, spans counted from 0 within this tree."""
    label = draw(st.integers(0, NUM_LABELS - 1))
    space = draw(_SPACE)
    if depth >= 3 or draw(st.booleans()):
        words = draw(st.lists(_WORDS, min_size=1, max_size=3))
        text = f"({label}{space}{draw(_SPACE).join(words)})"
        return text, words, [(0, len(words), label)]
    children = draw(st.lists(_trees(depth + 1), min_size=1, max_size=3))
    leaves: list[str] = []
    nodes = [(0, 0, label)]
    for _, child_leaves, child_nodes in children:
        nodes += [(s + len(leaves), e + len(leaves), lab) for s, e, lab in child_nodes]
        leaves += child_leaves
    nodes[0] = (0, len(leaves), label)
    inner = draw(st.sampled_from(["", " ", "\u00a0"])).join(text for text, _, _ in children)
    return f"({label}{space}{inner})", leaves, nodes


def _parsed_or_refused(text: str) -> None:
    """``parse_tree(text)`` is a well-formed tree or a ValueError locating the problem."""
    try:
        tree = parse_tree(text)
    except ValueError as error:
        message = str(error)
        _one_line(message)
        assert (
            message.startswith("column ")
            or "brackets" in message
            or message == "no tree on the line"
        ), message
        return
    assert tree.phrases, text
    assert (tree.phrases[0].start, tree.phrases[0].end) == (0, len(tree.tokens)), tree
    for phrase in tree.phrases:
        assert 0 <= phrase.start < phrase.end <= len(tree.tokens), (text, phrase)
        assert 0 <= phrase.label < NUM_LABELS, (text, phrase)
    assert all(token and not any(c in token for c in "() \u00a0\t") for token in tree.tokens)


@FUZZ
@given(text=st.text(alphabet=_SST_ALPHABET, max_size=40))
def test_sst_text_parses_or_is_refused_with_a_column(text: str) -> None:
    _parsed_or_refused(text)


@FUZZ
@given(
    tree=_trees(),
    edit=st.tuples(st.integers(0, 200), st.integers(0, 2)),
    inserted=st.text(alphabet=_SST_ALPHABET, max_size=2),
)
def test_sst_valid_trees_parse_and_edited_ones_are_refused_cleanly(
    tree: tuple[str, list[str], list[tuple[int, int, int]]],
    edit: tuple[int, int],
    inserted: str,
) -> None:
    text, leaves, nodes = tree
    parsed = parse_tree(text)
    assert list(parsed.tokens) == leaves
    assert [(p.start, p.end, p.label) for p in parsed.phrases] == nodes
    at, removed = edit[0] % (len(text) + 1), edit[1]
    _parsed_or_refused(text[:at] + inserted + text[at + removed :])


# ------------------------------------------------------------------------------------ columns
_FIELDS = st.one_of(
    st.sampled_from(
        ["O", "B-PER", "I-LOC", "B-", "I-", "X-PER", "B-A-B", "NN", "-X-", "-DOCSTART-", "é"]
    ),
    st.sampled_from(["New\u00a0York", "\u00a0", "a\u2028b", "\ufeff"]),
    st.text(alphabet="abO-BI.", min_size=1, max_size=4),
)
_LINES = st.one_of(
    st.just(""),
    st.just("-DOCSTART- -X- -X- O"),
    st.tuples(
        st.lists(_FIELDS, min_size=1, max_size=5), st.sampled_from([" ", "\t", "  ", " \t"])
    ).map(lambda pair: pair[1].join(pair[0])),
    st.sampled_from(["w NN B-NP O", "w NN B-NP B-PER", "w\tNN\tB-NP\tI-LOC\t", "w\t\tx\tO"]),
)
_FILES = st.tuples(
    st.lists(_LINES, max_size=8),
    st.sampled_from(["\n", "\r\n"]),
    st.sampled_from([b"", b"\xef\xbb\xbf", b"\xff"]),  # nothing, a BOM, invalid UTF-8
    st.booleans(),  # whether the file ends with a newline
)


def _write(folder: Path, name: str, file: tuple[list[str], str, bytes, bool]) -> tuple[Path, int]:
    """Write the generated file; returns its path and its number of lines."""
    lines, newline, prefix, final = file
    body = newline.join(lines) + (newline if final and lines else "")
    path = folder / name
    path.write_bytes(prefix + body.encode("utf-8"))
    return path, max(len(lines), 1)


def _refusal_names_file_and_line(error: DataError, path: Path, n_lines: int) -> None:
    _one_line(str(error))
    assert error.path == str(path)
    if error.line is None:  # a whole-file problem: only the file with no line at all
        assert path.stat().st_size == 0 and error.reason == "empty file", error
        assert str(error).startswith(f"{path}: "), error
    else:
        assert 1 <= error.line <= n_lines, (error, n_lines)
        assert str(error).startswith(f"{path}:{error.line}: "), error


@FUZZ
@given(file=_FILES)
def test_conll2003_reader_yields_aligned_sentences_or_locates_the_error(
    fuzz_dir: Path, file: tuple[list[str], str, bytes, bool]
) -> None:
    path, n_lines = _write(fuzz_dir, "eng.train", file)
    try:
        examples = list(Conll2003Reader(path))
    except DataError as error:
        _refusal_names_file_and_line(error, path, n_lines)
        return
    for sentence in examples:
        assert sentence.tokens
        columns = (sentence.pos_tags, sentence.chunk_tags, sentence.ner_tags)
        assert all(len(column) == len(sentence.tokens) for column in columns), sentence


@FUZZ
@given(
    file=_FILES,
    suffix=st.sampled_from([".txt", ".tsv"]),
    tag_column=st.sampled_from([-1, -2, 0, 1, 3, 7, -9]),
)
def test_read_columns_yields_aligned_sentences_or_locates_the_error(
    fuzz_dir: Path, file: tuple[list[str], str, bytes, bool], suffix: str, tag_column: int
) -> None:
    path, n_lines = _write(fuzz_dir, f"columns{suffix}", file)
    try:
        sentences = list(read_columns(path, tag_column))
    except DataError as error:
        _refusal_names_file_and_line(error, path, n_lines)
        return
    for sentence in sentences:
        assert sentence.tokens
        assert len(sentence.tokens) == len(sentence.tags)
        assert 1 <= sentence.line <= n_lines


# ------------------------------------------------------------------------------------ store
_NAMES = st.one_of(
    st.lists(st.sampled_from(["..", ".", "", "outside", "snli", "0123456789ab"]), max_size=4).map(
        "/".join
    ),
    st.text(max_size=12),
    st.text(alphabet="./\\ab0", max_size=8),
    st.from_regex(r"[0-9a-f]{12}", fullmatch=True),
    st.sampled_from(
        [
            "",
            ".",
            "..",
            "/",
            "../outside",
            "snli/..",
            "snli/../..",
            "/etc",
            "..\\outside",
            "\u2215",
            "\x00",
            "a" * 300,
            "outside",
            "snli",
            "0123456789ab",
            "../0123456789ab",
            "\u00e9t\u00e9",
        ]
    ),
)


def _tree(folder: Path) -> set[str]:
    """Every path below ``folder`` (folders and files), relative."""
    found = set()
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(parent, name), folder))
    return found


@pytest.fixture(scope="module")
def store_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``<home>/store`` (an empty task folder ``snli`` only) beside ``<home>/outside``, which
    holds what a run folder looks like: a read that leaves the store would find it."""
    home = tmp_path_factory.mktemp("store-home")
    (home / "store" / "snli").mkdir(parents=True)
    (home / "outside" / "0123456789ab").mkdir(parents=True)
    (home / "outside" / "0123456789ab" / "result.json").write_text("{}", encoding="utf-8")
    return home


@FUZZ
@given(task=_NAMES, run_id=_NAMES)
@example(task="../outside", run_id="../0123456789ab")  # the folder a leaving read would list
def test_store_reads_answer_not_stored_or_refuse(store_home: Path, task: str, run_id: str) -> None:
    before = _tree(store_home)
    store = ResultsStore(store_home / "store")
    reads = {
        "has": lambda: store.has(run_id),
        "path_of": lambda: store.path_of(run_id),
        "get": lambda: store.get(run_id),
        "identity_of": lambda: store.identity_of(run_id),
        "superseded": lambda: store.superseded(run_id),
        "run_ids": lambda: store.run_ids(task),
        "records": lambda: store.records(task),
    }
    not_stored: dict[str, Any] = {
        "has": False,
        "path_of": None,
        "identity_of": None,
        "superseded": [],
        "run_ids": [],
        "records": [],
    }
    for name, read in reads.items():
        try:
            answer = read()
        except KeyError:
            assert name == "get", name  # get's "not stored"
        except ValueError as error:  # StoreEscapeError, CorruptRecordError, a bad name
            _one_line(str(error))
        else:
            assert answer == not_stored[name], (name, task, run_id, answer)
    assert _tree(store_home) == before, "a read wrote below the store's parent folder"
