"""``python -m experiments real-data``: the real sets rebuilt from their raw sources.

The converters run on hand-written samples of each raw format (``real_data_samples/``, nothing
of the upstream data) against hand-checked goldens; fetching runs offline (``--from`` folders and
``file://`` "downloads") under a manifest written for the samples. One test (``shared``) converts
the real sources, where a folder of them is given, and compares with ``../shared/data``.
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bilm.pretrained import sha256_of
from experiments.data import real_sets
from experiments.data.fetch import convert, formats, install, manifest, propbank, sources
from experiments.data.fetch import fetch as fetch_sets
from experiments.data.fetch.formats import FormatError
from tests.conftest import SHARED

SAMPLES = Path(__file__).with_name("real_data_samples")
EXPECTED = SAMPLES / "expected"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
LITBANK_TRAIN = [
    "1212_love_and_freindship_brat",
    "121_northanger_abbey_brat",
    "141_mansfield_park_brat",
    "161_sense_and_sensibility_brat",
    "31100_the_watsons_brat",
    "42671_sanditon_brat",
    "9182_volume_the_first_brat",
    "9183_volume_the_second_brat",
]
LITBANK_DEV = ["9184_volume_the_third_brat"]
LITBANK_HELD_BACK = "946_lady_susan_brat"
FOLDERS = {
    "litbank-coref": "real/litbank-coref",
    "litbank-entities": "real/litbank-entities",
    "propbank-srl": "real/propbank-srl",
    "conll2000-chunking": "dev/conll2000",
    "sentence-polarity": "dev/sentence_polarity",
}
SETS = {  # set → converter, repository key → the paths (below the source folder) it reads
    "litbank-coref": ("litbank", {"litbank": "coref/conll"}),
    "litbank-entities": ("litbank", {"litbank": "entities/tsv"}),
    "propbank-srl": (
        "propbank",
        {"propbank-release": "data", "nltk_data": "packages/corpora/treebank.zip"},
    ),
    "conll2000-chunking": ("conll2000", {"nltk_data": "packages/corpora/conll2000.zip"}),
    "sentence-polarity": (
        "sentence-polarity",
        {"nltk_data": "packages/corpora/sentence_polarity.zip"},
    ),
}


def _zip(folder: Path, target: Path) -> None:
    """Zip ``folder``'s tree as nltk_data zips its packages (folder entries included)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            name = path.relative_to(folder).as_posix()
            archive.write(path, name + "/" if path.is_dir() else name)


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    """A ``--from`` folder of the samples: ``<repository key>/<path>``, zips built."""
    folder = tmp_path / "sources"
    shutil.copytree(SAMPLES / "sources", folder)
    for name in ("treebank", "conll2000", "sentence_polarity"):
        _zip(SAMPLES / "zips" / name, folder / "nltk_data/packages/corpora" / f"{name}.zip")
    return folder


def _expected(name: str, work: Path) -> Path:
    """The hand-checked converted set ``name`` (LitBank's and CoNLL-2000's are their sources'
    files, copied into ``work``)."""
    if name in ("propbank-srl", "sentence-polarity"):
        return EXPECTED / {"propbank-srl": "propbank-srl"}.get(name, "sentence_polarity")
    out = work / name
    if out.exists():
        return out
    if name == "conll2000-chunking":
        out.mkdir(parents=True)
        for file in ("train.txt", "test.txt"):
            shutil.copyfile(SAMPLES / "zips/conll2000/conll2000" / file, out / file)
        return out
    kind, suffix = (
        ("coref/conll", ".conll") if name == "litbank-coref" else ("entities/tsv", ".tsv")
    )
    for split, names in (("train", LITBANK_TRAIN), ("dev", LITBANK_DEV)):
        (out / split).mkdir(parents=True)
        for document in names:
            file = f"{document}{suffix}"
            shutil.copyfile(SAMPLES / "sources/litbank" / kind / file, out / split / file)
    return out


