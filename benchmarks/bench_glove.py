"""GloVe text → memory-mapped matrix: the old per-run parse against convert-once-then-mmap.

Writes a synthetic GloVe-format text file (``--rows`` × ``--dim``, random words, fixed seed;
2,000,000 × 300 by default, about 5 GB like GloVe 840B) into a temporary folder, then measures,
each phase in a fresh Python process (so peak RSS is the phase's own):

* ``old``: the former path, a plain line-by-line parse of the whole file into a word → row dict
  and a matrix (reference implementation kept here), then a ``--vocab``-word task matrix;
* ``first``: the first run, :func:`tasks.common.vectors.open_vectors` converting the file;
* ``later``: later runs, the memory-mapped open plus the ``--vocab``-word task matrix (median
  over ``--repeats``).

All three must build the same task matrix (bit-identical; checked by digest). The temporary
folder (text file and cache entry) is deleted afterwards unless ``--keep``.

Usage::

    nice -n 19 python benchmarks/bench_glove.py               # full size, several minutes
    nice -n 19 python benchmarks/bench_glove.py --rows 200000 # quick check
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def write_synthetic(path: Path, rows: int, dim: int, seed: int = 0) -> None:
    """``rows`` lines ``word v1 … v_dim`` (random lowercase words, N(0, 1) values, 5 decimals)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    row_format = " ".join(["%.5f"] * dim)
    block = 20_000
    with path.open("w", encoding="utf-8", newline="\n") as out:
        for start in range(0, rows, block):
            n = min(block, rows - start)
            lengths = rng.integers(3, 12, n)
            chars = letters[rng.integers(0, 26, (n, 12))]
            values = rng.standard_normal((n, dim)).astype(np.float32)  # (n, dim)
            lines = [
                "".join(chars[i, : lengths[i]]) + f"{start + i:x} " + row_format % tuple(values[i])
                for i in range(n)
            ]
            out.write("\n".join(lines) + "\n")


