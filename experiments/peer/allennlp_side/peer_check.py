"""Check that the Python running this file is a usable peer venv (runs there, not here).

    PEER_PYTHON peer_check.py [--recipe venv.toml]

with this folder on ``PYTHONPATH``. It asks of the venv what ``venv.toml`` (beside this file)
says, in three stages, and stops at the first that fails:

1. every pinned distribution is installed at its version (a local label such as ``+cpu`` is
   allowed);
2. the ``[check]`` modules import (allennlp's ``train`` command, the model families, the
   transformers and ``_jsonnet`` it needs, the torchvision stand-in, which must be the one the
   recipe wrote into this venv), and the listed model types are registered;
3. this folder's modules that run in the venv (``peer_compat``, ``peer_timing``) import and the
   trainer callback is registered.

The last line printed is the verdict: ``peer venv ok: …`` (exit 0), ``peer venv broken: …``
(exit 1: the venv lacks something; rebuilding it helps) or ``peer files broken: …`` (exit 2:
one of this folder's modules fails; rebuilding the venv does not help). Standard library only
until stage 2; never imported by the project (:mod:`experiments.peer.venv` starts it).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tomllib
import traceback
import warnings
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

OK, BROKEN, FILES = 0, 1, 2


def pins(recipe: dict[str, Any]) -> dict[str, str]:
    """Every ``name==version`` of the recipe (installed packages and constraints)."""
    items = [p for step in recipe.get("install", []) for p in step["packages"]]
    items += recipe.get("constraints", {}).get("packages", [])
    found = {}
    for item in items:
        name, _, wanted = item.partition("==")
        found[name.strip()] = wanted.strip()
    return found


def version_problems(wanted: dict[str, str]) -> list[str]:
    """The pinned distributions that are missing or at another version."""
    problems = []
    for name, want in wanted.items():
        try:
            got = version(name)
        except PackageNotFoundError:
            problems.append(f"{name} not installed")
            continue
        if got.split("+")[0] != want:
            problems.append(f"{name} {got} (wants {want})")
    return problems


def _failure(error: BaseException) -> str:
    """An exception as one line: its type, message and the innermost frame's file (not
    importlib's own frames)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename[:1] != "<"]
    where = f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    message = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {message}{where}"


def venv_problems(check: dict[str, Any]) -> list[str]:
    """Stage 2: the modules that fail to import, a torchvision that is not the stand-in, model
    types that are not registered."""
    problems = []
    for name in check.get("modules", []):
        try:
            module = importlib.import_module(name)
        except Exception as error:  # an ImportError, or anything its import raises
            return [f"import {name}: {_failure(error)}"]
        if name == "torchvision":
            inside = (
                Path(module.__file__ or "").resolve().is_relative_to(Path(sys.prefix).resolve())
            )
            if not getattr(module, "PEER_STAND_IN", False) or not inside:
                problems.append(
                    f"torchvision at {module.__file__} is not the recipe's stand-in in this venv"
                )
    if check.get("models"):
        from allennlp.models import Model

        problems += _unregistered(Model, check["models"], "allennlp model type")
    return problems


def file_problems(check: dict[str, Any]) -> list[str]:
    """Stage 3: this folder's modules that fail to import, callbacks not registered."""
    for name in check.get("peer_modules", []):
        try:
            importlib.import_module(name)
        except Exception as error:
            return [f"import {name}: {_failure(error)}"]
    problems = []
    if check.get("callbacks"):
        from allennlp.training.callbacks.callback import TrainerCallback

        problems += _unregistered(TrainerCallback, check["callbacks"], "trainer callback")
    return problems


def _unregistered(registry: Any, names: list[str], what: str) -> list[str]:
    """One problem per name of ``names`` that allennlp's ``registry`` does not list."""
    known = set(registry.list_available())
    return [f"{what} {name!r} not registered" for name in names if name not in known]


def main(argv: list[str] | None = None) -> int:
    """Run the three stages; print the verdict; return its exit status."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--recipe", type=Path, default=Path(__file__).with_name("venv.toml"))
    args = parser.parse_args(argv)
    recipe = tomllib.loads(args.recipe.read_text(encoding="utf-8"))
    problems = version_problems(pins(recipe))
    if problems:
        print("peer venv broken: " + "; ".join(problems))
        return BROKEN
    warnings.filterwarnings("ignore")
    check = recipe.get("check", {})
    problems = venv_problems(check)
    if problems:
        print("peer venv broken: " + "; ".join(problems))
        return BROKEN
    problems = file_problems(check)
    if problems:
        print("peer files broken: " + "; ".join(problems))
        return FILES
    found = ", ".join(
        f"{name} {_installed(name)}" for name in ("allennlp", "allennlp-models", "torch")
    )
    registered = [*check.get("models", []), *check.get("callbacks", [])]
    print(
        f"peer venv ok: {found}, Python {sys.version.split()[0]}; registered: "
        f"{', '.join(registered) or 'nothing asked'}"
    )
    return OK


def _installed(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "(not installed)"


if __name__ == "__main__":
    raise SystemExit(main())
