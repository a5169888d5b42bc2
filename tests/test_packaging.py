"""The wheel carries the library and the harness: installed into a fresh virtual environment, it
runs ``python -m experiments --help`` and one tiny run outside the repository (slow: it installs
torch and the harness's dependencies into the new environment). Its metadata asks for a torch
range (the tested pin lives in ``constraints.txt``, which every install command of the repository
uses), names its licence, and declares the console scripts ``elmo-bench`` and ``bilm``."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.conftest import REPO


@pytest.mark.slow
def test_wheel_installs_and_runs_the_harness(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(REPO)],
        check=True,
        timeout=900,
    )
    (wheel,) = dist.glob("elmo_bench-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "bilm/data/elmo-bench-small-en.safetensors",
        "tasks/core.py",
        "tasks/registry.py",
        "tasks/representations/__init__.py",
        "tasks/squad/demo.py",
        "experiments/runner.py",
        "experiments/paper.toml",
    ):
        assert required in names, required
    assert not any(n.startswith("tests/") for n in names)
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
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["HOME"] = str(tmp_path / "home")  # demo set and caches land here, not in the repository
    done = subprocess.run(
        [str(python), "-m", "experiments", "--help"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "sweep" in done.stdout, done.stderr[-2000:]
    tiny = [
        str(python),
        "-m",
        "experiments",
        "run",
        "squad",
        "--repr",
        "none",
        "--limit",
        "20",
        "--quiet",
        "--set",
        "word_vectors=random:4",
        "hidden=4",
        "char_filters=4",
        "train.epochs=1",
    ]
    done = subprocess.run(tiny, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert '"dev_f1"' in done.stdout
    assert any((cwd / "runs" / "store" / "squad").iterdir())


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