def _write_manifest(source: Path, tmp_path: Path, raw: dict[str, str] | None = None) -> Path:
    """A manifest of the samples: their sha256s, and the expected sets' digests."""
    lines = []
    for key, github in (
        ("litbank", "dbamman/litbank"),
        ("propbank-release", "propbank/propbank-release"),
        ("nltk_data", "nltk/nltk_data"),
    ):
        lines += [f"[repositories.{key}]", f'github = "{github}"', f'commit = "{COMMIT}"']
        lines.append('licence = "test"')
        if key == "nltk_data":
            lines.append('installed_prefix = "packages/"')
        if raw is not None:
            lines.append(f'raw = "{raw[key]}"')
    work = tmp_path / "expected"
    for name, (converter, groups) in SETS.items():
        count, digest = install.tree_digest(_expected(name, work))
        lines += [f"[sets.{name}]", f'converter = "{converter}"', 'licence = "test"']
        lines += ['citation = "test"', f"output_files = {count}", f'output_sha256 = "{digest}"']
        for key, below in groups.items():
            lines.append(f'[sets.{name}.files."{key}"]')
            base = source / key
            paths = (
                [below]
                if (base / below).is_file()
                else sorted(
                    p.relative_to(base).as_posix() for p in (base / below).rglob("*") if p.is_file()
                )
            )
            lines += [f'"{p}" = "{sha256_of(base / p)}"' for p in paths]
    written = tmp_path / "sources.toml"
    written.write_text("\n".join(lines) + "\n")
    return written


def _load(path: Path) -> manifest.Manifest:
    return manifest.load_manifest(path, folders=FOLDERS)


def _same_tree(a: Path, b: Path) -> list[str]:
    """Files that differ between two trees, or exist in one only ([] when identical)."""
    left = {p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file()}
    right = {p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()}
    differ = sorted(left ^ right)
    differ += [n for n in sorted(left & right) if not filecmp.cmp(a / n, b / n, shallow=False)]
    return differ


def _by_path(files: dict[manifest.SourceFile, Path]) -> dict[str, Path]:
    """What a converter takes: each source's path in its repository → its local file."""
    return {file.path: local for file, local in files.items()}


def _quiet(_: str) -> None:
    pass


# --------------------------------------------------------------------------- the converters


def _converted(source: Path, tmp_path: Path, name: str, convert_set: Callable[..., Any]) -> Path:
    """The set ``name`` of the manifest at ``source``, gathered and converted into a new folder."""
    entry = _load(_write_manifest(source, tmp_path)).sets[name]
    files = _by_path(sources.gather(entry.files, source=source, cache=tmp_path / "cache"))
    out = tmp_path / "out"
    out.mkdir()
    convert_set(files, out)
    return out


def test_litbank_split_sorts_names_as_strings() -> None:
    names = [*LITBANK_TRAIN, *LITBANK_DEV, LITBANK_HELD_BACK]
    splits = convert.litbank_split(list(reversed(names)))
    assert [n for n, s in splits.items() if s == "dev"] == LITBANK_DEV
    assert [n for n, s in splits.items() if s == "test"] == [LITBANK_HELD_BACK]
    assert [n for n, s in splits.items() if s == "train"] == LITBANK_TRAIN


@pytest.mark.parametrize(
    ("name", "kind"), [("litbank-coref", "conll"), ("litbank-entities", "tsv")]
)
def test_litbank_documents_are_copied_unchanged_into_train_and_dev(
    name: str, kind: str, source: Path, tmp_path: Path
) -> None:
    out = _converted(source, tmp_path, name, convert.convert_litbank)
    assert sorted(p.name for p in (out / "dev").iterdir()) == [f"{LITBANK_DEV[0]}.{kind}"]
    assert len(list((out / "train").iterdir())) == len(LITBANK_TRAIN)
    assert not list(out.rglob(f"{LITBANK_HELD_BACK}*"))
    assert _same_tree(out, _expected(name, tmp_path / "expected")) == []


