"""The peer's venv without the network: its plan, its import check on venvs that lack
something, the atomic build (pip replaced by a fake step runner), the stamp that lets a checked
venv be taken without a process, and the timing callback (with a stand-in allennlp)."""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import pytest

from experiments.cli import main as cli_main
from experiments.peer import venv as peer_venv_module
from experiments.peer.venv import (
    CHECK_SCRIPT,
    PEER_SIDE,
    RECIPE_FILE,
    STAMP,
    Check,
    Recipe,
    Step,
    VenvBuildError,
    build,
    check,
    ensure_venv,
    main,
    plan,
    venv_state,
)

PYTHON_DIR = f"python{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.fixture(scope="module")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real venv with nothing installed (no pip: no network, well under a second)."""
    root = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    return root


def _recipe(tmp_path: Path, body: str) -> Recipe:
    path = tmp_path / "recipe.toml"
    path.write_text(body, encoding="utf-8")
    return Recipe.load(path)


# ------------------------------------------------------------------------------- the plan
def test_the_plan_names_every_step_and_pin_and_touches_nothing(tmp_path: Path) -> None:
    venv = tmp_path / "cache" / "peer" / "venv"
    text = plan(venv)
    assert f"peer venv: {venv}" in text and "now: missing" in text
    assert "-m venv " in text
    assert "torch==2.13.0 numpy==2.4.6 h5py==3.16.0" in text
    assert "--no-deps allennlp==2.10.1 allennlp-models==2.10.1" in text
    assert "transformers==4.40.2" in text and "allennlp==2.10.1  (--no-deps)" in text
    assert "torchvision/__init__.py" in text and "import check" in text
    assert f"-c {venv.parent}/.venv.build-" in text  # every pip step is constrained
    assert "rename " in text and f"→ {venv}" in text
    assert list(tmp_path.iterdir()) == []  # no folder made, no lock taken


def test_the_dry_run_commands_print_the_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    venv = tmp_path / "v"
    assert main(["--dry-run", "--venv", str(venv)]) == 0
    assert "allennlp-models==2.10.1  (--no-deps)" in capsys.readouterr().out
    monkeypatch.setenv("PEER_VENV", str(venv))
    assert cli_main(["peer", "--build-plan"]) == 0
    out = capsys.readouterr().out
    assert f"peer venv: {venv}" in out and "torch==2.13.0" in out
    assert not venv.exists()


def test_the_venv_lives_in_the_project_cache_unless_peer_venv_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PEER_VENV", raising=False)
    monkeypatch.setenv("ELMO_BENCH_CACHE", str(tmp_path / "cache"))
    assert peer_venv_module.peer_venv() == tmp_path / "cache" / "peer" / "venv"
    monkeypatch.setenv("PEER_VENV", str(tmp_path / "elsewhere"))
    assert peer_venv_module.peer_venv() == tmp_path / "elsewhere"


def test_the_recipe_digest_follows_its_data_not_its_comments(tmp_path: Path) -> None:
    text = RECIPE_FILE.read_text(encoding="utf-8")
    repo = Recipe.load()
    assert _recipe(tmp_path, "# another comment\n" + text).digest == repo.digest
    changed = _recipe(tmp_path, text.replace("transformers==4.40.2", "transformers==4.40.1"))
    assert changed.digest != repo.digest
    assert [i.no_deps for i in repo.installs] == [False, True, False]
    assert "torch==2.13.0" in repo.pins and "threadpoolctl==3.8.0" in repo.pins
    with pytest.raises(ValueError, match="name==version"):
        _recipe(tmp_path, '[[install]]\nname = "x"\nabout = "x"\npackages = ["torch"]\n')


# ------------------------------------------------------------------------------- the check
def test_the_check_fails_on_a_venv_without_the_packages(bare_venv: Path) -> None:
    verdict = check(bare_venv / "bin" / "python")
    assert verdict.status == 1 and not verdict.ok
    assert verdict.line.startswith("peer venv broken: ")
    assert (
        "torch not installed" in verdict.reason and "transformers not installed" in verdict.reason
    )


def test_the_check_imports_even_when_every_version_matches(bare_venv: Path, tmp_path: Path) -> None:
    """Distribution metadata alone (every pin at its version) does not pass: the modules must
    import."""
    fake = tmp_path / "fake-site"
    for pin in Recipe.load().pins:
        name, _, version = pin.partition("==")
        info = fake / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    verdict = check(bare_venv / "bin" / "python", extra_path=[fake])
    assert verdict.status == 1, verdict.line
    assert "import _jsonnet: ModuleNotFoundError" in verdict.reason


