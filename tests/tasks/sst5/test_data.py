"""The SST tree parser and reader: subtrees, the 2-class view, located errors and fuzzing."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tasks.common.io import DataError
from tasks.sst5.data import Phrase, SstReader, SstTree, parse_tree, to_binary, to_hf_dataset
from tests.conftest import shared_path
from tests.tasks.helpers import assert_read_error, write_lines

TREE = "(3 (2 It) (4 (2 's) (3 fine)))"


def test_parse_tree() -> None:
    tree = parse_tree(TREE)
    assert tree.tokens == ("It", "'s", "fine") and tree.label == 3
    assert tree.phrases == (
        Phrase(0, 3, 3),
        Phrase(0, 1, 2),
        Phrase(1, 3, 4),
        Phrase(1, 2, 2),
        Phrase(2, 3, 3),
    )
    assert parse_tree("(2 -LRB-)").tokens == ("-LRB-",)  # PTB escapes are kept as written
    deep = "(1 " * 5000 + "x" + ")" * 5000  # no recursion limit
    assert len(parse_tree(deep).phrases) == 5000


def test_leaf_with_several_words_is_one_phrase() -> None:
    """A leaf may hold several words, as NLTK's ``Tree.fromstring`` (allennlp's ``sst_tokens``)
    reads it: one node spanning them, each word a token. The official ``train.txt`` separates
    the words of ``8 1\\/2`` with a no-break space (U+00A0), which Python's ``\\s`` matches."""
    tree = parse_tree("(2 (2 8\u00a01\\/2) (2 .))")
    assert tree.tokens == ("8", "1\\/2", ".")
    assert tree.phrases == (Phrase(0, 3, 2), Phrase(0, 2, 2), Phrase(2, 3, 2))
    tree = parse_tree("(3 (2 It  is) (4 (3 very fine) (2 .)))")
    assert tree.tokens == ("It", "is", "very", "fine", ".")
    assert tree.phrases == (
        Phrase(0, 5, 3),
        Phrase(0, 2, 2),
        Phrase(2, 5, 4),
        Phrase(2, 4, 3),
        Phrase(4, 5, 2),
    )
    assert parse_tree("(1 so\tvery bad)") == SstTree(("so", "very", "bad"), (Phrase(0, 3, 1),))
    words = parse_tree("(2 (2 eight\u00a0half) (2 eight half))").tokens
    assert words[0] is words[2] and words[1] is words[3]  # interned, kept as written


def test_several_words_phrase_is_one_instance(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.txt", ["(2 (2 8\u00a01\\/2) (2 .))"])
    every = list(SstReader(path, subtrees=True))
    assert [(e.tokens, e.label) for e in every] == [
        (("8", "1\\/2", "."), 2),
        (("8", "1\\/2"), 2),
        ((".",), 2),
    ]
    assert every[1].phrases == (Phrase(0, 2, 2),)
    assert [e.tokens for e in SstReader(path, subtrees=True, min_tokens=2)] == [
        ("8", "1\\/2", "."),
        ("8", "1\\/2"),
    ]


@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        ("(3 (2 It) fine)", 11, "both subtrees and a word"),
        ("(3 It (4 fine))", 7, "both a word and subtrees"),
        ("(3 (2 It is) (4 fine) more words)", 23, "both subtrees and a word"),
    ],
)
def test_words_and_subtrees_in_one_node_are_refused(text: str, column: int, message: str) -> None:
    with pytest.raises(ValueError, match=rf"^column {column}: a node has {message}$"):
        parse_tree(text)


@pytest.mark.shared
def test_reader_on_real_format_sample() -> None:
    path = shared_path("fixtures", "formats", "classification", "sst.txt")
    reader = SstReader(path)
    examples = list(reader)
    assert [e.label for e in examples] == [4, 0, 2]
    assert examples[0].tokens == ("The", "actors", "are", "fantastic", ".")
    assert examples[0].phrases[5] == Phrase(2, 4, 4)  # "are fantastic"
    assert reader.stats.examples == 3 and reader.trees == 3
    binary = SstReader(path, granularity="2-class")
    assert [e.label for e in binary] == [1, 0]
    assert binary.stats.skipped == {"neutral": 1}


