"""Developer and reproduction targets. ``nox`` alone runs lint + tests; ``nox -l`` lists all.

Every target installs the project into its own virtual environment, with constraints.txt (torch
pinned to 2.13.0).
Expensive targets are ``default=False``.
"""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"


def _install(session: nox.Session) -> None:
    session.install("-e", ".[dev]", "-c", "constraints.txt")


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """Ruff lint and format check over the whole repository; mypy over the library and the
    harness' contracts (the files listed in pyproject.toml's ``[tool.mypy]``)."""
    _install(session)  # mypy needs torch's and numpy's types
    session.run("ruff", "check", ".")
    session.run(
        "ruff",
        "format",
        "--check",
        "bilm",
        "tests/bilm",
        "benchmarks",
        "experiments",
        "tests/experiments",
        "scripts",
    )
    session.run("mypy")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The default test suite (the command CI runs; slow tests excluded)."""
    _install(session)
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(python=PYTHON, default=False)
def slow(session: nox.Session) -> None:
    """Only the slow-marked tests (minutes on 2 cores): DDP pretraining, the Ray executor, the
    wheel installed into a fresh virtual environment."""
    session.install("-e", ".[dev,ray]", "-c", "constraints.txt")
    session.run("python", "-m", "pytest", "-m", "slow", *session.posargs)


@nox.session(venv_backend="none", default=False)
def learning_margins(session: nox.Session) -> None:
    """How far each task's learning test is from failing: every registered task's learning run
    (tests/contract/test_tasks.py) with seeds 0-4, each assertion's margin printed with the CPU
    and fails below a comfortable distance (tests/contract/test_learning_margins.py; about 6
    minutes on 2 cores). `ATEN_CPU_CAPABILITY=avx2 nox -s learning_margins` repeats it on
    another kernel set of the same machine. Runs in the environment that calls nox."""
    _in_place(session)
    session.run(
        "python",
        "-m",
        "pytest",
        "-m",
        "slow",
        "tests/contract/test_learning_margins.py",
        "-q",
        *session.posargs,
    )


@nox.session(python=PYTHON, default=False)
def bench_bilm(session: nox.Session) -> None:
    """Inference speed of a full-size ELMo (random weights in the official layout) vs the GEMM
    roofline and vs the straightforward implementation (benchmarks/reference_bilm.py, fp32),
    both measured in the same run, with the outputs' max deviation; int8 mode's speed-up and
    max deviation; peak RSS of `python -m bilm embed` at batch 64 on natural text; the CPU's
    AVX2/AVX-512/AMX features, every exact fp32 path timed, the ratio to the allennlp-style
    computation (benchmarks/allennlp_step.py) on 64 x 20 and natural text, tokens/s idle vs
    under one busy background process per thread count and OMP_WAIT_POLICY; the bf16 line
    (speed-up and deviation, or "not available" without AMX / AVX-512-bf16); PASS/MISS per
    target (docs/performance.md). About 20 minutes on 2 idle cores. Extra arguments go to
    benchmarks/bench_bilm.py (`-- --quick` for a smoke run, `-- --out
    results/benchmarks/bench_bilm-{kind}.txt` to keep the text output per machine kind, after a
    header naming the commit, the CPU and the command); its stages are the modules of
    benchmarks/bilm_speed/."""
    _install(session)
    session.run("python", "benchmarks/bench_bilm.py", *session.posargs)


@nox.session(python=PYTHON, default=False)
def bench_precision(session: nox.Session) -> None:
    """bf16 against fp32 for the full-size biLM: on the CPU (AMX / AVX-512-bf16) the speed-up
    over fp32 and the max deviation, on CUDA (`-- --device cuda`) tokens/s at 64 x 20 and
    512 x 20, fp32 and bf16, with and without CUDA graphs (docs/performance.md)."""
    _install(session)
    session.run("python", "benchmarks/bench_precision.py", *session.posargs)


@nox.session(python=PYTHON, default=False)
def bench_tasks(session: nox.Session) -> None:
    """Task training speed: one epoch and one evaluation of every task's mini and paper
    presets on synthetic data of realistic size, with cached ELMo features and with a live
    biLM, on the CPU and on CUDA when present: examples/s and each phase's share (batch,
    representation, host-to-device, forward, backward, optimizer; evaluation: decode, score).
    Extra arguments go to benchmarks/bench_tasks.py (`-- --quick` for a smoke run, `-- --tasks
    ner --presets mini`, `-- --out results/benchmarks/bench_tasks-KIND.txt`)."""
    _install(session)
    session.run("python", "benchmarks/bench_tasks.py", *session.posargs)


@nox.session(python=PYTHON, default=False)
def bench_significance(session: nox.Session) -> None:
    """Calibration of the seed-aware significance test (experiments/report/significance.py) against
    the pooled bootstrap on simulated SQuAD-like and NER-like comparisons: rate of p < 0.05 per
    seed spread, seed count and true difference; PASS/MISS for a false-positive rate ≤ 0.06
    (docs/significance.md). About 8 minutes on one core. Extra arguments go to
    benchmarks/bench_significance.py (`-- --quick` for a smoke run)."""
    _install(session)
    session.run("python", "benchmarks/bench_significance.py", *session.posargs)


@nox.session(python=PYTHON, default=False)
def bench_hf(session: nox.Session) -> None:
    """Tokens/s of the `hf` representation (the bundled all-MiniLM-L6-v2, all 7 layers) on
    natural text, CPU and CUDA when available, fp32 and bf16 (median of repeats), and feature
    cache bytes per token; prints the CPU (docs/representations.md, "Transformers (hf)"). Extra
    arguments go to benchmarks/bench_hf.py (e.g. `-- --model PATH --sentences 64`)."""
    _install(session)
    session.run("python", "benchmarks/bench_hf.py", *session.posargs)


@nox.session(python=PYTHON, default=False)
def pretrain_small(session: nox.Session) -> None:
    """Reproduce the shipped small English biLM from corpus files given on the command line:
    ``nox -s pretrain_small -- --train TRAIN.txt --valid VALID.txt --test TEST.txt``
    (defaults: ../shared/data/corpus). Trains (resumable), measures held-out perplexity of the
    released fp16 weights, writes bilm/data/elmo-bench-small-en.safetensors and its figures."""
    _install(session)
    corpus = "../shared/data/corpus"
    args = session.posargs or [
        "--train",
        f"{corpus}/train.txt",
        "--valid",
        f"{corpus}/valid.txt",
        "--test",
        f"{corpus}/test.txt",
    ]
    session.run("python", "scripts/train_small_bilm.py", *args, env={"OMP_WAIT_POLICY": "PASSIVE"})


@nox.session(python=PYTHON, default=False)
def bench_pretrain(session: nox.Session) -> None:
    """Training tokens/s (small and full presets) vs the fp32 GEMM roofline measured in the same
    run, and held-out perplexity of the shipped biLM beside an interpolated Kneser-Ney trigram
    on the same split. Extra arguments go to benchmarks/bench_pretrain.py."""
    _install(session)
    session.run("python", "benchmarks/bench_pretrain.py", *session.posargs)


def _in_place(session: nox.Session) -> None:
    """Reproduction targets run in the environment that calls nox (the README's set-up
    installs the project there): no second multi-minute install per target. Outside such an
    environment the project is installed into it first."""
    try:
        session.run("python", "-c", "import experiments, tasks, bilm", silent=True)
    except nox.command.CommandFailed:
        session.log("the project is not importable here: installing it (pip install -e .[dev])")
        session.run("python", "-m", "pip", "install", "-e", ".[dev]")


def _reproduce(session: nox.Session, name: str, *extra: str) -> None:
    """``python -m experiments reproduce NAME`` with ``extra`` arguments, then the target's.

    The store defaults to the clone's git-ignored runs/store (a fresh machine trains every
    run) and tables/plots go to runs/tables, runs/plots: a nox target never rewrites tracked
    files, except `committed_results`, which passes `--store results/runs --out results`.
    Two runs at once, one CPU thread each (the CLI's default): a CPU result then does not
    depend on the machine's core count, and a 2-core machine runs baseline and ELMo side by
    side. A later --max-parallel / --threads in the arguments wins."""
    _in_place(session)
    session.run(
        "python",
        "-m",
        "experiments",
        "reproduce",
        name,
        "--max-parallel",
        "2",
        *extra,
        *session.posargs,
        env={"OMP_WAIT_POLICY": "PASSIVE"},
    )


@nox.session(python=PYTHON, default=False)
def gpu_smoke(session: nox.Session) -> None:
    """On a machine with CUDA: the full-size biLM on the GPU against the CPU and its tokens/s,
    `bilm embed` on both, and one short DEMO run of every task with the mini and paper presets
    (status, time, peak GPU memory). Install the CUDA build of torch 2.13.0 into the session
    first (README, Set-up). Without CUDA it exits with a clear message; `-- --device cpu` runs
    the same checks on the CPU. Extra arguments go to scripts/gpu_smoke.py."""
    _install(session)
    session.run("python", "scripts/gpu_smoke.py", *session.posargs)


@nox.session(python=PYTHON, default=False)
def sweep(session: nox.Session) -> None:
    """A grid of runs and its table, e.g. `nox -s sweep -- squad --lam 0,0.001,1 --mode all,last
    --seeds 0,1,2 [--wandb PROJECT] [--executor ray --max-parallel 4]`."""
    _install(session)
    session.run("python", "-m", "experiments", "sweep", *session.posargs)


# One set of reproduction targets per registered task (tasks/registry.py), named and described
# from its TaskSpec: `<task>_baseline`, `<task>_elmo` (its Table 1 row beside the paper's numbers
# for the same split), `<task>_ablations` where the paper's Table 2 or 3 has the task and
# `<task>_cove` where its CoVe comparison does (experiments/report/paper.toml). A new task gets its
# targets from its registry line. Reading the registry needs the project importable (the README's
# set-up installs it into the environment that runs nox); elsewhere only the other targets exist.
WHAT = {
    "baseline": "the baseline without ELMo",
    "elmo": "baseline vs ELMo + baseline: its Table 1 row beside the paper's numbers",
    "ablations": "its rows of Table 2 (LastOnly, λ=1, λ=0.001) and Table 3 (input, both, output)",
    "cove": "baseline, + CoVe (last layer; all layers λ=1) and + ELMo on the same seeds (paper "
    "§5.1; SST-5: BCN + CoVe vs BCN + ELMo); without `--cove W.pth --glove G.txt` the CoVe "
    "columns are left out and the message says which files to pass",
}


def task_targets() -> dict[str, tuple[str, str, tuple[str, ...]]]:
    """Registered task → (its heading, what ``--data`` must hold, its target kinds); empty where
    the project cannot be imported."""
    import sys
    from pathlib import Path

    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)  # this checkout's packages, not another installed copy
    try:
        from experiments.report.reproductions import table_tasks
        from tasks.registry import TASKS
    except ImportError as error:
        print(
            f"noxfile: no per-task targets ({error}): they need the project importable "
            "(pip install -e '.[dev]' -c constraints.txt)",
            file=sys.stderr,
        )
        return {}
    ablations = set(table_tasks("table2")) | set(table_tasks("table3"))
    cove = set(table_tasks("cove"))
    targets = {}
    for name, task in TASKS.items():
        kinds = ("baseline", "elmo")
        kinds += ("ablations",) * (name in ablations) + ("cove",) * (name in cove)
        targets[name] = (task.heading, task.data_help, kinds)
    return targets


def _target(task: str, kind: str, title: str, data: str) -> None:
    def session(session: nox.Session) -> None:
        _reproduce(session, f"{task}_{kind}")

    session.__doc__ = (
        f"{title}: {WHAT[kind]}. Default: the bundled DEMO set, mini preset, the shipped small "
        f"biLM, the task's seeds; `-- --data DIR` ({data}) for the real data, `--config paper`, "
        "`--seeds 0,1,2`, `--elmo OPTIONS.json WEIGHTS.hdf5 | CHECKPOINT | published:NAME`, "
        "`--glove PATH`, `--device cuda`; finished runs are reused."
    )
    nox.session(venv_backend="none", default=False, name=f"{task}_{kind}")(session)


for _task, (_title, _data, _kinds) in task_targets().items():
    for _kind in _kinds:
        _target(_task, _kind, _title, _data)


# The paper's tables, one target each: a row per task (`-- --tasks squad,ner` restricts them).
TABLE_TARGETS = {
    "table1": "Table 1: baseline vs ELMo + baseline, a row per task (test numbers; SQuAD dev, "
    "its test set is hidden), increase absolute / relative with a seed-aware p-value (Holm-"
    "adjusted within the table) and 95 % CI. Seeds: each task's own unless given (SNLI, NER and "
    "SST-5 5, others 3). On the embedded "
    "defaults with one seed (`nox -s table1 -- --seeds 0`) it finishes within 90 minutes on 2 "
    "cores: its runs are those of the six `<task>_elmo -- --seeds 0` targets (26 minutes in "
    "all, measured one by one from a fresh clone) and are shared with them",
    "table2": "Table 2: baseline, Last Only, λ = 1, λ = 0.001 (dev) for SQuAD, SNLI and SRL; "
    "every ELMo column tested against the baseline",
    "table3": "Table 3: ELMo at the input, input & output, output only (dev) for SQuAD, SNLI and "
    "SRL; the other placements tested against input only",
    "cove": "CoVe beside ELMo: SST-5 (BCN + CoVe vs + ELMo, test) and §5.1's CoVe all layers vs "
    "last on SNLI and SRL (dev); needs `--cove wmtlstm-8f474287.pth --glove glove.840B.300d.txt` "
    "for the CoVe columns (without them the message says which files to pass)",
    "dynamic": "Beyond the paper: per-token (`--mode dynamic`) vs static layer weights, every "
    "task at its own λ and sites on Table 1's split (the static column is Table 1's ELMo "
    "column), the dynamic column tested against the static one; "
    "`-- --seeds 0,1,2` for the committed three seeds",
    "bilm": "Beyond the paper's tables: the biLM's LSTM state reset per sentence (the default), "
    "started from a fixed warm-up state, or carried across batches row by row (the official "
    "biLM; computed live, never cached), and the biLM fine-tuned one epoch on the task's "
    "training text first (paper A.1), every task on Table 1's split, each tested against "
    "reset (the reset column is Table 1's ELMo column); `-- --seeds 0,1,2` for three seeds",
    "adapt": "Beyond the paper: ELMo and the bundled MiniLM frozen, fine-tuned with the task "
    "model and adapted with LoRA (docs/adaptation.md), every task on Table 1's split, each mode "
    "tested against the same representation frozen; `-- --data real --seeds 0,1,2 --store "
    "results/real/runs --out results/real` for the real sets",
    "directions": "Beyond the paper: the biLM's forward language model alone, its backward one "
    "alone and both (ELMo), every task on Table 1's split, each direction tested against both; "
    "`-- --data real --seeds 0,1,2 --store results/real/runs --out results/real` for the real "
    "sets",
}


def _table_target(name: str, what: str) -> None:
    def session(session: nox.Session) -> None:
        _reproduce(session, name)

    session.__doc__ = (
        f"{what}. Finished runs are reused (and shared with the per-task targets). Options: "
        "`-- --tasks squad,ner --seeds 0,1,2 --data DIR --config paper --elmo ... --glove PATH "
        "--device cuda --executor ray`."
    )
    nox.session(venv_backend="none", default=False, name=name)(session)


for _name, _what in TABLE_TARGETS.items():
    _table_target(_name, _what)


@nox.session(venv_backend="none", default=False)
def real_data(session: nox.Session) -> None:
    """The real public sets (`../shared/data` beside the repository, $ELMO_BENCH_SHARED/data, or
    the copy `python -m experiments real-data fetch` rebuilds from their public sources, checksums
    pinned; `experiments/data/real_sets.toml`): per set the baseline, ELMo (the shipped small biLM),
    the random-weight biLM and the bundled MiniLM, then static vs per-token layer weights, 3 seeds,
    `mini`, each on its held-out split (dev where the test split is held back), with the
    seed-aware tests and wall times. Trains into the committed `results/real/runs` (finished runs
    whose identity still matches are reused, so it can be built up over several sittings) and
    writes `results/real/tables`. Without the sets the first command names the folders it needs and
    the fetch command, and stops (exit 2) before any run."""
    where = ("--store", "results/real/runs", "--out", "results/real", "--quiet")
    _reproduce(session, "real", *where)
    _reproduce(session, "dynamic", "--data", "real", "--seeds", "0,1,2", *where)


@nox.session(venv_backend="none", default=False)
def peer(session: nox.Session) -> None:
    """A task's baseline and + ELMo beside allennlp-models 2.10.1 on the same data, epoch by
    epoch (docs/peer.md), e.g. `nox -s peer -- --task ner --data
    shared:dev/conll2000 --seeds 0,1,2 --epochs 5`. Builds the peer's own venv when missing
    or broken, from the repository's recipe (`experiments/peer/allennlp_side/venv.toml`, into
    `$PEER_VENV`, default the cache's `peer/venv`; `-- --build-plan` prints the steps; allennlp
    is never a dependency of this project), trains both
    sides one thread each, two runs at a time, into `results/peer/runs` (the peer's records) and
    `results/peer/project-runs` (finished runs are reused: a table can be built over several
    sittings), and renders `results/peer/<task>.md` and `.png`; `-- --task ner --render-only`
    re-renders from the committed records. Runs in the environment that calls nox."""
    session.run("python", "-m", "experiments", "peer", *session.posargs)


@nox.session(venv_backend="none", default=False)
def committed_results(session: nox.Session) -> None:
    """Every committed table and plot (`results/committed.toml`, the one target that writes
    tracked files): trains what their records lack (`reproduce` / `compare` into the committed
    stores, two runs at a time; finished runs whose identity still matches are reused, so an
    unchanged checkout trains nothing; peer tables are trained by `nox -s peer`), then
    re-renders each in place. `-- --render-only` trains nothing; `-- --check` writes nothing and
    lists every committed file that differs from what HEAD renders (the default test run checks
    the same: tests/test_committed_results.py); `-- --only table1,real`; options after a second
    `--` go to every training command (e.g. `-- -- --max-parallel 4`)."""
    _in_place(session)
    session.run(
        "python",
        "-m",
        "experiments",
        "committed",
        *session.posargs,
        env={"OMP_WAIT_POLICY": "PASSIVE"},
    )


@nox.session(venv_backend="none", default=False)
def compare_hf(session: nox.Session) -> None:
    """The bundled all-MiniLM-L6-v2 (`--repr hf`, every layer, mean pooling) against ELMo (the
    shipped small biLM) on all six tasks: the same sites, mixing, dropout and seeds per task, each
    difference with its seed-aware test, and both representations' learned layer weights. DEMO
    data, `mini`, each task's seeds, two runs at once with one thread each. The committed table:
    `nox -s compare_hf -- --store results/runs --out results --quiet`."""
    _in_place(session)
    session.run(
        "python",
        "-m",
        "experiments",
        "compare",
        "--repr",
        "hf",
        "--against",
        "elmo",
        "--max-parallel",
        "2",
        *session.posargs,
        env={"OMP_WAIT_POLICY": "PASSIVE"},
    )


@nox.session(venv_backend="none", default=False)
def sample_efficiency(session: nox.Session) -> None:
    """Paper Figure 1: SNLI and SRL (any task with `-- --tasks`) trained on 0.1 %, 1 %, 10 % and
    100 % of the training set (`--fractions`), baseline vs ELMo on the same nested subsets;
    prints the table (ELMo tested against the baseline at every share) and writes one plot per
    task to runs/plots. Default: DEMO data, mini preset, each task's seeds (`--seeds 0`)."""
    _in_place(session)
    session.run(
        "python",
        "-m",
        "experiments",
        "sample-efficiency",
        "--max-parallel",
        "2",
        *session.posargs,
        env={"OMP_WAIT_POLICY": "PASSIVE"},
    )


@nox.session(venv_backend="none", default=False)
def report(session: nox.Session) -> None:
    """One self-contained HTML page (tables with significance, captions, plots, provenance,
    W&B links) from the results store: `-- --store runs/store --out runs/report.html`
    (`--store results/runs` for the committed results). Trains nothing."""
    _in_place(session)
    session.run("python", "-m", "experiments", "report", *session.posargs)


@nox.session(venv_backend="none", default=False)
def probes(session: nox.Session) -> None:
    """Paper Tables 5-6: a linear POS probe and a 1-nearest-neighbour sense probe on each biLM
    layer alone, for the shipped small biLM and bilm-random (`--reprs elmo,bilm-random,cove`
    with `--cove W.pth --glove G.txt`); embedded DEMO by default (silver POS tags, pseudo-word
    senses), `-- --pos-data TRAIN TEST --wsd-data FILE.jsonl` for real data (docs/analyses.md).
    Prints per-layer accuracies; writes runs/probes/probes.png."""
    _in_place(session)
    session.run("python", "-m", "experiments", "probes", *session.posargs)


@nox.session(venv_backend="none", default=False)
def docs(session: nox.Session) -> None:
    """The documentation site (mkdocs.yml: the pages of docs/ with the Material theme and an API
    reference generated from the docstrings by mkdocstrings), built with `--strict` into the
    git-ignored site/: a broken link, a page missing from the navigation or an unresolved API
    reference fails it. Runs in the environment that calls nox (the README's set-up installs
    MkDocs there); where MkDocs is missing, the dev extra is installed first. Extra arguments go to
    `mkdocs build` (e.g. `-- --site-dir /tmp/site`)."""
    try:
        session.run("python", "-c", "import material, mkdocstrings_handlers.python", silent=True)
    except nox.command.CommandFailed:
        session.log("MkDocs is not installed here: installing it (pip install -e .[dev])")
        session.run("python", "-m", "pip", "install", "-e", ".[dev]", "-c", "constraints.txt")
    quiet = {"NO_MKDOCS_2_WARNING": "1"}  # Material's banner about its own end of life
    session.run("python", "-m", "mkdocs", "build", "--strict", *session.posargs, env=quiet)