def test_the_check_tells_a_broken_peer_module_from_a_broken_venv(
    bare_venv: Path, tmp_path: Path
) -> None:
    """A peer-side module of the project that fails is exit 2 (no rebuild helps)."""
    ok = check(bare_venv / "bin" / "python", _recipe(tmp_path, '[check]\nmodules = ["json"]\n'))
    assert ok.status == 0 and ok.line.startswith("peer venv ok: allennlp (not installed)")
    files = _recipe(tmp_path, '[check]\nmodules = ["json"]\npeer_modules = ["peer_timing"]\n')
    verdict = check(bare_venv / "bin" / "python", files)
    assert verdict.status == 2 and verdict.line.startswith("peer files broken: ")
    assert "import peer_timing: ModuleNotFoundError" in verdict.reason  # no torch here
    missing = check(tmp_path / "nowhere" / "bin" / "python")
    assert missing.status == 1 and "no Python at" in missing.reason


def test_a_broken_venv_is_detected_and_rebuilt(
    bare_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bin/allennlp`` there but transformers (and the rest) missing: checked, then rebuilt."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (venv / "bin" / "allennlp").write_text("#!/bin/sh\n")
    built: list[Path] = []
    monkeypatch.setattr(peer_venv_module, "build", lambda v, r, echo: built.append(v))
    lines: list[str] = []
    assert ensure_venv(venv, echo=lines.append) == venv / "bin" / "python"
    assert built == [venv]
    [line] = [x for x in lines if "fails its import check" in x]
    assert "transformers not installed" in line and line.endswith("rebuilding it")


# ------------------------------------------------------------------------------- the build
class FakePip:
    """The build's step runner with the venv and pip faked: ``fail_at`` (a step title's start)
    raises there, ``interrupt_at`` raises KeyboardInterrupt there; actions run for real."""

    def __init__(self, fail_at: str | None = None, interrupt_at: str | None = None) -> None:
        self.fail_at, self.interrupt_at = fail_at, interrupt_at
        self.titles: list[str] = []

    def __call__(self, step: Step, log: Path) -> None:
        self.titles.append(step.title)
        if self.interrupt_at and step.title.startswith(self.interrupt_at):
            raise KeyboardInterrupt
        if self.fail_at and step.title.startswith(self.fail_at):
            raise VenvBuildError(f"{step.title} failed (fake)")
        if step.argv is None:
            assert step.action is not None
            step.action()
        elif step.argv[1:3] == ("-m", "venv"):
            tmp = Path(step.argv[3])
            (tmp / "lib" / PYTHON_DIR / "site-packages").mkdir(parents=True)
            (tmp / "bin").mkdir()
            (tmp / "bin" / "python").symlink_to(sys.executable)
            (tmp / "bin" / "pip").write_text(f"#!{tmp}/bin/python\nimport pip\n")
            (tmp / "pyvenv.cfg").write_text(f"home = /usr/bin\ncommand = python -m venv {tmp}\n")
        else:
            time.sleep(0.05)  # pip


@pytest.fixture
def fake_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        peer_venv_module,
        "check",
        lambda python, recipe=None, extra_path=(): Check(0, "peer venv ok"),
    )


def _finished_looking(venv: Path) -> list[Path]:
    """Everything beside ``venv`` but the lock and the build log."""
    return [p for p in venv.parent.iterdir() if not p.name.endswith((".lock", "-build.log"))]


def test_a_build_moves_a_checked_stamped_venv_into_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_check: None
) -> None:
    venv = tmp_path / "peer" / "venv"
    (venv.parent / ".venv.build-12345").mkdir(parents=True)  # a killed build's leftovers
    runner = FakePip()
    monkeypatch.setattr(peer_venv_module, "_run_step", runner)
    lines: list[str] = []
    assert ensure_venv(venv, echo=lines.append) == venv / "bin" / "python"
    assert runner.titles[0] == "create the venv" and runner.titles[-1] == "move it into place"
    assert venv_state(venv)[0] == "ready"
    assert _finished_looking(venv) == [venv]  # the leftover folder is gone
    assert (venv / "bin" / "pip").read_text().startswith(f"#!{venv}/bin/python\n")
    assert f"command = python -m venv {venv}\n" in (venv / "pyvenv.cfg").read_text()
    stand_in = venv / "lib" / PYTHON_DIR / "site-packages" / "torchvision" / "ops" / "boxes.py"
    assert "PEER_STAND_IN = True" in stand_in.read_text()
    assert any("removing" in line for line in lines) and "is ready" in lines[-1]
    # taken again from its stamp alone: no step, no check
    monkeypatch.setattr(peer_venv_module, "check", None)
    runner.titles.clear()
    assert ensure_venv(venv, echo=lines.append) == venv / "bin" / "python"
    assert runner.titles == []


