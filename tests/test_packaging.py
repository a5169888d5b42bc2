"""The wheel is the product: it carries every file of the packages (each task's DEMO set, the
shipped biLM, the harness's tables and the peer's files), and installed into a fresh virtual
environment outside the repository it trains every registered task from an empty folder (the
default run: the venv borrows this environment's dependencies, no network). The slow test does a
user's full install (``pip install "elmo-bench[harness]"`` from the registries). Its metadata asks
for a torch range (the tested pin lives in ``constraints.txt``, which every install command of the
repository uses), names its licence, and declares the console scripts ``elmo-bench`` and
``bilm``."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tasks.registry import TASKS
from tests.conftest import REPO
from tests.source_tree import (
    PACKAGES,
    build_wheel,
    checkout_files,
    copy_source,
    run,
    venv_with_wheel,
    wheel_names,
)

#: A user's first command outside a clone, for every task: the DEMO set, no representation.
SMOKE = ("--repr", "none", "--limit", "20", "--max-epochs", "1", "--quiet")


def _clean_env(home: Path) -> dict[str, str]:
    """The environment of a user outside the repository: its own home and cache."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ELMO_BENCH_CACHE")}
    env["HOME"] = str(home)  # demo sets and caches land here, not in the repository
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from a copy of the checkout's files."""
    root = tmp_path_factory.mktemp("wheel")
    return build_wheel(copy_source(root / "src"), root / "dist")


def test_the_wheel_carries_every_file_of_the_packages(wheel: Path) -> None:
    """Every file of ``bilm/``, ``tasks/`` and ``experiments/`` in the checkout is in the wheel
    (package data is every file inside the packages, not a hand-kept list), and nothing else but
    the metadata."""
    names = wheel_names(wheel)
    files = checkout_files(*PACKAGES)
    missing = [f for f in files if f not in names]
    assert not missing, missing
    for name in TASKS:  # every task's DEMO set travels with it
        assert any(n.startswith(f"tasks/{name}/demo_data/") for n in names), name
    other = [n for n in names if n not in files and ".dist-info/" not in n]
    assert not other, other