def task_vocab(words_path: Path, size: int, seed: int = 1) -> list[str]:
    """``size`` words: 90% drawn from the file's words (some capitalised), 10% unknown."""
    words: list[str] = []
    with words_path.open(encoding="utf-8") as handle:
        for line in handle:
            words.append(line.split(" ", 1)[0])
    rng = np.random.default_rng(seed)
    picked = [words[i] for i in rng.integers(0, len(words), size - size // 10)]
    picked = [w.capitalize() if k % 7 == 0 else w for k, w in enumerate(picked)]
    return picked + [f"unknownword{k}" for k in range(size // 10)]


def old_parse(path: Path) -> tuple[list[str], np.ndarray]:
    """The former reader: every line parsed with ``np.asarray(fields, float32)`` on every run
    (also the bit-exactness reference of ``tests/tasks/common/test_vectors.py``)."""
    rows: list[np.ndarray] = []
    words: list[str] = []
    dim: int | None = None
    with path.open("r", encoding="utf-8", newline="\n") as handle:
        for line_no, line in enumerate(handle, start=1):
            parts = line.rstrip("\n").rstrip(" ").split(" ")
            if line_no == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue
            if len(parts) < 2:
                continue
            if dim is None:
                dim = len(parts) - 1
            rows.append(np.asarray(parts[-dim:], dtype=np.float32))
            words.append(" ".join(parts[:-dim]))
    return words, np.stack(rows)  # (rows, dim)


def first_rows(words: list[str]) -> dict[str, int]:
    """Word → its first row (a duplicate word keeps its first vector)."""
    index: dict[str, int] = {}
    for row, word in enumerate(words):
        index.setdefault(word, row)
    return index


def old_table(index: dict[str, int], matrix: np.ndarray, vocab: list[str]) -> np.ndarray:
    """The task matrix the former ``word_vectors`` built (cased, lowercase fallback)."""
    out = np.zeros((len(vocab), matrix.shape[1]), np.float32)
    for i, w in enumerate(vocab):
        row = index.get(w, index.get(w.lower()))
        if row is not None:
            out[i] = matrix[row]
    return out


def run_phase(phase: str, text: Path, vocab_file: Path) -> dict[str, float | str]:
    """One phase in this process: seconds, peak RSS (MB) and the task matrix's digest."""
    vocab = vocab_file.read_text(encoding="utf-8").split("\n")
    sys.path.insert(0, str(REPO))
    import bilm.pretrained  # noqa: F401  (torch: loaded in any real run; not timed)
    from tasks.common.vectors import open_vectors  # imported before the clock starts

    started = time.perf_counter()
    if phase == "old":
        words, matrix = old_parse(text)
        table = old_table(first_rows(words), matrix, vocab)
    else:
        store = open_vectors(text, progress=phase == "first")
        table = store.table(vocab, lowercase=False)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"seconds": seconds, "peak_rss_mb": peak_mb, "digest": _digest(table)}


def _digest(table: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(table).tobytes()).hexdigest()[:16]


def _child(phase: str, text: Path, vocab_file: Path, cache: Path) -> dict[str, float | str]:
    env = {**os.environ, "ELMO_BENCH_CACHE": str(cache), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, __file__, "--phase", phase, str(text), str(vocab_file)]
    done = subprocess.run(cmd, env=env, check=True, stdout=subprocess.PIPE, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the phases, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--dim", type=int, default=300)
    parser.add_argument("--vocab", type=int, default=50_000, help="task vocabulary size")
    parser.add_argument("--repeats", type=int, default=3, help="later runs (median reported)")
    parser.add_argument("--dir", type=Path, default=None, help="parent of the temp folder")
    parser.add_argument("--keep", action="store_true", help="keep the text file and the cache")
    parser.add_argument("--skip-old", action="store_true", help="do not time the old parse")
    parser.add_argument(
        "--phase", nargs=3, metavar=("PHASE", "TEXT", "VOCAB"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.phase:
        phase, text, vocab_file = args.phase
        print(json.dumps(run_phase(phase, Path(text), Path(vocab_file))))
        return
    folder = Path(tempfile.mkdtemp(prefix="bench_glove-", dir=args.dir))
    text, vocab_file, cache = folder / "synthetic.txt", folder / "vocab.txt", folder / "cache"
    print(
        f"machine: {os.cpu_count()} cores ({len(os.sched_getaffinity(0))} usable), "
        f"python {sys.version.split()[0]}, numpy {np.__version__}; other processes may have "
        "been running (timings are indicative)"
    )
    try:
        started = time.perf_counter()
        write_synthetic(text, args.rows, args.dim)
        size_gb = text.stat().st_size / 1e9
        print(
            f"wrote {args.rows:,} x {args.dim} ({size_gb:.2f} GB) in "
            f"{time.perf_counter() - started:.0f} s: {text}"
        )
        vocab_file.write_text("\n".join(task_vocab(text, args.vocab)), encoding="utf-8")
        results: dict[str, dict[str, float | str]] = {}
        if not args.skip_old:
            results["old"] = _child("old", text, vocab_file, cache)
        results["first"] = _child("first", text, vocab_file, cache)
        later = [_child("later", text, vocab_file, cache) for _ in range(args.repeats)]
        results["later"] = {
            "seconds": statistics.median(float(r["seconds"]) for r in later),
            "peak_rss_mb": max(float(r["peak_rss_mb"]) for r in later),
            "digest": str(later[0]["digest"]),
        }
        digests = {str(r["digest"]) for r in [*results.values(), *later]}
        print(f"\n{'phase':<8}{'seconds':>10}{'peak RSS MB':>14}  task matrix digest")
        for name, r in results.items():
            print(
                f"{name:<8}{float(r['seconds']):>10.2f}"
                f"{float(r['peak_rss_mb']):>14.0f}  {r['digest']}"
            )
        print(f"later runs: {[round(float(r['seconds']), 2) for r in later]} (median shown)")
        base = float(results["later"]["seconds"])
        for name in ("old", "first"):
            if name in results:
                print(f"{name} / later: {float(results[name]['seconds']) / base:.0f}x")
        entry = next((cache / "vectors").iterdir())
        print(
            f"cache entry {entry.name}: "
            f"{sum(p.stat().st_size for p in entry.iterdir()) / 1e9:.2f} GB"
        )
        print("identical task matrices:", len(digests) == 1)
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