@pytest.mark.parametrize(
    ("fail_at", "interrupt_at"),
    [("install what allennlp", None), ("import check", None), (None, "install allennlp")],
)
def test_a_failed_or_interrupted_build_leaves_nothing_that_looks_finished(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_check: None,
    fail_at: str | None,
    interrupt_at: str | None,
) -> None:
    venv = tmp_path / "venv"
    monkeypatch.setattr(peer_venv_module, "_run_step", FakePip(fail_at, interrupt_at))
    error = VenvBuildError if fail_at else KeyboardInterrupt
    with pytest.raises(error):
        ensure_venv(venv, echo=lambda line: None)
    assert not venv.exists() and _finished_looking(venv) == []
    assert venv_state(venv)[0] == "missing"


def test_a_failed_rebuild_keeps_the_old_venv_and_a_good_one_replaces_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_check: None
) -> None:
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (venv / "old").write_text("old")
    monkeypatch.setattr(peer_venv_module, "_run_step", FakePip("install torch"))
    with pytest.raises(VenvBuildError):
        build(venv, echo=lambda line: None)
    assert (venv / "old").is_file() and _finished_looking(venv) == [venv]
    monkeypatch.setattr(peer_venv_module, "_run_step", FakePip())
    build(venv, echo=lambda line: None)
    assert not (venv / "old").exists() and venv_state(venv)[0] == "ready"
    assert _finished_looking(venv) == [venv]


def test_a_folder_that_is_not_a_venv_is_never_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "keep.txt").write_text("mine")
    monkeypatch.setattr(peer_venv_module, "_run_step", FakePip())
    with pytest.raises(VenvBuildError, match="is not a venv"):
        build(tmp_path / "data", echo=lambda line: None)
    assert (tmp_path / "data" / "keep.txt").read_text() == "mine"


def test_the_stamp_goes_stale_with_the_recipe_the_check_or_site_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_check: None
) -> None:
    venv = tmp_path / "venv"
    monkeypatch.setattr(peer_venv_module, "_run_step", FakePip())
    build(venv, echo=lambda line: None)
    assert venv_state(venv)[0] == "ready"
    site = venv / "lib" / PYTHON_DIR / "site-packages"
    time.sleep(0.01)
    (site / "transformers").mkdir()  # pip installed or removed something since
    assert venv_state(venv)[0] == "unchecked"
    stamp = json.loads((venv / STAMP).read_text())
    stamp["site_packages_mtime_ns"] = site.stat().st_mtime_ns
    stamp["check"] = "another check"
    (venv / STAMP).write_text(json.dumps(stamp))
    assert venv_state(venv) == ("unchecked", "the check changed since it passed")
    stamp["recipe"] = "another recipe"
    (venv / STAMP).write_text(json.dumps(stamp))
    assert venv_state(venv)[0] == "other recipe"
    built: list[Path] = []
    monkeypatch.setattr(peer_venv_module, "build", lambda v, r, echo: built.append(v))
    lines: list[str] = []
    ensure_venv(venv, echo=lines.append)
    assert built == [venv] and "another recipe: rebuilding it" in lines[0]