def test_the_installed_wheel_trains_every_task_from_an_empty_folder(
    wheel: Path, tmp_path: Path
) -> None:
    """``elmo-bench run TASK --repr none --limit 20 --max-epochs 1`` of every registered task in
    an empty folder, with the wheel installed into a fresh venv; then, with one task's DEMO file
    deleted from the installation, the error names the file and the ``--data`` way out."""
    bin_dir = venv_with_wheel(wheel, tmp_path / "venv")
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    env = _clean_env(tmp_path / "home")
    where = run([str(bin_dir / "python"), "-c", "import tasks; print(tasks.__file__)"], cwd, env)
    assert where.startswith(str(tmp_path / "venv")), where  # the wheel's copy, not the checkout
    for name in TASKS:
        out = run([str(bin_dir / "elmo-bench"), "run", name, *SMOKE], cwd, env)
        result = json.loads(out.strip().splitlines()[-1])
        metric = TASKS[name].metric.key
        assert f"dev_{metric}" in result, (name, result)
        assert any((cwd / "runs" / "store" / name).iterdir()), name
    gone = next(Path(where).parent.glob("snli/demo_data/*train*"))
    gone.unlink()
    done = subprocess.run(
        [str(bin_dir / "elmo-bench"), "run", "snli", *SMOKE],
        cwd=cwd,
        env={**env, "HOME": str(tmp_path / "home2")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert "DEMO set of snli is not in this installation" in done.stderr, done.stderr[-2000:]
    assert str(gone) in done.stderr and "--data DIR" in done.stderr


@pytest.mark.slow
def test_a_full_install_from_the_registries_runs_every_task(wheel: Path, tmp_path: Path) -> None:
    """A user's install outside a clone: ``pip install "elmo-bench[harness]"`` (the wheel, its
    dependencies from the registries, torch pinned by ``constraints.txt``) into a fresh venv, then
    ``--help`` and a first run of every registered task in an empty folder."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [
            *(str(python), "-m", "pip", "install", "-q"),
            *("-c", str(REPO / "constraints.txt"), f"{wheel}[harness]"),
        ],
        check=True,
        timeout=1800,
    )
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    env = _clean_env(tmp_path / "home")
    assert "sweep" in run([str(python), "-m", "experiments", "--help"], cwd, env, 300)
    for name in TASKS:  # a user's first run of every task, from the DEMO set
        out = run([str(venv / "bin" / "elmo-bench"), "run", name, *SMOKE], cwd, env, 900)
        assert f'"dev_{TASKS[name].metric.key}"' in out, (name, out[-2000:])
        assert any((cwd / "runs" / "store" / name).iterdir()), name


# ------------------------------------------------------------------------------ the metadata
def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))[
        "project"
    ]
    return project


def _torch(lines: list[str]) -> Requirement:
    (torch,) = [r for r in map(Requirement, lines) if r.name == "torch"]
    return torch


def _constraints() -> list[str]:
    text = (REPO / "constraints.txt").read_text("utf-8")
    return [
        line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#")[0].strip()
    ]


def test_torch_is_a_range_and_constraints_txt_pins_it() -> None:
    """The wheel asks for a torch range (a researcher's own torch in it is kept); the exact
    version the project is tested on is pinned in ``constraints.txt``, inside that range, and is
    the torch installed here."""
    dependencies = _project()["dependencies"]
    assert isinstance(dependencies, list)
    wanted = _torch(dependencies)
    operators = {spec.operator for spec in wanted.specifier}
    assert operators == {">=", "<"}, wanted  # a range: no pin, no open upper end
    pin = _torch(_constraints())
    (exact,) = pin.specifier
    assert exact.operator == "==", pin
    assert wanted.specifier.contains(exact.version), (exact.version, str(wanted.specifier))
    installed = Version(metadata.version("torch")).public  # 2.13.0+cpu is 2.13.0
    assert pin.specifier.contains(installed), installed


def test_ci_readme_and_nox_install_with_the_constraints() -> None:
    """``.ci/run``, the README's set-up command and its GPU paragraph, and the nox targets
    install with ``-c constraints.txt``: no install of the repository picks another torch."""
    ci = [line for line in (REPO / ".ci" / "run").read_text("utf-8").splitlines() if "-e " in line]
    assert ci and all("pip install" in line and "-c constraints.txt" in line for line in ci), ci
    readme = (REPO / "README.md").read_text("utf-8")
    setup = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"pip install -e [^&`;\n]*", setup)
    assert len(commands) >= 2, commands  # the set-up command and the GPU paragraph
    assert all(c.rstrip().endswith("-c constraints.txt") for c in commands), commands
    assert "torch==" not in setup.replace("`", "")  # the pin is named by its file, not copied
    nox = (REPO / "noxfile.py").read_text("utf-8")
    installs = re.findall(r"session\.install\(([^)]*)\)", nox)
    assert installs and all('"-c", "constraints.txt"' in args for args in installs), installs


@pytest.mark.parametrize(
    ("script", "module"), [("elmo-bench", "experiments.__main__"), ("bilm", "bilm.__main__")]
)
def test_console_scripts_are_the_module_commands(script: str, module: str) -> None:
    """``elmo-bench …`` runs the very function ``python -m experiments …`` runs (same arguments,
    output and exit status), ``bilm …`` the one of ``python -m bilm …``."""
    scripts = _project()["scripts"]
    assert isinstance(scripts, dict)
    target, _, name = scripts[script].partition(":")
    function = getattr(importlib.import_module(target), name)
    assert callable(function)
    assert function is importlib.import_module(module).main
    installed = {e.name: e.value for e in metadata.entry_points(group="console_scripts")}
    if script in installed:  # an install from an older pyproject.toml lacks it
        assert installed[script] == scripts[script]


def test_licence_and_no_invented_urls() -> None:
    """The licence is the README's (an SPDX expression in the metadata); project URLs are given
    only once the repository has a public address (the README names none)."""
    project = _project()
    readme = (REPO / "README.md").read_text("utf-8")
    licence = readme.split("## Licence", 1)[1].split()[0].rstrip(".")
    assert project["license"] == licence == "Apache-2.0"
    assert metadata.metadata("elmo-bench")["License-Expression"] == licence
    urls = project.get("urls", {})
    assert isinstance(urls, dict)
    for url in urls.values():
        assert url in readme, url
