"""Second processes of the store and sweep tests: a rival writer of a store, a process that
holds a run's claim. Run as ``python -m tests.experiments.store_workers COMMAND ...`` (from the
repository root, or with it on ``PYTHONPATH``); also imported by the tests for the fake
identities both sides must agree on.

Every worker signals that it is ready (its imports done) by creating a file, then waits for a
"go" file, so that the test decides when the racing part starts.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from experiments.run.identity import RunIdentity
from experiments.run.spec import RunSpec
from experiments.run.store import ResultsStore, RunExistsError, RunRecord
from tests.experiments.helpers import make_record, make_spec

#: How long a worker waits for its "go" file before giving up (a test that died).
GO_TIMEOUT_S = 60.0
REPO = Path(__file__).resolve().parents[2]


def fake_identity(data: str = "d1", **changes: object) -> RunIdentity:
    """A :class:`RunIdentity` without files or code behind it: ``data`` stands for the data's
    fingerprint and the digest of its one file ``train.txt``."""
    identity = RunIdentity(
        data=data,
        representation="r1",
        config="c1",
        device_kind="cpu",
        precision="fp32",
        threads=1,
        task_result_version=1,
        harness_result_version=1,
        data_files={"train.txt": data},
    )
    return dataclasses.replace(identity, **changes)  # type: ignore[arg-type]


def identified_record(spec: RunSpec, value: float, identity: RunIdentity) -> RunRecord:
    """:func:`make_record` whose provenance carries ``identity`` (as ``run_spec`` writes it)."""
    record = make_record(spec, value)
    provenance = dataclasses.replace(record.provenance, identity=identity.to_dict())
    return dataclasses.replace(record, provenance=provenance)


def wait_for(path: Path, timeout: float = GO_TIMEOUT_S) -> None:
    """Poll (every 0.5 ms) until ``path`` exists.

    Raises:
        TimeoutError: it did not appear within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear within {timeout} s")
        time.sleep(0.0005)


def put(root: Path, value: float, ready: Path, go: Path) -> int:
    """Put the record of ``make_spec()`` with ``value`` once ``go`` exists; print ``won VALUE``
    or ``lost VALUE`` (another writer stored the run first)."""
    record = make_record(make_spec(), value)
    store = ResultsStore(root)
    ready.write_text(str(os.getpid()), encoding="utf-8")
    wait_for(go)
    try:
        store.put(record)
    except RunExistsError:
        print(f"lost {value}", flush=True)
    else:
        print(f"won {value}", flush=True)
    return 0


def hold(root: Path, seed: int, ready: Path, go: Path, data: str | None, value: float) -> int:
    """Claim the run of ``make_spec(seed=seed)``, create ``ready``, wait for ``go``; then, when
    ``data`` is given, store the run (identity :func:`fake_identity` of ``data``), and give the
    claim up. Exit status 3 when the run was already claimed."""
    store = ResultsStore(root)
    spec = make_spec(seed=seed)
    claim = store.claim(spec, wait=False)
    if claim is None:
        print("already claimed", file=sys.stderr)
        return 3
    ready.write_text(str(os.getpid()), encoding="utf-8")
    wait_for(go)
    if data is not None:
        store.put(identified_record(spec, value, fake_identity(data)))
    claim.release()
    return 0


def start(*args: str) -> subprocess.Popen[str]:
    """Start ``python -m tests.experiments.store_workers ARGS`` (stdout and stderr piped)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "tests.experiments.store_workers", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def await_ready(ready: Path, process: subprocess.Popen[str], timeout: float = 60.0) -> None:
    """Wait until a worker created its ``ready`` file.

    Raises:
        AssertionError: the worker exited first (its stderr is in the message) or took longer
            than ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while not ready.exists():
        if process.poll() is not None:
            _, err = process.communicate()
            raise AssertionError(f"worker exited with {process.returncode}: {err}")
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError(f"worker did not get ready within {timeout} s")
        time.sleep(0.01)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line of the workers (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="store_workers")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("put")
    p.add_argument("root", type=Path)
    p.add_argument("value", type=float)
    p.add_argument("ready", type=Path)
    p.add_argument("go", type=Path)
    h = sub.add_parser("hold")
    h.add_argument("root", type=Path)
    h.add_argument("seed", type=int)
    h.add_argument("ready", type=Path)
    h.add_argument("go", type=Path)
    h.add_argument("--data", help="store the run with fake_identity(DATA) before releasing")
    h.add_argument("--value", type=float, default=0.5)
    args = parser.parse_args(argv)
    if args.command == "put":
        return put(args.root, args.value, args.ready, args.go)
    return hold(args.root, args.seed, args.ready, args.go, args.data, args.value)


if __name__ == "__main__":
    sys.exit(main())