def test_builds_of_one_venv_take_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_check: None
) -> None:
    """Two peer jobs starting at once: one builds, the other waits and takes the result."""
    venv = tmp_path / "venv"
    runner = FakePip()
    monkeypatch.setattr(peer_venv_module, "_run_step", runner)
    lines: list[str] = []
    threads = [
        threading.Thread(target=ensure_venv, args=(venv,), kwargs={"echo": lines.append})
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert runner.titles.count("create the venv") == 1
    assert venv_state(venv)[0] == "ready"


# ------------------------------------------------------------------------ the peer-side files
def test_the_peer_side_files_are_shipped_and_parse_without_allennlp() -> None:
    shipped = importlib.resources.files("experiments.peer").joinpath("allennlp_side")
    names = ["peer_timing.py", "peer_check.py", "peer_compat.py", "allennlp_epochs.py"]
    for name in [*names, "venv.toml"]:
        assert shipped.joinpath(name).is_file(), name
    for name in names:
        compile(shipped.joinpath(name).read_text(encoding="utf-8"), name, "exec")
    assert PEER_SIDE.parent == Path(peer_venv_module.__file__).parent
    assert CHECK_SCRIPT.parent == RECIPE_FILE.parent == PEER_SIDE
    assert "allennlp" not in sys.modules


def _stand_in_allennlp(monkeypatch: pytest.MonkeyPatch) -> type:
    """Modules ``allennlp.training.callbacks.callback`` with a registrable TrainerCallback."""

    class TrainerCallback:
        registry: dict[str, type] = {}

        def __init__(self, serialization_dir: str) -> None:
            self.serialization_dir = serialization_dir

        def on_start(self, trainer: Any, is_primary: bool = True, **kwargs: Any) -> None:
            self.trainer = trainer

        @classmethod
        def register(cls, name: str) -> Any:
            def add(subclass: type) -> type:
                cls.registry[name] = subclass
                return subclass

            return add

    parts = ["allennlp", "allennlp.training", "allennlp.training.callbacks"]
    for name in [*parts, "allennlp.training.callbacks.callback"]:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules["allennlp.training.callbacks.callback"].TrainerCallback = TrainerCallback  # type: ignore[attr-defined]
    return TrainerCallback


def _timing_callback(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The class ``peer_timing`` registers, loaded beside a stand-in allennlp."""
    registry = _stand_in_allennlp(monkeypatch)
    spec = importlib.util.spec_from_file_location(
        "peer_timing_under_test", PEER_SIDE / "peer_timing.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return registry.registry["peer_timing"]  # type: ignore[attr-defined]


def test_the_timing_callback_times_each_pass_and_writes_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    callback_class = _timing_callback(monkeypatch)

    def busy(seconds: float) -> None:
        end = time.process_time() + seconds
        while time.process_time() < end:
            pass

    class Trainer:
        def _train_epoch(self, epoch: int) -> dict[str, float]:
            busy(0.05)
            return {"loss": 1.0}

        def _validation_loss(self, epoch: int) -> tuple[float, None, int]:
            busy(0.02)
            return 0.5, None, 1

    trainer = Trainer()
    callback = callback_class(str(tmp_path))
    callback.on_start(trainer)
    callback.on_start(trainer)  # a restart does not wrap twice
    for epoch in range(2):
        assert trainer._train_epoch(epoch) == {"loss": 1.0}
        if epoch == 0:
            assert trainer._validation_loss(epoch) == (0.5, None, 1)
        callback.on_epoch(trainer, {"training_loss": 0.9, "validation_loss": 0.4}, epoch)
    rows = json.loads((tmp_path / "peer_timing.json").read_text())
    assert [r["epoch"] for r in rows] == [0, 1]
    assert rows[0]["train_cpu_s"] >= 0.04 and rows[0]["train_s"] >= rows[0]["train_cpu_s"] - 0.01
    assert rows[0]["validation_cpu_s"] >= 0.015 and rows[1]["validation_s"] is None
    assert rows[0]["epoch_s"] >= rows[0]["train_s"] + rows[0]["validation_s"] - 0.01
    assert rows[0]["training_loss"] == 0.9 and rows[0]["peak_rss_mb"] > 10
    assert rows[0]["torch_threads"] >= 1
    restored = callback_class(str(tmp_path))
    restored.load_state_dict(callback.state_dict())
    assert restored.rows == rows


def test_a_restored_callback_puts_back_the_generators_and_carried_states_when_training_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import random

    import numpy as np
    import torch

    callback_class = _timing_callback(monkeypatch)

    class Stateful(torch.nn.Module):  # as allennlp's _EncoderBase(stateful=True)
        def __init__(self) -> None:
            super().__init__()
            self.stateful = True
            self._states: tuple[torch.Tensor, ...] | None = None

    class Trainer:
        """Draws from every generator in its training pass and carries a state across it."""

        def __init__(self) -> None:
            self.carrier = Stateful()
            self.model = torch.nn.Sequential(self.carrier)
            self._batches_in_epoch_completed = 0

        def _train_epoch(self, epoch: int) -> tuple[float, float, float, list[float]]:
            carried = self.carrier._states
            before = [] if carried is None else carried[0].tolist()
            self.carrier._states = (torch.rand(2),)
            return random.random(), float(np.random.rand()), float(torch.rand(1)), before

        def _validation_loss(self, epoch: int) -> tuple[float, None, int]:
            return 0.5, None, 1

    def epoch_end(callback: Any, trainer: Trainer, epoch: int) -> None:
        callback.on_epoch(trainer, {"training_loss": 0.9}, epoch)

    torch.manual_seed(0)
    trainer, callback = Trainer(), callback_class(str(tmp_path))
    callback.on_start(trainer)
    for epoch in range(2):
        trainer._train_epoch(epoch)
        epoch_end(callback, trainer, epoch)
    saved = callback.state_dict()  # allennlp's checkpoint after the second epoch
    assert saved["resume"]["epochs_completed"] == 2
    expected = [trainer._train_epoch(2), trainer._train_epoch(3)]  # the uninterrupted run
    torch.manual_seed(1)  # another process: other generators, no carried state
    random.seed(1)
    np.random.seed(1)
    again, restored = Trainer(), callback_class(str(tmp_path / "again"))
    restored.load_state_dict(saved)
    restored.on_start(again)
    for epoch in range(2):  # allennlp's replay of the epochs done draws as it likes
        again._train_epoch(epoch)
    again.carrier._states = None
    assert [again._train_epoch(2), again._train_epoch(3)] == expected
    assert restored.rows == callback.rows[:2]
    callback_class(str(tmp_path)).load_state_dict({"rows": []})  # a checkpoint without them
    assert "will not train as an uninterrupted one would" in capsys.readouterr().err