def test_propbank_matches_the_hand_checked_golden(source: Path, tmp_path: Path) -> None:
    out = _converted(source, tmp_path, "propbank-srl", propbank.convert_propbank)
    assert _same_tree(out, EXPECTED / "propbank-srl") == []


def test_propbank_split_is_80_10_10_in_file_order() -> None:
    for count, sizes in ((144, (115, 14, 15)), (10, (8, 1, 1)), (3, (2, 0, 1))):
        splits = propbank.propbank_split(count)
        assert tuple(splits.count(s) for s in ("train", "development", "test")) == sizes
        assert splits == sorted(splits, key=["train", "development", "test"].index)


@pytest.mark.parametrize(
    ("words", "tags", "expected"),
    [
        (
            ["New", "York-based", "Loews"],
            ["NNP", "NNP", "HYPH", "VBN", "NNP"],
            ["New", "York", "-", "based", "Loews"],
        ),
        (["York-based"], ["NNP", "HYPH", "VBN"], ["York", "-", "based"]),
        (["pre-approved", "loan"], ["JJ", "NN"], ["pre-approved", "loan"]),
        (["2003\\/2007", "3\\/4"], ["CD", "SYM", "CD", "CD"], ["2003", "\\/", "2007", "3\\/4"]),
        (["8.45%"], ["CD", "NN"], ["8.45", "%"]),
        (["-LRB-", "--", "-RRB-"], ["-LRB-", ":", "-RRB-"], ["-LRB-", "--", "-RRB-"]),
        # two splits line up: the earlier separator is split off first
        (["anti-morning-sickness"], ["JJ", "HYPH", "NN"], ["anti", "-", "morning-sickness"]),
        (
            ["savings-and-loan"],
            ["NNS", "HYPH", "CC", "HYPH", "NN"],
            ["savings", "-", "and", "-", "loan"],
        ),
        (["x-y"], ["NN", "NN", "NN"], None),  # a hyphen never sits on another tag
    ],
)
def test_treebank_words_are_split_to_the_ontonotes_tokens(
    words: list[str], tags: list[str], expected: list[str] | None
) -> None:
    assert propbank.split_words(words, tags) == expected


def test_conll2000_files_are_copied_unchanged(source: Path, tmp_path: Path) -> None:
    out = _converted(source, tmp_path, "conll2000-chunking", convert.convert_conll2000)
    assert sorted(p.name for p in out.iterdir()) == ["test.txt", "train.txt"]
    for name in ("train.txt", "test.txt"):
        assert (out / name).read_bytes() == (
            SAMPLES / "zips/conll2000/conll2000" / name
        ).read_bytes()


def test_sentence_polarity_matches_the_hand_checked_golden(source: Path, tmp_path: Path) -> None:
    out = _converted(source, tmp_path, "sentence-polarity", convert.convert_sentence_polarity)
    assert _same_tree(out, EXPECTED / "sentence_polarity") == []


def test_malformed_sources_are_named_with_their_line(tmp_path: Path) -> None:
    conll = tmp_path / "x_brat.conll"
    conll.write_text("#begin document (x); part 0\nx\t0\t0\tword\t_\n\n#end document\n")
    with pytest.raises(FormatError, match=r"x_brat.conll:2: 5 tab-separated fields"):
        convert.check_litbank_conll(conll)
    tsv = tmp_path / "x_brat.tsv"
    tsv.write_text("Emma\tB-PER\tO\t\n\nwalked\tX-PER\t\n")
    with pytest.raises(FormatError, match=r"x_brat.tsv:3: expected a word and BIO tags"):
        convert.check_litbank_tsv(tsv)
    with pytest.raises(FormatError, match=r"a.mrg:3: '\)' closes no bracket"):
        propbank.read_treebank("( (S (NN x) ))\n\n)", "a.mrg")
    with pytest.raises(FormatError, match=r"a.gold_skel:2: expected a skeleton token line"):
        propbank.read_skeleton("d 0 0 [WORD] NN (TOP* - -\nd 0 1 word NN *) - -\n", "a.gold_skel")
    with pytest.raises(FormatError, match=r"a.gold_skel:1: 1 predicates but 0 argument columns"):
        propbank.read_skeleton("d 0 0 [WORD] VB (TOP*) go go.01\n", "a.gold_skel")
    with pytest.raises(FormatError, match=r"p.neg:2: not UTF-8"):
        formats.decode_utf8(b"fine .\nbad \xff .\n", "p.neg")
    skeleton = "d 0 0 [WORD] NN (TOP*) - -\n"
    with pytest.raises(FormatError, match=r"s:1: its 1 tokens do not line up with the 2 words"):
        propbank.convert_document(skeleton, "( (X (NN a) (NN b) ))\n", "s", "t")


