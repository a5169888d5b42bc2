"""``predict RUN_ID --input FILE``: a trained run's selected weights applied to new text.

The command's flags become a :class:`~experiments.run.predict.PredictRequest`;
:func:`experiments.run.predict.predict` finds the run, rebuilds it, loads its weights, reads the
input (``--format``: :data:`~experiments.run.predict.FORMATS`), predicts and writes (its module
docstring says how). This module adds what is the command line's: the ``--trust-plugin`` check
of the stored spec before anything it names is imported, the feature cache's default folder,
and the output (one JSON line on stdout, ``wrote PATH`` on stderr).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from experiments.cli.options import DEFAULT_STORE, DEFAULT_WORK
from experiments.cli.trust import add_trust_option, require_trusted
from experiments.run.predict import FORMATS, PredictRequest, predict

__all__ = ["configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    """``predict RUN_ID --input FILE [--out FILE] [--format F] [--store] [--work] ...``."""
    parser.add_argument("run_id", help="a stored run's id (<store>/<task>/<run_id>/)")
    parser.add_argument("--input", type=Path, required=True, metavar="FILE", help="the text")
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="where the task's writer writes; it sets the suffix of its format, e.g. .txt "
        "(default: beside the input, <input name>-predictions-<run_id>.<suffix>)",
    )
    parser.add_argument(
        "--format",
        default=FORMATS[0],
        choices=FORMATS,
        help="task: the task's own file format (default); tokenized: one sentence per line, "
        "whitespace tokens; raw: one text per line, tokenized with spaCy (sentence tasks only)",
    )
    parser.add_argument("--store", type=Path, default=DEFAULT_STORE, help="results store")
    parser.add_argument(
        "--work", type=Path, default=DEFAULT_WORK, help="where the run trained (its checkpoint)"
    )
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda | cuda:N")
    parser.add_argument(
        "--precision",
        choices=("fp32", "bf16", "fp16"),
        help="autocast of the forward pass (default: the run's recorded precision)",
    )
    features = parser.add_mutually_exclusive_group()
    features.add_argument(
        "--cache",
        type=Path,
        help="feature cache of frozen representations, as in training (default: features/ "
        "under $ELMO_BENCH_CACHE, else ~/.cache/elmo-bench)",
    )
    features.add_argument(
        "--no-cache",
        action="store_true",
        help="compute the features live (float32; a run trained through the cache read its "
        "float16 copies, so a near tie may come out otherwise)",
    )
    parser.add_argument(
        "--allow-changed",
        action="store_true",
        help="predict even where the data, representation or configuration the run was made "
        "from changed since (the differences are printed)",
    )
    add_trust_option(parser)


def run(args: argparse.Namespace) -> int:
    """Rebuild the run, load its selected weights, predict on ``--input`` and write the file.

    Prints one JSON line (run id, task, examples, the file written) on stdout and ``wrote
    PATH`` on stderr.

    Raises:
        UsageError: the stored spec names a plug-in ``--trust-plugin`` does not name.
        PredictError: an unknown run, missing weights, an input the format cannot read, or a
            run whose inputs changed (without ``--allow-changed``); nothing is written.
    """
    request = PredictRequest(
        run_id=args.run_id,
        input=args.input,
        store=args.store,
        work=args.work,
        out=args.out,
        format=args.format,
        device=args.device,
        precision=args.precision,
        cache=_cache_dir(args),
        allow_changed=args.allow_changed,
    )
    source = f"predict {args.run_id}"
    result = predict(request, vet=lambda spec: require_trusted(spec, args.trust_plugin, source))
    print(
        json.dumps(
            {
                "run_id": result.run_id,
                "task": result.task,
                "examples": result.examples,
                "predictions": str(result.predictions),
            }
        )
    )
    print(f"wrote {result.predictions}", file=sys.stderr)
    return 0


def _cache_dir(args: argparse.Namespace) -> Path | None:
    """The feature cache the features are read through, as training's (``None``: live)."""
    from bilm.pretrained import cache_root

    if args.no_cache:
        return None
    return args.cache if args.cache is not None else cache_root() / "features"