def test_subtrees_and_min_tokens(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.txt", [TREE, "(1 (2 so) (0 bad))"])
    every = list(SstReader(path, subtrees=True))
    assert len(every) == 5 + 3
    assert every[2].tokens == ("'s", "fine") and every[2].label == 4
    assert every[2].phrases == (Phrase(0, 2, 4), Phrase(0, 1, 2), Phrase(1, 2, 3))
    reader = SstReader(path, subtrees=True, min_tokens=2, granularity="2-class")
    assert [(e.tree_index, e.tokens, e.label) for e in reader] == [
        (0, ("It", "'s", "fine"), 1),
        (0, ("'s", "fine"), 1),
        (1, ("so", "bad"), 0),
    ]
    assert reader.stats.skipped == {"short phrase": 5}
    with pytest.raises(ValueError, match="subtrees"):
        SstReader(path, min_tokens=4)
    dataset = to_hf_dataset(path, granularity="2-class")
    assert dataset.num_rows == 2 and dataset[1]["phrase_labels"] == [1, 2, 0]


def test_to_binary() -> None:
    assert [to_binary(label) for label in range(5)] == [0, 0, None, 1, 1]


CORRUPTIONS = {
    "unclosed bracket": ([TREE, "(3 (2 It) (4 fine)"], 2, "unbalanced"),
    "extra closing bracket": ([TREE, TREE + ")"], 2, "unbalanced"),
    "label outside 0-4": ([TREE, "(5 (2 It) (4 fine))"], 2, "outside 0-4"),
    "non-integer label": (["(3 (2 It) (x fine))"], 1, "not an integer"),
    "missing label": ([TREE, TREE, "(3 (It) (4 fine))"], 3, "label"),
    "empty node": (["(3 (2 It) (4))"], 1, "empty node"),
    "word after subtrees": ([TREE, "(3 (2 It) (4 is) fine)"], 2, "both subtrees and a word"),
    "subtree after a word": (["(3 It (2 is) (4 fine))"], 1, "both a word and subtrees"),
    "word outside brackets": (["It is fine"], 1, "outside brackets"),
    "two trees on a line": ([TREE + " " + TREE], 1, "after the end"),
    "truncated line": ([TREE, TREE[:-7]], 2, "unbalanced"),
    "blank line between trees": ([TREE, "", TREE], 2, "blank line"),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_corruption_raises_located_data_error(tmp_path: Path, name: str) -> None:
    lines, line, reason = CORRUPTIONS[name]
    path = write_lines(tmp_path / "bad.txt", lines)
    assert_read_error(lambda: SstReader(path), line, reason)


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [(b"", None, "empty"), (TREE.encode() + b"\n(2 caf\xe9)\n", 2, "UTF-8")],
)
def test_file_level_corruptions(
    tmp_path: Path, content: bytes, line: int | None, reason: str
) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    assert_read_error(lambda: SstReader(path), line, reason)


def test_trailing_blank_lines_are_allowed(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.txt", [TREE, "", "  "])
    assert len(list(SstReader(path))) == 1


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    data=st.one_of(
        st.binary(max_size=200),
        st.lists(
            st.sampled_from(["(", ")", "(2 ", "(4", "(7 ", "x", " ", "\n", "-1"]), max_size=40
        ).map(lambda parts: "".join(parts).encode()),
    )
)
def test_fuzz_reader_raises_only_data_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.txt"
    path.write_bytes(data)
    try:
        for example in SstReader(path, subtrees=True, granularity="2-class"):
            assert example.label in (0, 1) and example.tokens
    except DataError:
        pass


def test_phrases_share_their_sentences_words(tmp_path: Path) -> None:
    """Training on phrases holds one token tuple per sentence and one string per distinct word:
    a phrase's tokens are a span of its sentence's tuple (a 200,000-line file expands to 1.4 M
    phrases; copying their words took the run's peak from 0.70 to 1.03 GB)."""
    import pickle
    import sys

    from tasks.sst5.data import TextExample, TokenSpan, read_tree_texts

    path = write_lines(
        tmp_path / "train.txt",
        [
            "(3 (2 (2 The) (2 film)) (3 (2 is) (3 (3 (2 quite) (3 good)) (2 .))))",
            "(1 (2 The) (1 (2 film) (1 (1 (2 is) (1 dull)) (2 .))))",
        ],
    )
    examples, _ = read_tree_texts(path, phrases=True, min_tokens=2, max_tokens=100)
    roots = [e for e in examples if e.root]
    assert [e.tokens for e in roots] == [
        ("The", "film", "is", "quite", "good", "."),
        ("The", "film", "is", "dull", "."),
    ]
    phrases = [e for e in examples if not e.root]
    assert all(isinstance(e.tokens, TokenSpan) for e in phrases)
    assert all(isinstance(e.tokens, tuple) for e in roots)
    good = next(e for e in phrases if e.tokens == ("is", "quite", "good", "."))
    assert good.tokens._text is roots[0].tokens  # a span of the sentence, no copy of the words
    assert good == TextExample(good.line, ("is", "quite", "good", "."), good.label, root=False)
    assert (len(good.tokens), good.tokens[1], good.tokens[1:3], list(good.tokens)) == (
        4,
        "quite",
        ("quite", "good"),
        ["is", "quite", "good", "."],
    )
    assert hash(good.tokens) == hash(("is", "quite", "good", "."))
    assert pickle.loads(pickle.dumps(good)) == good
    assert roots[0].tokens[0] is roots[1].tokens[0]  # "The": one string
    assert not hasattr(roots[0], "__dict__") and sys.getsizeof(good.tokens) < 100