# --------------------------------------------------------------------------- fetching


def test_fetch_from_a_folder_installs_every_set_and_is_idempotent(
    source: Path, tmp_path: Path
) -> None:
    loaded = _load(_write_manifest(source, tmp_path))
    root = tmp_path / "root" / "data"
    lines: list[str] = []
    states = fetch_sets(
        loaded, root=root, source=source, cache=tmp_path / "cache", log=lines.append
    )
    assert [s.state for s in states] == ["complete"] * 5
    assert _same_tree(root / "real/propbank-srl", EXPECTED / "propbank-srl") == []
    assert sorted(p.name for p in (root / "dev/conll2000").iterdir()) == ["test.txt", "train.txt"]
    assert not (tmp_path / "cache").exists()  # --from downloads nothing
    assert sum("wrote" in line for line in lines) == 5
    assert not [p for p in root.rglob(".*") if p.name != install.LOCK_NAME]  # no leftovers
    lines.clear()
    fetch_sets(loaded, root=root, source=source, log=lines.append)
    assert all("complete in" in line for line in lines) and len(lines) == 5
    (root / "dev/conll2000/notes.txt").write_text("mine\n")
    with pytest.raises(ValueError, match=r"conll2000 exist\(s\) but not as pinned .*--force"):
        fetch_sets(loaded, ["conll2000-chunking"], root=root, source=source, log=_quiet)
    fetch_sets(loaded, ["conll2000-chunking"], root=root, source=source, force=True, log=_quiet)
    assert not (root / "dev/conll2000/notes.txt").exists()


def test_a_checksum_mismatch_is_refused_naming_the_file(source: Path, tmp_path: Path) -> None:
    loaded = _load(_write_manifest(source, tmp_path))
    changed = source / "nltk_data/packages/corpora/conll2000.zip"
    changed.write_bytes(changed.read_bytes() + b"\0")
    root = tmp_path / "data"
    with pytest.raises(
        sources.ChecksumMismatch, match=rf"{re.escape(str(changed))} .*not the file at"
    ):
        fetch_sets(loaded, ["conll2000-chunking"], root=root, source=source, log=_quiet)
    assert not root.exists()


def test_downloads_are_verified_cached_and_a_failed_url_is_named(
    source: Path, tmp_path: Path
) -> None:
    raw = {key: (source / key).as_uri() for key in ("litbank", "propbank-release", "nltk_data")}
    loaded = _load(_write_manifest(source, tmp_path, raw=raw))
    cache, root = tmp_path / "cache", tmp_path / "data"
    fetch_sets(loaded, ["sentence-polarity"], root=root, cache=cache, log=_quiet)
    cached = cache / "nltk_data/packages/corpora/sentence_polarity.zip"
    assert cached.is_file()
    assert sources.from_folder(cache, loaded.sets["sentence-polarity"].files[0]) == cached
    # offline: the URL that failed, and how to use --from
    (source / "nltk_data/packages/corpora/conll2000.zip").unlink()
    url = f"{raw['nltk_data']}/packages/corpora/conll2000.zip"
    with pytest.raises(
        sources.SourceError, match=rf"could not download {re.escape(url)} .*--from DIR"
    ):
        fetch_sets(loaded, ["conll2000-chunking"], root=root, cache=cache, log=_quiet)
    assert not (root / "dev/conll2000").exists()
    # a server sending other bytes: refused, and nothing is cached
    cached.unlink()
    (source / "nltk_data/packages/corpora/sentence_polarity.zip").write_bytes(b"not it")
    with pytest.raises(sources.ChecksumMismatch, match=r"sentence_polarity.zip .*refusing it"):
        fetch_sets(loaded, ["sentence-polarity"], root=root, cache=cache, force=True, log=_quiet)
    assert not cached.exists()
    assert install.set_state(loaded.sets["sentence-polarity"], root).state == "complete"


