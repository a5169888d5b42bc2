"""The peer's venv: allennlp-models 2.10.1 beside torch 2.13.0, built from the repository's
recipe (``python -m experiments.peer.venv [--dry-run | --check | --rebuild]``).

allennlp pins torch < 1.13 and can never be a dependency of this project, so the reference
implementation lives in a venv of its own, which :func:`ensure_venv` builds and checks:

* **The recipe** is data, ``allennlp_side/venv.toml``: three pip installs (torch's CPU build
  with numpy and h5py; allennlp and allennlp-models ``--no-deps``, since their declared pins
  cannot be met on Python 3.11; the packages they really import), every version a constraint
  of every pip step, and what the import check asks. One step is not pip: an import-only
  ``torchvision`` stand-in (:data:`STAND_IN`) is written into the venv's ``site-packages``,
  because allennlp imports torchvision for its vision modules (which no peer model uses) and
  PyPI's torchvision does not import beside this torch. :func:`plan` prints every step.
* **Where**: ``$PEER_VENV``, else ``peer/venv`` in the project's cache
  (:func:`bilm.pretrained.cache_root`: ``$ELMO_BENCH_CACHE``, else ``~/.cache/elmo-bench``).
* **Atomic build.** A venv is built in a sibling folder (``.venv.build-<pid>`` beside the final
  path), import-checked and stamped there, and only then renamed into place (an existing venv
  is renamed aside first and deleted after). An interrupted or failed build leaves at most a
  hidden ``.build-`` folder, which the next build deletes; nothing at the final path ever
  looks finished without having passed the check. A venv is not relocatable: its scripts'
  ``#!`` lines, its ``activate`` scripts and ``pyvenv.cfg``'s ``command`` name the folder it was
  created in. So, before the check, those mentions of the build folder are rewritten to the
  final path (the venv's ``bin/python`` is a link to the base interpreter and
  ``pyvenv.cfg``'s ``home`` names that interpreter's folder, so neither moves), and the project
  never runs the venv's scripts anyway: it runs ``bin/python -m allennlp`` and
  ``bin/python -m pip``, which work wherever the folder lies. The alternative, building in
  place under a lock with a completion marker written last, would leave a half-built venv at
  the final path after a crash; a rename cannot.
* **The check** (``allennlp_side/peer_check.py``, run by the venv's Python): every pinned
  version installed, ``allennlp.commands``, the six model families (``crf_tagger``, ``bcn``,
  ``esim``, ``srl``, ``coref``, ``dialog_qa`` registered), transformers, ``_jsonnet`` and the
  stand-in torchvision import, and the project's own peer-side modules (``peer_compat``,
  ``peer_qa``, ``peer_timing``) import with the callback registered. A passed check writes the stamp
  ``peer-venv.json`` into the venv: the recipe's digest, the check's digest (the check
  script, the recipe's check section and the peer-side modules) and the modification time of
  ``site-packages``. While all three match, a venv is taken without starting a process. A
  changed recipe rebuilds the venv; a changed check, a changed ``site-packages`` folder (a
  package removed or added) or a missing stamp (a venv made by hand) re-runs the check, and a
  venv that fails it is rebuilt, in one line saying why. A failure of the project's own
  peer-side modules is reported, not rebuilt (a new venv would not fix it).

Builds and checks of one venv take turns (a lock file beside it), across processes and threads.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bilm.pretrained import cache_root

__all__ = [
    "CHECK_SCRIPT",
    "PEER_SIDE",
    "RECIPE_FILE",
    "STAMP",
    "STAND_IN",
    "Check",
    "Install",
    "Recipe",
    "Step",
    "VenvBuildError",
    "build",
    "build_steps",
    "check",
    "ensure_venv",
    "main",
    "peer_env",
    "peer_venv",
    "plan",
    "venv_state",
]

#: What runs in the peer's venv: the recipe, the check, the peer-side modules.
PEER_SIDE = Path(__file__).with_name("allennlp_side")
#: The recipe (data): the pip steps, every pin, what the check asks.
RECIPE_FILE = PEER_SIDE / "venv.toml"
#: The import check, run by the venv's Python.
CHECK_SCRIPT = PEER_SIDE / "peer_check.py"
#: The stamp a passed check writes into the venv.
STAMP = "peer-venv.json"
#: The pins as a pip constraints file, written into the venv by the build.
CONSTRAINTS = "peer-constraints.txt"
#: ``peer_check.py``'s exit statuses.
_OK, _BROKEN, _FILES = 0, 1, 2

_STAND_IN_DOC = (
    "Import-only stand-in written by the project's peer venv recipe (experiments/peer/venv.py).\n"
    "\n"
    "allennlp 2.10.1 imports torchvision for its vision modules, which no peer model uses, and\n"
    "PyPI's torchvision does not import beside torch 2.13.0's CPU build. Importing works; any\n"
    "attribute raises AttributeError. No distribution metadata is installed, so libraries that\n"
    "ask whether torchvision is installed (transformers) find that it is not.\n"
)
#: The torchvision stand-in, path below ``site-packages`` → source: the modules allennlp
#: imports (``torchvision``, ``torchvision.ops.boxes``), each with a module ``__getattr__``
#: that raises, and ``PEER_STAND_IN`` (what the check looks for).
STAND_IN: dict[str, str] = {
    name: f'"""{title}\n\n{_STAND_IN_DOC}"""\n\nPEER_STAND_IN = True\n\n\n'
    "def __getattr__(name: str) -> object:\n"
    f'    raise AttributeError(f"{module}.{{name}}: torchvision is an import-only stand-in '
    'in the peer venv")\n'
    for name, title, module in (
        ("torchvision/__init__.py", "torchvision (the peer venv's stand-in).", "torchvision"),
        ("torchvision/ops/__init__.py", "torchvision.ops (stand-in).", "torchvision.ops"),
        ("torchvision/ops/boxes.py", "torchvision.ops.boxes (stand-in).", "torchvision.ops.boxes"),
    )
}


class VenvBuildError(RuntimeError):
    """A step of the build failed, or the built venv failed its check."""


def _say(line: str) -> None:
    print(line, flush=True)


def peer_venv() -> Path:
    """``$PEER_VENV``, else ``peer/venv`` in the project's cache (``$ELMO_BENCH_CACHE``, else
    ``~/.cache/elmo-bench``), as an absolute path."""
    env = os.environ.get("PEER_VENV")
    return (Path(env).expanduser() if env else cache_root() / "peer" / "venv").absolute()


# ------------------------------------------------------------------------------- the recipe
@dataclass(frozen=True)
class Install:
    """One pip install of the recipe.

    Attributes:
        name: a short name (``torch``, ``allennlp``, ``runtime``).
        about: what it installs, for the plan and the progress lines.
        packages: ``name==version`` items.
        no_deps: install without the packages' declared requirements (``--no-deps``).
    """

    name: str
    about: str
    packages: tuple[str, ...]
    no_deps: bool = False


@dataclass(frozen=True)
class Recipe:
    """``venv.toml``: the installs, the constraints and what the check asks.

    Attributes:
        installs: the pip installs, in order.
        constraints: more pins, for the dependencies of the installed packages.
        check: the ``[check]`` table (modules, models, peer-side modules, callbacks).
        path: the file it was read from.
    """

    installs: tuple[Install, ...]
    constraints: tuple[str, ...]
    check: Mapping[str, Any]
    path: Path = RECIPE_FILE

    @classmethod
    def load(cls, path: Path = RECIPE_FILE) -> Recipe:
        """Read a recipe file.

        Raises:
            ValueError: an item of an install or constraint list that is not ``name==version``.
        """
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        installs = tuple(
            Install(i["name"], i["about"], tuple(i["packages"]), bool(i.get("no_deps", False)))
            for i in data.get("install", [])
        )
        constraints = tuple(data.get("constraints", {}).get("packages", []))
        recipe = cls(installs, constraints, data.get("check", {}), path)
        for item in recipe.pins:
            name, eq, version = item.partition("==")
            if not (eq and name.strip() and version.strip()):
                raise ValueError(f"{path}: {item!r} is not name==version")
        return recipe

    @property
    def pins(self) -> tuple[str, ...]:
        """Every ``name==version``: the installed packages', then the constraints."""
        return (*(p for i in self.installs for p in i.packages), *self.constraints)

    @property
    def digest(self) -> str:
        """SHA-256 of what a venv is built from: the installs, the constraints and the
        stand-in's sources (not the file's comments, not the check)."""
        data = {
            "installs": [[i.name, list(i.packages), i.no_deps] for i in self.installs],
            "constraints": list(self.constraints),
            "stand_in": STAND_IN,
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    @property
    def check_digest(self) -> str:
        """SHA-256 of what the check tests: the check script, the ``[check]`` table and the
        peer-side modules it imports from this folder."""
        h = hashlib.sha256(json.dumps(dict(self.check), sort_keys=True).encode())
        files = [CHECK_SCRIPT, *(PEER_SIDE / f"{m}.py" for m in self.check.get("peer_modules", []))]
        for path in files:
            h.update(path.name.encode() + b"\0")
            h.update(path.read_bytes() if path.is_file() else b"(missing)")
        return h.hexdigest()


# ------------------------------------------------------------------------------- the check
@dataclass(frozen=True)
class Check:
    """The verdict of ``peer_check.py`` on one venv.

    Attributes:
        status: 0 ok, 1 the venv lacks something (rebuild), 2 a peer-side module of the
            project fails (a rebuild would not help).
        line: the verdict line (``peer venv ok: …`` / ``peer venv broken: …`` / ``peer files
            broken: …``).
    """

    status: int
    line: str

    @property
    def ok(self) -> bool:
        """The venv passed."""
        return self.status == _OK

    @property
    def reason(self) -> str:
        """The verdict without its ``peer …:`` prefix."""
        return self.line.partition(": ")[2] or self.line


def peer_env(
    extra_path: Sequence[Path] = (), base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a process in the peer's venv: ``base`` (default ``os.environ``)
    with the peer-side folder (after ``extra_path``) as the whole ``PYTHONPATH``, no user
    site-packages and no ``PYTHONHOME``."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k != "PYTHONHOME"}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (*extra_path, PEER_SIDE))
    env["PYTHONNOUSERSITE"] = "1"
    return env


def check(python: Path, recipe: Recipe | None = None, extra_path: Sequence[Path] = ()) -> Check:
    """Run the import check with ``python`` (a venv's ``bin/python``).

    Args:
        python: the interpreter to check.
        recipe: the recipe whose pins and ``[check]`` apply (default: the repository's).
        extra_path: folders put before the peer-side folder on ``PYTHONPATH`` (tests).
    """
    recipe = recipe or Recipe.load()
    if not python.exists():
        return Check(_BROKEN, f"peer venv broken: no Python at {python}")
    argv = [str(python), str(CHECK_SCRIPT), "--recipe", str(recipe.path)]
    env = {**peer_env(extra_path), "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    try:
        done = subprocess.run(
            argv, env=env, capture_output=True, text=True, timeout=900, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return Check(_BROKEN, f"peer venv broken: {python} did not run the check ({error})")
    lines = [line for line in done.stdout.splitlines() if line.startswith("peer ")]
    if lines and done.returncode in (_OK, _BROKEN, _FILES):
        return Check(done.returncode, lines[-1])
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    return Check(_BROKEN, f"peer venv broken: the check exited {done.returncode}: {tail[0]}")


# ------------------------------------------------------------------------------- the state
def _site_packages(venv: Path) -> Path:
    """The venv's ``site-packages`` (POSIX layout): the one found, else where this
    interpreter's version puts it."""
    found = sorted(venv.glob("lib/python3.*/site-packages"))
    if len(found) == 1:
        return found[0]
    return venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def _stamp(venv: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((venv / STAMP).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def venv_state(venv: Path, recipe: Recipe | None = None) -> tuple[str, str]:
    """Where a venv stands, without starting a process: ``(state, why)``.

    States: ``ready`` (its stamp matches the recipe, the check and its ``site-packages``),
    ``missing`` (nothing there), ``other recipe`` (built from another recipe: rebuild),
    ``unchecked`` (no stamp, or the check or ``site-packages`` changed since: check it).
    """
    recipe = recipe or Recipe.load()
    if not (venv.exists() or venv.is_symlink()):
        return "missing", f"no venv at {venv}"
    stamp = _stamp(venv)
    if stamp is None:
        return "unchecked", "it has no stamp of a passed check"
    if stamp.get("recipe") != recipe.digest:
        return "other recipe", "it was built from another recipe"
    python = venv / "bin" / "python"
    if not python.exists():
        return "unchecked", f"{python} is missing"
    if stamp.get("check") != recipe.check_digest:
        return "unchecked", "the check changed since it passed"
    site = venv / str(stamp.get("site_packages", ""))
    if not stamp.get("site_packages") or _mtime(site) != stamp.get("site_packages_mtime_ns"):
        return "unchecked", "its site-packages changed since it passed its check"
    return "ready", "its stamp matches the recipe and the check"


def _write_stamp(venv: Path, recipe: Recipe, verdict: Check, built_at: Path | None = None) -> None:
    """The stamp of a passed check (``built_at``: where the venv lies now, when that is not
    ``venv``, its final path)."""
    where = built_at or venv
    site = _site_packages(where)
    stamp = {
        "recipe": recipe.digest,
        "check": recipe.check_digest,
        "site_packages": site.relative_to(where).as_posix(),
        "site_packages_mtime_ns": _mtime(site),
        "verdict": verdict.line,
        "checked": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    partial = where / f"{STAMP}.partial"
    partial.write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")
    os.replace(partial, where / STAMP)


# ------------------------------------------------------------------------------- the build
@dataclass(frozen=True)
class Step:
    """One step of a build: a command, or an action of this module.

    Attributes:
        title: what it does (the progress line).
        argv: the command, or ``None`` for an action.
        action: what the step does when it is not a command.
        detail: what an action does, for the plan.
    """

    title: str
    argv: tuple[str, ...] | None = None
    action: Callable[[], None] | None = field(default=None, compare=False, repr=False)
    detail: str = ""

    def describe(self) -> str:
        """The step as the plan shows it: its command, or what the action does."""
        return shlex.join(self.argv) if self.argv is not None else self.detail


def _building(venv: Path) -> Path:
    """The sibling folder this process builds ``venv`` in."""
    return venv.with_name(f".{venv.name}.build-{os.getpid()}")


def build_steps(venv: Path, recipe: Recipe | None = None) -> list[Step]:
    """The steps that build ``venv`` from ``recipe`` (in its sibling build folder), in order;
    the last moves the checked venv into place."""
    recipe = recipe or Recipe.load()
    tmp = _building(venv)
    python = tmp / "bin" / "python"
    constraints = tmp / CONSTRAINTS
    site = _site_packages(tmp)
    pip: tuple[str, ...] = (str(python), "-m", "pip", "install", "--disable-pip-version-check")
    pip += ("--no-input", "--progress-bar", "off", "-c", str(constraints))
    steps = [
        Step("create the venv", (sys.executable, "-m", "venv", str(tmp))),
        Step(
            "write the pins",
            action=lambda: _write_constraints(constraints, recipe),
            detail=f"every pin of the recipe into {constraints} (pip's -c of every install)",
        ),
    ]
    for install in recipe.installs:
        flags = ("--no-deps",) if install.no_deps else ()
        steps.append(Step(f"install {install.about}", (*pip, *flags, *install.packages)))
    steps += [
        Step(
            "write the torchvision stand-in",
            action=lambda: _write_stand_in(site),
            detail=f"{', '.join(STAND_IN)} into {site} (import-only; no distribution metadata)",
        ),
        Step(
            "point the venv's scripts at its final path",
            action=lambda: _repoint(tmp, venv),
            detail=f"{tmp} → {venv} in bin/ scripts' #! lines, activate scripts, pyvenv.cfg",
        ),
        Step(
            "import check",
            action=lambda: _check_built(tmp, venv, recipe),
            detail=f"{python} {CHECK_SCRIPT} (PYTHONPATH={PEER_SIDE}); then the stamp {STAMP}",
        ),
        Step(
            "move it into place",
            action=lambda: _move_into_place(tmp, venv),
            detail=f"rename {tmp} → {venv} (an existing venv is renamed aside, then deleted)",
        ),
    ]
    return steps


def _write_constraints(path: Path, recipe: Recipe) -> None:
    text = f"# every pin of {recipe.path.name} (digest {recipe.digest[:12]})\n"
    path.write_text(text + "".join(f"{p}\n" for p in recipe.pins), encoding="utf-8")


def _write_stand_in(site: Path) -> None:
    for name, source in STAND_IN.items():
        path = site / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")


def _repoint(tmp: Path, venv: Path) -> None:
    """Rewrite the mentions of the build folder in the venv's ``bin/`` text files and its
    ``pyvenv.cfg`` to the final path."""
    old, new = str(tmp).encode(), str(venv).encode()
    files = [tmp / "pyvenv.cfg", *(tmp / "bin").iterdir()] if (tmp / "bin").is_dir() else []
    for path in files:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > 1 << 20:
            continue
        data = path.read_bytes()
        if old in data and b"\0" not in data:
            mode = path.stat().st_mode
            path.write_bytes(data.replace(old, new))
            path.chmod(mode)


def _check_built(tmp: Path, venv: Path, recipe: Recipe) -> None:
    verdict = check(tmp / "bin" / "python", recipe)
    if not verdict.ok:
        raise VenvBuildError(f"the new venv failed its import check: {verdict.reason}")
    _write_stamp(venv, recipe, verdict, built_at=tmp)


def _looks_like_a_venv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file() or (path.is_dir() and not any(path.iterdir()))


def _move_into_place(tmp: Path, venv: Path) -> None:
    aside = None
    if venv.exists() or venv.is_symlink():
        aside = venv.with_name(f".{venv.name}.old-{os.getpid()}")
        os.rename(venv, aside)
    os.rename(tmp, venv)
    if aside is not None:
        if aside.is_symlink() or aside.is_file():
            aside.unlink()
        else:
            shutil.rmtree(aside, ignore_errors=True)


def _run_step(step: Step, log: Path) -> None:
    """Run one step; a command's output is appended to ``log``.

    Raises:
        VenvBuildError: the command failed (the message ends with the log's last lines).
    """
    if step.argv is None:
        assert step.action is not None
        step.action()
        return
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["PYTHONNOUSERSITE"] = "1"  # pip must see the new venv's packages only
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"\n$ {step.describe()}\n")
        handle.flush()
        done = subprocess.run(
            list(step.argv), stdout=handle, stderr=subprocess.STDOUT, env=env, check=False
        )
    if done.returncode != 0:
        tail = "".join(log.read_text(encoding="utf-8").splitlines(keepends=True)[-12:])
        raise VenvBuildError(f"{step.title} failed (exit {done.returncode}; log {log}):\n{tail}")


def _leftovers(venv: Path) -> list[Path]:
    """Unfinished builds and venvs set aside by earlier processes."""
    if not venv.parent.is_dir():
        return []
    found = [*venv.parent.glob(f".{venv.name}.build-*"), *venv.parent.glob(f".{venv.name}.old-*")]
    return sorted(found)


def _remove_leftovers(venv: Path, echo: Callable[[str], None]) -> None:
    for old in _leftovers(venv):
        echo(f"peer: removing {old} (left by an unfinished build)")
        shutil.rmtree(old, ignore_errors=True)


def _size(path: Path) -> int:
    total = 0
    for root, _, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def build(venv: Path, recipe: Recipe | None = None, echo: Callable[[str], None] = _say) -> None:
    """Build ``venv`` from ``recipe`` in its sibling build folder and move it into place
    (hold :func:`_locked` around it). A failure or an interrupt removes the build folder and
    leaves what was at ``venv`` as it was.

    Raises:
        VenvBuildError: a step failed, or ``venv`` exists and is not a venv.
    """
    recipe = recipe or Recipe.load()
    if (venv.exists() or venv.is_symlink()) and not _looks_like_a_venv(venv):
        raise VenvBuildError(
            f"{venv} exists and is not a venv (no pyvenv.cfg): move it, or name another folder "
            "with $PEER_VENV"
        )
    venv.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(venv, echo)
    steps = build_steps(venv, recipe)
    tmp = _building(venv)
    log = venv.with_name(f"{venv.name}-build.log")
    log.write_text(f"peer venv build of {venv} from {recipe.path}\n", encoding="utf-8")
    started = time.monotonic()
    try:
        for number, step in enumerate(steps, 1):
            echo(f"peer venv [{time.strftime('%H:%M:%S')}] {number}/{len(steps)} {step.title}")
            _run_step(step, log)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    minutes = (time.monotonic() - started) / 60
    echo(f"peer: the venv at {venv} is ready ({minutes:.1f} min, {_size(venv) / 1e9:.2f} GB)")


@contextlib.contextmanager
def _locked(venv: Path, echo: Callable[[str], None]) -> Iterator[None]:
    """Hold ``.<name>.lock`` beside ``venv`` (builds and checks of one venv take turns)."""
    import fcntl

    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.with_name(f".{venv.name}.lock"), "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            echo(f"peer: waiting for another build or check of the venv at {venv}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_venv(
    venv: Path | None = None,
    recipe: Recipe | None = None,
    echo: Callable[[str], None] = _say,
    rebuild: bool = False,
) -> Path:
    """The peer venv's Python, built or rebuilt from the recipe when it is missing, built from
    another recipe or fails its import check (see the module's docstring).

    Args:
        venv: the venv (default :func:`peer_venv`).
        recipe: the recipe (default the repository's ``venv.toml``).
        echo: where progress lines go.
        rebuild: build afresh whatever is there.

    Raises:
        VenvBuildError: the build failed, or the project's peer-side modules fail in the venv.
    """
    venv = (venv or peer_venv()).absolute()
    recipe = recipe or Recipe.load()
    python = venv / "bin" / "python"
    with _locked(venv, echo):
        _remove_leftovers(venv, echo)  # no build runs while the lock is held
        state, why = venv_state(venv, recipe)
        if state == "ready" and not rebuild:
            return python
        if rebuild:
            echo(f"peer: rebuilding the venv at {venv} (asked)")
        elif state == "missing":
            echo(
                f"peer: building the allennlp venv at {venv} from {_shown(recipe.path)} "
                "(a few minutes; `python -m experiments.peer.venv --dry-run` lists the steps)"
            )
        elif state == "other recipe":
            echo(f"peer: the venv at {venv} was built from another recipe: rebuilding it")
        else:
            verdict = check(python, recipe)
            if verdict.ok:
                _write_stamp(venv, recipe, verdict)
                echo(f"peer: the venv at {venv} passes its import check ({why}): taken")
                return python
            if verdict.status == _FILES:
                raise VenvBuildError(f"the project's peer-side modules fail: {verdict.reason}")
            echo(
                f"peer: the venv at {venv} fails its import check ({verdict.reason}): rebuilding it"
            )
        build(venv, recipe, echo)
    return python


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it."""
    repo = PEER_SIDE.parents[2]
    return path.relative_to(repo).as_posix() if path.is_relative_to(repo) else str(path)


def plan(venv: Path | None = None, recipe: Recipe | None = None) -> str:
    """What :func:`ensure_venv` would do, as text: the venv's folder and state (from its stamp
    alone), every step with its command, and the pins. Touches nothing, starts nothing."""
    venv = (venv or peer_venv()).absolute()
    recipe = recipe or Recipe.load()
    state, why = venv_state(venv, recipe)
    lines = [
        f"peer venv: {venv}",
        "  ($PEER_VENV, else peer/venv in the project's cache: $ELMO_BENCH_CACHE, else "
        "~/.cache/elmo-bench)",
        f"now: {state} ({why})",
        f"recipe: {_shown(recipe.path)} (digest {recipe.digest[:12]})",
        f"built in {_building(venv)}, then renamed into place; pip output in "
        f"{venv.with_name(venv.name + '-build.log')}",
        "steps:",
    ]
    for number, step in enumerate(build_steps(venv, recipe), 1):
        lines += [f"  {number}. {step.title}", f"     {step.describe()}"]
    lines.append("pins (the constraints of every pip install):")
    no_deps = {p for i in recipe.installs if i.no_deps for p in i.packages}
    lines += [f"  {p}" + ("  (--no-deps)" if p in no_deps else "") for p in recipe.pins]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m experiments.peer.venv``: build or check the peer venv, or print the plan.

    Returns:
        0 when the venv is ready (or the plan was printed), 1 when the check or build failed.
    """
    parser = argparse.ArgumentParser(
        prog="python -m experiments.peer.venv",
        description="Build (when needed) and check the peer's allennlp venv from the "
        "repository's recipe (experiments/peer/allennlp_side/venv.toml).",
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument(
        "--dry-run", action="store_true", help="print the steps and pins; touch nothing"
    )
    what.add_argument(
        "--check", action="store_true", help="run the import check on the venv as it is"
    )
    what.add_argument("--rebuild", action="store_true", help="build afresh whatever is there")
    parser.add_argument("--venv", type=Path, help="the venv (default: $PEER_VENV, else the cache)")
    args = parser.parse_args(argv)
    venv = (args.venv or peer_venv()).absolute()
    if args.dry_run:
        print(plan(venv))
        return 0
    if args.check:
        verdict = check(venv / "bin" / "python")
        print(verdict.line)
        return 0 if verdict.ok else 1
    try:
        python = ensure_venv(venv, rebuild=args.rebuild)
    except VenvBuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"peer: {python} ({venv_state(venv)[1]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
