"""A run is resolved once: from the command line to the training loop, each run's
task is looked up in the registry once, its configuration built once and its identity computed
once, and the one :class:`~experiments.run.resolve.ResolvedRun` is handed down (the check, the reuse
decision, the set-up, the checkpoint and the record read it).

Calls are counted by a profile hook on the functions' code objects, so every entry counts,
however the caller reached the function (a module-level import, a lazy one, a bound method).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from experiments.cli import main
from experiments.run import identity
from experiments.run.resolve import Resolver, identified, resolve
from experiments.run.spec import RunSpec
from tasks import registry
from tasks.core import TaskSpec
from tests.experiments.helpers import cli_dirs
from tests.experiments.toy_task import registered

#: What resolving a run means: the registry lookup, the configuration, the identity and the
#: identity's parts (each of them is entered once per run, and by nothing else).
COUNTED: tuple[Callable[..., Any], ...] = (
    registry.get_task,
    TaskSpec.configure,
    identity.run_identity,
    identity.resolved_config,
    identity.data_identity,
    identity.representation_identity,
    identity.device_kind,
)
#: Where a command builds its specs: the command line looks its task up once, planning asks it
#: for the preset's ELMo configuration (once per command, not per run).
SPEC_BUILDING = ("experiments.cli.runs", "experiments.plan.specs")


@contextlib.contextmanager
def calls() -> Iterator[Counter[tuple[str, str]]]:
    """``(function, calling module) → entries`` of the :data:`COUNTED` functions in the block."""
    names = {f.__code__: f.__qualname__ for f in COUNTED}
    counts: Counter[tuple[str, str]] = Counter()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code in names:
            caller = frame.f_back.f_globals.get("__name__", "?") if frame.f_back else "?"
            counts[names[frame.f_code], caller] += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield counts
    finally:
        sys.setprofile(previous)


def per_function(
    counts: Counter[tuple[str, str]], skip: tuple[str, ...] = SPEC_BUILDING
) -> dict[str, int]:
    """Entries per function, leaving out those from ``skip`` (the command's spec building)."""
    out: Counter[str] = Counter()
    for (name, caller), n in counts.items():
        if caller not in skip:
            out[name] += n
    return dict(out)


def resolved_once(runs: int) -> dict[str, int]:
    """What resolving ``runs`` runs once each enters (the configuration is passed to the
    identity, so it does not configure the task again)."""
    per_run = {
        "get_task": 1,
        "TaskSpec.configure": 1,
        "run_identity": 1,
        "data_identity": 1,
        "representation_identity": 1,
        "device_kind": 1,
    }
    return {name: n * runs for name, n in per_run.items()}


def test_a_command_resolves_each_run_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "toy", "--repr", "none", "--seeds", "0,1", "--max-epochs", "1"]
    with registered(tmp_path / "toy-demo"), calls() as counts:
        assert main([*argv, *cli_dirs(tmp_path)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len({line["run_id"] for line in lines}) == 2  # two runs trained
    assert per_function(counts) == resolved_once(runs=2)
    lookups = [
        caller for (name, caller), n in counts.items() if name == "get_task" for _ in range(n)
    ]
    assert [c for c in lookups if c not in SPEC_BUILDING] == ["experiments.run.resolve"] * 2
    assert [c for c in lookups if c in SPEC_BUILDING] == ["experiments.cli.runs"]  # once


def test_a_replay_resolves_its_run_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``run --spec``: the check, the comparison with the recorded identity, the reuse decision
    and the run share one resolution (the run trains again into another store)."""
    with registered(tmp_path / "toy-demo"):
        argv = ["run", "toy", "--repr", "none", "--max-epochs", "1"]
        assert main([*argv, *cli_dirs(tmp_path / "first")]) == 0
        (line,) = capsys.readouterr().out.splitlines()
        run_id = json.loads(line)["run_id"]
        spec_file = tmp_path / "first" / "store" / "toy" / run_id / "spec.json"
        with calls() as counts:
            assert main(["run", "--spec", str(spec_file), *cli_dirs(tmp_path / "again")]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[0])["run_id"] == run_id
    assert per_function(counts, skip=()) == resolved_once(runs=1)  # no spec building here


def test_the_resolver_keeps_one_object_per_run_and_forgets_it_when_pickled(
    tmp_path: Path,
) -> None:
    import pickle

    with registered(tmp_path / "toy-demo"):
        spec = RunSpec(task="toy", task_version=1, representation="none", sites=(), dropout=0.0)
        resolver = Resolver(device="cpu", threads=1)
        checked = resolver.resolve(spec)
        assert checked.identity is None and checked.task is registry.get_task("toy")
        run = resolver(spec)
        assert run.identity is not None and resolver(spec) is run
        assert resolver.resolve(spec) is run and resolver.identify(spec) is run.identity
        assert run.identity == identity.run_identity(spec, device="cpu", threads=1)
        assert identified(run) is run  # an identified run is not identified again
        assert run.reuse_key == identity.reuse_key(run.identity.to_dict())
        assert resolve(spec).reuse_key == ""  # not identified: checkpoints are not checked
        copy = pickle.loads(pickle.dumps(resolver))
        assert copy._runs == {} and (copy.device, copy.threads) == ("cpu", 1)