def test_an_interrupted_fetch_leaves_no_half_written_set(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = _load(_write_manifest(source, tmp_path))
    root = tmp_path / "data"

    def interrupted(files: object, out: Path) -> None:
        (out / "train").mkdir()
        (out / "train" / "half.conll").write_text("half\n")
        raise KeyboardInterrupt

    monkeypatch.setitem(convert.CONVERTERS, "litbank", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fetch_sets(loaded, ["litbank-coref"], root=root, source=source, log=_quiet)
    assert not root.exists()  # a first fetch that failed leaves not even an empty root
    root.mkdir()
    monkeypatch.undo()
    # a converted set that is not the pinned one is not installed either
    wrong = loaded.sets["litbank-coref"]
    bad = manifest.SetSources(**{**wrong.__dict__, "output_sha256": "0" * 64})
    broken = manifest.Manifest(loaded.path, loaded.repositories, {"litbank-coref": bad})
    with pytest.raises(install.ConversionMismatch, match="not the pinned one"):
        fetch_sets(broken, root=root, source=source, log=_quiet)
    assert [p.name for p in root.iterdir()] == [install.LOCK_NAME]  # no set, no leftovers
    fetch_sets(loaded, ["litbank-coref"], root=root, source=source, log=_quiet)
    assert install.set_state(wrong, root).state == "complete"


def test_a_from_folder_may_be_checkouts_one_repository_or_an_nltk_data_folder(
    tmp_path: Path,
) -> None:
    repo = manifest.Repository("nltk_data", "nltk/nltk_data", COMMIT, "-", "x", "packages/")
    file = manifest.SourceFile(repo, "packages/corpora/treebank.zip", "0" * 64)
    assert sources.local_candidates(tmp_path, file) == [
        tmp_path / "nltk_data/packages/corpora/treebank.zip",
        tmp_path / "packages/corpora/treebank.zip",
        tmp_path / "nltk_data/corpora/treebank.zip",
        tmp_path / "corpora/treebank.zip",
    ]
    with pytest.raises(sources.SourceError, match=r"--from .*: no nltk_data/packages/corpora/"):
        sources.from_folder(tmp_path, file)


# --------------------------------------------------------------------------- where sets are read


def test_the_data_root_falls_back_to_the_fetched_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    beside, cache = tmp_path / "shared", tmp_path / "cache"
    monkeypatch.setattr(real_sets, "_BESIDE", beside)
    monkeypatch.setenv("ELMO_BENCH_CACHE", str(cache))
    monkeypatch.delenv("ELMO_BENCH_SHARED", raising=False)
    fetched = cache / "shared" / "data"
    assert real_sets.fetched_data_root() == fetched
    # nothing anywhere: ../shared/data, which the messages name; fetch with no --out
    assert real_sets.shared_data_root() == beside / "data"
    assert real_sets.fetch_command() == real_sets.FETCH_COMMAND
    assert "real-data fetch (docs/real_data.md)" in real_sets.missing_hint()
    fetched.mkdir(parents=True)
    assert real_sets.shared_data_root() == fetched
    assert real_sets.data_path("shared:real/x") == str(fetched / "real" / "x")
    (beside / "data").mkdir(parents=True)  # ../shared/data comes before the fetched copy
    assert real_sets.shared_data_root() == beside / "data"
    # ... but a set it lacks is read from the fetched copy: fetch still needs no --out
    assert real_sets.fetch_command() == real_sets.FETCH_COMMAND
    monkeypatch.setenv("ELMO_BENCH_SHARED", str(tmp_path / "mine"))  # and the variable first
    assert real_sets.shared_data_root() == tmp_path / "mine" / "data"
    assert f"--out {tmp_path / 'mine' / 'data'}" in real_sets.missing_hint()


# --------------------------------------------------------------------------- the command line


def test_cli_fetch_from_status_and_one_line_errors(
    source: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from experiments.__main__ import main

    raw = {
        key: (tmp_path / "offline" / key).as_uri()
        for key in ("litbank", "propbank-release", "nltk_data")
    }
    monkeypatch.setattr(manifest, "MANIFEST", _write_manifest(source, tmp_path, raw=raw))
    monkeypatch.setattr(manifest, "registry_folders", lambda: FOLDERS)
    monkeypatch.setenv("ELMO_BENCH_SHARED", str(tmp_path / "shared"))
    root = tmp_path / "shared" / "data"
    assert main(["real-data", "fetch", "--from", str(source), "--out", str(root)]) == 0
    out = capsys.readouterr().out
    assert out.count("real-data: ") == 11 and "wrote" in out
    assert "--data real and shared:<folder> labels read them from here ($ELMO_BENCH_SHARED" in out
    assert main(["real-data", "status"]) == 0
    assert f"5 of 5 sets complete; data root {root};" in capsys.readouterr().out
    assert main(["real-data", "list"]) == 0
    assert f"github.com/nltk/nltk_data/tree/{COMMIT}" in capsys.readouterr().out
    cases = [
        (["--sets", "nope"], "--sets: no real set nope (known: litbank-coref"),
        (["--from", str(tmp_path / "absent")], "not a folder"),
        (["--out", str(tmp_path / "other")], "could not download file://"),
    ]
    for extra, message in cases:
        assert main(["real-data", "fetch", *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and message in err


def test_the_committed_manifest_pins_every_set_of_the_registry() -> None:
    loaded = manifest.load_manifest()
    registry = real_sets.real_sets()
    assert list(loaded.sets) == [s.name for s in registry]
    assert [e.folder for e in loaded.sets.values()] == [s.folder for s in registry]
    counts = {name: len(entry.files) for name, entry in loaded.sets.items()}
    assert counts == {
        "litbank-coref": 100,
        "litbank-entities": 100,
        "propbank-srl": 145,
        "conll2000-chunking": 1,
        "sentence-polarity": 1,
        "conll2003": 3,
        "sst": 3,
    }
    assert [name for name, entry in loaded.sets.items() if entry.terms] == ["conll2003"]
    assert "Reuters" in loaded.sets["conll2003"].terms
    for entry in loaded.sets.values():
        assert entry.licence and entry.citation
        for file in entry.files:
            repo = file.repository
            assert (
                file.url
                == f"https://raw.githubusercontent.com/{repo.github}/{repo.commit}/{file.path}"
            )


@pytest.mark.shared
def test_the_real_sources_convert_to_the_shared_copy_byte_for_byte(tmp_path: Path) -> None:
    """Where ``../shared/data`` exists and ``ELMO_BENCH_REAL_SOURCES`` names a ``--from``
    folder of the real sources, every set converts to exactly the shared copy's bytes."""
    shared = SHARED / "data"
    given = os.environ.get("ELMO_BENCH_REAL_SOURCES")
    if not shared.is_dir():
        pytest.skip(f"../shared not available ({shared} missing)")
    if not given or not Path(given).is_dir():
        pytest.skip("set ELMO_BENCH_REAL_SOURCES to a --from folder of the real sources")
    loaded = manifest.load_manifest()
    root = tmp_path / "data"
    fetch_sets(loaded, root=root, source=Path(given), log=_quiet)
    for entry in loaded.sets.values():
        assert _same_tree(root / entry.folder, shared / entry.folder) == [], entry.name
