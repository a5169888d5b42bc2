"""Command line: ``python -m bilm COMMAND ...`` (also installed as the ``bilm`` script).

Commands live in one dict literal, :data:`COMMANDS`: name → :class:`Command` (help text, a
function adding its arguments, a function running it). A new command is one entry there.

Exit status: 0 success, 1 the command failed (bad input file, unreadable weights, …),
2 usage error (bad or missing arguments), 130 interrupted. Errors are one line on stderr, no
traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from bilm.bilm import STATE_POLICIES
from bilm.embed import LAYER_SELECTIONS, EmbedError, embed_file
from bilm.options import OptionsError
from bilm.weights import WeightsError, load_checkpoint, load_official

PROG = "bilm"


class UsageError(Exception):
    """Arguments that do not fit together; reported with the command's usage, exit status 2."""


@dataclass(frozen=True)
class Command:
    """One subcommand.

    Attributes:
        help: one line for ``bilm --help``.
        description: the text of ``bilm NAME --help``.
        configure: adds the command's arguments to its parser.
        run: runs it on the parsed arguments and returns the exit status; raises
            :class:`UsageError` for usage errors and ``ValueError``/``OSError`` for failures.
    """

    help: str
    description: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# ---------------------------------------------------------------------------------- embed
NO_MODEL = (
    "no model given: pass --options OPTIONS.json --weights WEIGHTS.hdf5 (official ELMo files) "
    "or --checkpoint MODEL.safetensors"
)

EMBED_DESCRIPTION = """\
Write ELMo vectors for every line of a text file to HDF5, in the layout of the old
`allennlp elmo` command: dataset "i" (0-based line number) holds the vectors of line i,
float32, shape (L+1, n_tokens, dim) with --layers all (token layer, biLSTM 1, biLSTM 2 for the
published models), or (n_tokens, dim) with --layers average (mean of the layers) or top (last
layer); an empty line gives an empty dataset. Dataset "sentence_to_index" holds the JSON
object {sentence: key} (tokens joined by single spaces; a repeated sentence maps to its last
line), unless --forget-sentences.

State and order: with --state reset (default) or warm, every sentence's vectors depend only on
the sentence, so the input is read in chunks and sorted by length within each chunk to save
padding (keys still follow the input lines). With --state carry (the official models'
behaviour, LSTM state carried from batch to batch by row), batches are consecutive runs of
--batch-size lines in file order, so the state flows through the file in order and the vectors
depend on --batch-size, as with allennlp's command.

The output is written to OUTPUT.tmp and renamed when complete."""


def _configure_embed(parser: argparse.ArgumentParser) -> None:
    model = parser.add_argument_group(
        "model",
        "official files (--options and --weights) or a project checkpoint; without "
        "either, the shipped default model when one is installed",
    )
    model.add_argument("--options", type=Path, metavar="JSON", help="official options.json")
    model.add_argument("--weights", type=Path, metavar="HDF5", help="official weight file")
    model.add_argument(
        "--checkpoint",
        type=Path,
        metavar="PATH",
        help="safetensors checkpoint (bilm.save_checkpoint)",
    )
    parser.add_argument(
        "--input",
        type=Path,
        required=True,
        metavar="TXT",
        help="UTF-8 text, one sentence per line (whitespace-tokenized unless --tokenize)",
    )
    parser.add_argument("--output", type=Path, required=True, metavar="HDF5", help="file to write")
    parser.add_argument(
        "--tokenize",
        action="store_true",
        help="the input is raw text: tokenize it with spaCy's English tokenizer (needs spacy)",
    )
    parser.add_argument(
        "--batch-size",
        type=_positive_int,
        default=64,
        metavar="N",
        help="sentences per batch (default: 64)",
    )
    parser.add_argument(
        "--state",
        choices=STATE_POLICIES,
        default="reset",
        help="LSTM state policy (default: reset); carry keeps the input order, see above",
    )
    parser.add_argument(
        "--layers",
        choices=LAYER_SELECTIONS,
        default="all",
        help="all layers, their average, or the top layer (default: all)",
    )
    parser.add_argument(
        "--forget-sentences",
        action="store_true",
        help="do not write sentence_to_index (it keeps every sentence in memory)",
    )
    parser.add_argument(
        "--device",
        default=None,
        help="torch device, e.g. cpu or cuda:0 (default: cuda if available, else cpu)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _default_checkpoint() -> Path:
    """The shipped default model from :mod:`bilm.pretrained`, if that module exists."""
    try:
        pretrained = importlib.import_module("bilm.pretrained")
    except ModuleNotFoundError as exc:
        if exc.name != "bilm.pretrained":
            raise
        raise UsageError(NO_MODEL) from None
    finder = getattr(pretrained, "default_checkpoint_path", None)
    if finder is None:
        raise UsageError(NO_MODEL)
    try:
        path = finder()
    except (OSError, ValueError, RuntimeError) as exc:
        raise UsageError(f"no default model available ({exc}); {NO_MODEL}") from None
    if path is None or not Path(path).is_file():
        raise UsageError(f"no default model available ({path} not found); {NO_MODEL}")
    return Path(path)


def _run_embed(args: argparse.Namespace) -> int:
    if args.checkpoint is not None and (args.options is not None or args.weights is not None):
        raise UsageError("pass either --checkpoint or --options/--weights, not both")
    if (args.options is None) != (args.weights is None):
        raise UsageError("--options and --weights go together: pass both")
    try:
        device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    except RuntimeError as exc:
        raise UsageError(f"--device: {exc}") from None
    if not args.input.is_file():  # fail before loading the model (UTF-8 is checked later)
        missing = "not found" if not args.input.exists() else "is not a regular file"
        raise EmbedError(f"{args.input}: input file {missing}")
    if args.options is not None:
        model = load_official(args.options, args.weights, state=args.state)
    else:
        checkpoint = args.checkpoint if args.checkpoint is not None else _default_checkpoint()
        model = load_checkpoint(checkpoint, state=args.state)
    stats = embed_file(
        model.to(device),
        args.input,
        args.output,
        batch_size=args.batch_size,
        layers=args.layers,
        tokenize=args.tokenize,
        progress=not args.quiet,
        sentence_index=not args.forget_sentences,
    )
    if not args.quiet:
        print(stats.summary(), file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------------- registry
COMMANDS: dict[str, Command] = {
    "embed": Command(
        help="write ELMo vectors of a text file to HDF5 (allennlp `elmo` layout)",
        description=EMBED_DESCRIPTION,
        configure=_configure_embed,
        run=_run_embed,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    """The ``bilm`` argument parser with one subparser per entry of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="ELMo biLM tools (Peters et al., 2018)."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        sub = subparsers.add_parser(
            name,
            help=command.help,
            description=command.description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.configure(sub)
        sub.set_defaults(_command=name, _parser=sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status (module docstring).
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or argparse's own usage errors (already printed)
        return exc.code if isinstance(exc.code, int) else 2
    command: Command = COMMANDS[args._command]
    sub: argparse.ArgumentParser = args._parser
    try:
        return command.run(args)
    except UsageError as exc:
        sub.print_usage(sys.stderr)
        print(f"{sub.prog}: error: {exc}", file=sys.stderr)
        return 2
    except (EmbedError, WeightsError, OptionsError, OSError) as exc:
        print(f"{sub.prog}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{sub.prog}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
