"""Run identities (docs/runs.md): what a run is made of, fingerprinted from files and code
before it starts, and when a stored record may stand for a run (``reuse_differences``)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from experiments.plan.specs import base_spec, baseline
from experiments.run.identity import (
    HARNESS_RESULT_VERSION,
    PORTABLE_FIELDS,
    REUSE_FIELDS,
    RunIdentity,
    code_version,
    content_digest,
    folder_digests,
    reuse_differences,
    run_identity,
)
from experiments.run.spec import RunSpec
from tasks.registry import get_task


def sst5_baseline(data: str = "demo", overrides: tuple[str, ...] = ()) -> RunSpec:
    """The sst5 baseline of the mini preset, as ``run sst5 --repr none`` builds it."""
    spec = baseline(base_spec(get_task("sst5"), "mini", data, {}, overrides))
    assert spec.representation == "none"
    return spec


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A copy of sst5's DEMO folder."""
    folder = tmp_path / "data"
    shutil.copytree(get_task("sst5").demo(), folder)
    return folder


def identity(spec: RunSpec, **options: object) -> RunIdentity:
    """``run_identity`` on one CPU thread unless asked otherwise."""
    return run_identity(spec, **{"device": "cpu", "threads": 1, **options})  # type: ignore[arg-type]


def change_line(path: Path, index: int = 0) -> None:
    """Change one line of a file (the root label of an SST tree: ``(4 ...`` → ``(3 ...``)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    first, rest = lines[index][:2], lines[index][2:]
    assert first[0] == "(" and first[1].isdigit()
    lines[index] = f"({(int(first[1]) + 1) % 5}{rest}"
    path.write_text("".join(lines), encoding="utf-8")


def test_identity_of_a_registered_task_is_deterministic_and_complete(data: Path) -> None:
    demo = identity(sst5_baseline())
    assert identity(sst5_baseline()) == demo
    assert set(demo.to_dict()) == {*REUSE_FIELDS, "data_files"}
    assert set(demo.data_files) == {
        "train.txt",
        "dev.txt",
        "test.txt",
        "DEMO_NOTICE.txt",
        "config:word_vectors.matrix",  # the mini preset's embedded GloVe 6B 50-d package
        "config:word_vectors.vocab",
    }
    assert demo.device_kind == "cpu" and demo.precision == "fp32" and demo.threads == 1
    assert demo.task_result_version == get_task("sst5").version
    assert demo.harness_result_version == HARNESS_RESULT_VERSION
    assert all(len(v) == 32 for v in (demo.data, demo.representation, demo.config))
    assert RunIdentity.from_dict(demo.to_dict()) == demo
    assert RunIdentity.from_dict({**demo.to_dict(), "from_the_future": 1}) == demo
    # a copied data folder has the DEMO's data fingerprint (names relative to the folder)
    copied = identity(sst5_baseline(str(data)))
    assert copied.data == demo.data and copied.data_files == demo.data_files
    assert reuse_differences(demo.to_dict(), copied) == []
    # the seed is part of the run id, not of what a run is made of
    seed_1 = dataclasses.replace(sst5_baseline(str(data)), seed=1)
    assert identity(seed_1) == copied


def test_one_changed_line_of_a_data_file_changes_the_data_and_names_the_file(
    data: Path,
) -> None:
    spec = sst5_baseline(str(data))
    before = identity(spec)
    change_line(data / "train.txt", 3)
    after = identity(spec)
    assert after.data != before.data
    assert after.data_files["train.txt"] != before.data_files["train.txt"]
    assert {k: v for k, v in after.data_files.items() if k != "train.txt"} == {
        k: v for k, v in before.data_files.items() if k != "train.txt"
    }
    assert (after.representation, after.config) == (before.representation, before.config)
    assert reuse_differences(before.to_dict(), after) == ["data changed (changed train.txt)"]
    assert reuse_differences(before.to_dict(), after, PORTABLE_FIELDS) == [
        "data changed (changed train.txt)"
    ]


def test_added_removed_and_hidden_data_files(data: Path) -> None:
    spec = sst5_baseline(str(data))
    before = identity(spec)
    (data / ".hidden-notes").write_text("not data", encoding="utf-8")
    assert identity(spec) == before  # hidden files are no data
    (data / "extra.txt").write_text("more", encoding="utf-8")
    assert identity(spec) == before  # nor is a file the task's reader does not read
    (data / "DEMO_NOTICE.txt").unlink()
    (data / "test.txt").unlink()  # the optional test split
    assert reuse_differences(before.to_dict(), identity(spec)) == [
        "data changed (removed DEMO_NOTICE.txt, test.txt)"
    ]


def test_a_file_the_configuration_names_is_part_of_the_data(tmp_path: Path, data: Path) -> None:
    extra = tmp_path / "elsewhere"
    extra.mkdir()
    train = extra / "train.txt"
    shutil.copy(data / "train.txt", train)
    spec = sst5_baseline(str(data), (f"train_file={train}",))
    before = identity(spec)
    assert before.data_files["config:train_file"] == content_digest(train)
    assert before.data != identity(sst5_baseline(str(data))).data
    change_line(train)
    after = identity(spec)
    assert after.config == before.config  # the same override, another content
    assert reuse_differences(before.to_dict(), after) == [
        "data changed (changed config:train_file)"
    ]


def test_an_override_value_changes_the_config(data: Path) -> None:
    before = identity(sst5_baseline(str(data), ("encoder_hidden=32",)))
    after = identity(sst5_baseline(str(data), ("encoder_hidden=16",)))
    assert after.config != before.config and after.data == before.data
    (reason,) = reuse_differences(before.to_dict(), after)
    assert reason == f"config changed ({before.config[:8]} → {after.config[:8]})"
    # the default written out is the same configuration as the default left implicit
    default = get_task("sst5").configure("mini", []).encoder_hidden
    explicit = identity(sst5_baseline(str(data), (f"encoder_hidden={default}",)))
    assert explicit.config == identity(sst5_baseline(str(data))).config


def test_a_file_a_representation_option_names_is_fingerprinted_by_content(
    tmp_path: Path,
) -> None:
    weights = tmp_path / "weights.safetensors"
    weights.write_bytes(b"\0weights, version 1")
    spec = dataclasses.replace(
        base_spec(get_task("sst5"), "mini", "demo", {"checkpoint": str(weights)}), seed=0
    )
    before = identity(spec)
    assert identity(spec) == before
    weights.write_bytes(b"\0weights, version 2, longer")
    after = identity(spec)
    assert after.representation != before.representation
    assert after.data == before.data and after.config == before.config
    (reason,) = reuse_differences(before.to_dict(), after)
    assert reason.startswith("representation changed (")
    # the same content under another name: the option (its path) differs, so does the identity
    moved = tmp_path / "moved.safetensors"
    shutil.copy(weights, moved)
    other = dataclasses.replace(spec, representation_config={"checkpoint": str(moved)})
    assert identity(other).representation != after.representation


def test_a_user_factory_s_source_is_part_of_the_representation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = tmp_path / "identity_test_factory.py"
    module.write_text("def Factory(**options):\n    return None\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = dataclasses.replace(
        base_spec(get_task("sst5"), "mini", "demo", {}),
        representation="identity_test_factory:Factory",
    )
    before = identity(spec)
    assert identity(spec) == before
    module.write_text("def Factory(**options):\n    return 'changed'\n", encoding="utf-8")
    after = identity(spec)
    assert after.representation != before.representation
    assert (after.data, after.config) == (before.data, before.config)
    # an unimportable module is fingerprinted as unresolved (stable, never silently equal)
    missing = dataclasses.replace(spec, representation="no_such_module_here:Factory")
    assert identity(missing).representation == identity(missing).representation
    assert identity(missing).representation != after.representation


def test_device_precision_and_threads_are_reported_but_not_portable(data: Path) -> None:
    spec = sst5_baseline(str(data))
    here = identity(spec)
    gpu = dataclasses.replace(here, device_kind="cuda (NVIDIA H200)", threads=None)
    assert reuse_differences(gpu.to_dict(), here) == [
        "device_kind 'cuda (NVIDIA H200)' → 'cpu'",
        "threads None → 1",
    ]
    assert reuse_differences(here.to_dict(), identity(spec, threads=2)) == ["threads 1 → 2"]
    assert reuse_differences(here.to_dict(), identity(spec, precision="bf16")) == [
        "precision 'fp32' → 'bf16'"
    ]
    for stored in (gpu, dataclasses.replace(here, precision="bf16", threads=4)):
        assert reuse_differences(stored.to_dict(), here, PORTABLE_FIELDS) == []
    assert set(REUSE_FIELDS) - set(PORTABLE_FIELDS) == {"device_kind", "precision", "threads"}


def test_result_versions_decide_reuse(data: Path) -> None:
    here = identity(sst5_baseline(str(data)))
    older_task = dataclasses.replace(here, task_result_version=here.task_result_version - 1)
    (reason,) = reuse_differences(older_task.to_dict(), here)
    assert reason.startswith("task result version changed")
    older_harness = dataclasses.replace(here, harness_result_version=0).to_dict()
    assert reuse_differences(older_harness, here, PORTABLE_FIELDS) == [
        f"harness_result_version 0 → {HARNESS_RESULT_VERSION}"
    ]


def test_records_without_an_identity_are_never_reused(data: Path) -> None:
    here = identity(sst5_baseline(str(data)))
    for stored in ({}, None):
        for fields in (REUSE_FIELDS, PORTABLE_FIELDS):
            reasons = reuse_differences(stored, here, fields)
            assert reasons and "no recorded identity" in reasons[0]
    with pytest.raises(TypeError):  # a partial identity is no identity
        RunIdentity.from_dict({"data": here.data})


def test_folder_digests_and_code_version(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.txt").write_text("x", encoding="utf-8")
    (tmp_path / "a" / ".git").mkdir()
    (tmp_path / "a" / ".git" / "HEAD").write_text("ref", encoding="utf-8")
    assert list(folder_digests(tmp_path / "a")) == ["x.txt"]
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    assert content_digest(tmp_path / "a") == content_digest(tmp_path / "b")
    (tmp_path / "b" / "x.txt").write_text("y", encoding="utf-8")
    assert content_digest(tmp_path / "a") != content_digest(tmp_path / "b")
    with pytest.raises(FileNotFoundError):
        content_digest(tmp_path / "missing")
    code = code_version()
    assert len(code.harness_hash) == 32 and code == code_version()
    assert code.git_sha is None or len(code.git_sha) == 40


def test_a_field_added_compatibly_counts_only_away_from_its_default() -> None:
    """``added_field``: at its default the configuration fingerprints as it did before the
    field existed (stored runs stay valid); another value changes the fingerprint."""
    from experiments.run.identity import _plain
    from tasks.core import added_field

    @dataclasses.dataclass(frozen=True)
    class Before:
        width: int = 4

    @dataclasses.dataclass(frozen=True)
    class After:
        width: int = 4
        noise: float = added_field(0.0, why="test")

    assert _plain(After()) == _plain(Before()) == {"width": 4}
    assert _plain(After(noise=0.1)) == {"width": 4, "noise": 0.1}
