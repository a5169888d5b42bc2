"""Command line: ``python -m bilm COMMAND ...`` (also installed as the ``bilm`` script).

Commands live in one dict literal, :data:`COMMANDS`: name → :class:`Command` (help text, a
function adding its arguments, a function running it). A new command is one entry there.

Exit status: 0 success, 1 the command failed (bad input file, unreadable weights, …),
2 usage error (bad or missing arguments, or a ``--device`` this machine lacks), 130
interrupted. Errors are one line on stderr, no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from bilm.bilm import STATE_POLICIES, BiLM, StatePolicy
from bilm.devices import (
    DEVICE_SPECS,
    PRECISIONS,
    DeviceError,
    distributed_backend,
    resolve_device,
    resolve_precision,
    torchrun_local_rank,
)
from bilm.embed import (
    LAYER_SELECTIONS,
    EmbedError,
    embed_file,
    return_freed_memory_eagerly,
    trim_heap,
)
from bilm.lstm import cpu_bf16_unit
from bilm.options import OptionsError
from bilm.pretrained import default_checkpoint_path
from bilm.version import package_version
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

The output is written to a hidden temporary file beside OUTPUT and renamed when complete."""


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
        help="safetensors checkpoint (bilm.save_checkpoint), or a pretraining OUT directory / "
        "checkpoint.pt",
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
    parser.add_argument(
        "--max-tokens",
        type=_positive_int,
        default=None,
        metavar="N",
        help="token budget per batch: rows x (longest + 2) padded positions, applied with "
        "--state reset/warm (default: 48 x --batch-size); bounds memory on long lines",
    )
    parser.add_argument(
        "--precision",
        choices=EMBED_PRECISIONS,
        default="fp32",
        help="fp32 (default, exact); bf16: bf16 products with float32 accumulation, state and "
        "outputs, fast on CPUs with AVX-512-bf16 or AMX and on GPUs; int8: dynamically "
        "quantised GEMMs in the LSTMs and highway layers (CPU only); bf16 and int8 vectors "
        "deviate slightly from fp32",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary")


#: ``embed --precision`` choices.
EMBED_PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "int8")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _default_checkpoint() -> Path:
    """The shipped default model (:func:`bilm.pretrained.default_checkpoint_path`)."""
    try:
        return default_checkpoint_path()
    except FileNotFoundError as exc:
        raise UsageError(f"no default model available ({exc}); {NO_MODEL}") from None


def _load_bilm(checkpoint: Path, state: StatePolicy = "reset") -> BiLM:
    """The biLM of ``--checkpoint`` (``embed``, ``export``): a ``.safetensors`` file, a
    training ``checkpoint.pt``, or the pretraining output directory holding it.

    Args:
        checkpoint: the path given.
        state: LSTM state policy of the returned model.

    Returns:
        The biLM in eval mode.
    """
    if checkpoint.is_dir() or checkpoint.suffix == ".pt":
        from bilm.pretrain import load_language_model

        bilm = load_language_model(checkpoint)[0].bilm
        bilm.state = state
        bilm.reset_states()
        return bilm.eval()
    return load_checkpoint(checkpoint, state=state)


def _run_embed(args: argparse.Namespace) -> int:
    if args.checkpoint is not None and (args.options is not None or args.weights is not None):
        raise UsageError("pass either --checkpoint or --options/--weights, not both")
    if (args.options is None) != (args.weights is None):
        raise UsageError("--options and --weights go together: pass both")
    try:
        device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    except RuntimeError as exc:
        raise UsageError(f"--device: {exc}") from None
    if device.type == "cuda":  # before loading the model: CUDA there, the index visible
        device = resolve_device(device)
    if args.precision == "int8" and device.type != "cpu":
        raise UsageError("--precision int8 runs on the CPU only: add --device cpu")
    if args.precision == "bf16" and device.type == "cpu" and cpu_bf16_unit() is None:
        print(
            "bilm embed: warning: this CPU has neither AVX-512-bf16 nor AMX; --precision bf16 "
            "is emulated there and slower than fp32",
            file=sys.stderr,
        )
    if not args.input.is_file():  # fail before loading the model (UTF-8 is checked later)
        missing = "not found" if not args.input.exists() else "is not a regular file"
        raise EmbedError(f"{args.input}: input file {missing}")
    return_freed_memory_eagerly()  # resident memory follows the current batch, not the largest
    if args.options is not None:
        model = load_official(args.options, args.weights, state=args.state)
    else:
        checkpoint = args.checkpoint if args.checkpoint is not None else _default_checkpoint()
        model = _load_bilm(checkpoint, state=args.state)
    model = model.to(device)
    trim_heap()  # the weight file's read buffers
    if args.precision != "fp32":
        model.to_precision(args.precision)
    stats = embed_file(
        model,
        args.input,
        args.output,
        batch_size=args.batch_size,
        layers=args.layers,
        tokenize=args.tokenize,
        progress=not args.quiet,
        sentence_index=not args.forget_sentences,
        max_tokens=args.max_tokens,
    )
    for path in stats.removed:
        print(f"bilm embed: removed {path}, left by a run that was killed", file=sys.stderr)
    if not args.quiet:
        print(stats.summary(), file=sys.stderr)
    return 0


# ---------------------------------------------------------------------------------- pretrain
PRETRAIN_DESCRIPTION = """\
Train a biLM on tokenized text (one sentence per line, many files allowed), as bilm-tf does:
forward and backward LMs on two independent sentence streams, 20-step windows with state
carried, one shared softmax (sampled in training), Adagrad. Checkpoints go to OUT/checkpoint.pt
(atomically); running the same command again resumes exactly where the last checkpoint left off.
Multi-process: launch with torchrun (gloo on CPU, nccl on GPUs), see the README.

Device and precision: --device auto (default) trains on the GPU when CUDA is available, else on
the CPU; under torchrun each process takes cuda:LOCAL_RANK. --precision bf16 or fp16 runs the
forward pass under autocast (fp16 with loss scaling, CUDA only); weights stay float32. Both are
recorded in OUT/log.jsonl and in the checkpoint; a checkpoint written on a GPU resumes on the
CPU too (exactly only on the same device type and precision)."""


def _configure_pretrain(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--train", type=Path, nargs="+", required=True, metavar="FILE")
    parser.add_argument("--valid", type=Path, metavar="FILE", help="held-out text for perplexity")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR")
    parser.add_argument(
        "--config", default="small", help="small | full | tiny | JSON file of overrides"
    )
    parser.add_argument("--max-steps", type=_positive_int, metavar="N", help="override")
    parser.add_argument("--max-minutes", type=float, metavar="M", help="wall-clock budget")
    parser.add_argument("--wandb", metavar="PROJECT", help="log to W&B (offline by default)")
    _add_run_arguments(parser, torchrun=True)


def _add_run_arguments(parser: argparse.ArgumentParser, torchrun: bool) -> None:
    """``--device``, ``--precision`` and ``--quiet`` of the training commands."""
    rank = "; cuda:LOCAL_RANK per process under torchrun" if torchrun else ""
    parser.add_argument(
        "--device",
        default="auto",
        metavar="DEVICE",
        help=f"{DEVICE_SPECS} (default: auto = cuda if available, else cpu{rank})",
    )
    parser.add_argument(
        "--precision",
        choices=PRECISIONS,
        default="fp32",
        help="autocast precision of the forward pass (default: fp32; fp16 needs CUDA)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def _run_pretrain(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from bilm.pretrain import load_config, train

    try:
        config = load_config(args.config)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.max_steps:
        config = replace(config, max_steps=args.max_steps)
    if args.max_minutes:
        config = replace(config, max_minutes=args.max_minutes)
    local_rank = torchrun_local_rank()  # None unless torchrun started several processes
    try:
        device = resolve_device(args.device, local_rank=local_rank)
        precision = resolve_precision(device, args.precision)
    except DeviceError as exc:
        raise UsageError(str(exc)) from None
    distributed = local_rank is not None
    if distributed:
        import torch.distributed as dist

        if device.type == "cuda":
            torch.cuda.set_device(device)  # before NCCL picks a GPU for this process
        dist.init_process_group(distributed_backend(device))
    try:
        result = train(
            config,
            args.train,
            args.out,
            valid_files=[args.valid] if args.valid else [],
            progress=not args.quiet,
            wandb_project=args.wandb,
            device=device,
            precision=precision,
        )
    finally:
        if distributed:
            import torch.distributed as dist

            dist.destroy_process_group()
    summary: dict[str, object] = {
        "steps": result.steps,
        "tokens": result.tokens,
        "seconds": round(result.seconds, 1),
        "device": str(device),
        "precision": precision,
    }
    if result.perplexity:
        summary["valid_perplexity"] = result.perplexity
    print(json.dumps(summary))
    return 0


# ---------------------------------------------------------------------------------- finetune
FINETUNE_DESCRIPTION = """\
Fine-tune a pretrained biLM on a task's text (paper section 3.4 and appendix A.1): continue LM
training with the pretraining loop (same streams, sampled softmax, Adagrad, dropout) for
--epochs passes over --train, then write OUT/finetuned.safetensors (a project checkpoint: use it
with --checkpoint, bilm.load_checkpoint, or the harness's elmo checkpoint=) and
OUT/perplexity.json with the held-out perplexity of --valid before and after fine-tuning.

Model: --checkpoint (a .safetensors file, or a pretraining OUT directory / checkpoint.pt), or
--options/--weights (official files); default: the shipped small biLM.

Softmax and "before": when the input holds a trained softmax (the shipped model, pretraining
outputs), its vocabulary is extended by the task's words (config min_count/max_vocab), known words
keep their rows and the new words split the <UNK> probability evenly; "before" is that untrained
LM. An input without a softmax (official files) gets a new one over the task vocabulary, trained
alone with the biLM frozen for --warmup-epochs before "before" is measured.

Checkpoints go to OUT/checkpoint.pt atomically; running the same command again resumes exactly,
and a finished OUT is reported without training."""


def _configure_finetune(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--train", type=Path, nargs="+", required=True, metavar="TEXT", help="task training text"
    )
    parser.add_argument(
        "--valid", type=Path, required=True, metavar="TEXT", help="held-out text for perplexity"
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR")
    model = parser.add_argument_group("model", "default: the shipped small biLM")
    model.add_argument(
        "--checkpoint",
        type=Path,
        metavar="PATH",
        help=".safetensors checkpoint, or a pretraining OUT directory / checkpoint.pt",
    )
    model.add_argument(
        "--elmo",
        nargs=2,
        type=Path,
        metavar=("OPTIONS.json", "WEIGHTS.hdf5"),
        help="official ELMo files",
    )
    model.add_argument("--options", type=Path, metavar="JSON", help="official options.json")
    model.add_argument("--weights", type=Path, metavar="HDF5", help="official weight file")
    parser.add_argument(
        "--epochs", type=float, default=1.0, metavar="E", help="passes over --train (default: 1)"
    )
    parser.add_argument(
        "--warmup-epochs",
        type=float,
        default=1.0,
        metavar="E",
        help="softmax-only warm-up when the input has no softmax (default: 1)",
    )
    parser.add_argument(
        "--config",
        default="small",
        help="small | full | tiny | JSON file of overrides (training hyper-parameters; "
        "the architecture is the input's; default: small)",
    )
    _add_run_arguments(parser, torchrun=False)


def _run_finetune(args: argparse.Namespace) -> int:
    from bilm.finetune import finetune
    from bilm.pretrain import load_config

    options, weights = args.options, args.weights
    if args.elmo is not None:
        if options is not None or weights is not None:
            raise UsageError("pass --elmo or --options/--weights, not both")
        options, weights = args.elmo
    if (options is None) != (weights is None):
        raise UsageError("--options and --weights go together: pass both")
    if args.checkpoint is not None and options is not None:
        raise UsageError("pass either --checkpoint or official files, not both")
    if args.epochs <= 0 or args.warmup_epochs <= 0:
        raise UsageError("--epochs and --warmup-epochs must be > 0")
    try:
        config = load_config(args.config)
        device = resolve_device(args.device)
        precision = resolve_precision(device, args.precision)
    except (ValueError, DeviceError) as exc:
        raise UsageError(str(exc)) from None
    checkpoint = args.checkpoint
    if checkpoint is None and options is None:
        checkpoint = _default_checkpoint()
    result = finetune(
        args.train,
        args.valid,
        args.out,
        checkpoint=checkpoint,
        options=options,
        weights=weights,
        epochs=args.epochs,
        device=device,
        precision=precision,
        progress=not args.quiet,
        config=config,
        warmup_epochs=args.warmup_epochs,
    )
    print(json.dumps({**result.report, "checkpoint": str(result.checkpoint)}))
    return 0


# ---------------------------------------------------------------------------------- evaluate
def _configure_evaluate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--input", type=Path, nargs="+", required=True, metavar="FILE")
    parser.add_argument(
        "--checkpoint",
        type=Path,
        metavar="PATH",
        help="training dir / checkpoint.pt / release .safetensors (default: the shipped model)",
    )
    parser.add_argument("--batch-size", type=_positive_int, default=64, metavar="N")


def _run_evaluate(args: argparse.Namespace) -> int:
    from bilm.pretrain import evaluate_perplexity, load_language_model

    checkpoint = args.checkpoint if args.checkpoint is not None else _default_checkpoint()
    model, vocab = load_language_model(checkpoint)
    result = evaluate_perplexity(model, vocab, args.input, batch_size=args.batch_size)
    print(json.dumps(result))
    return 0


# ---------------------------------------------------------------------------------- export
def _configure_export(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--checkpoint",
        type=Path,
        metavar="PATH",
        help="training dir / checkpoint.pt / .safetensors (default: the shipped model)",
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR")
    parser.add_argument(
        "--n-characters",
        type=int,
        choices=(261, 262),
        default=262,
        help="value written to options.json: 262 for inference (default), 261 for bilm-tf training",
    )


def _run_export(args: argparse.Namespace) -> int:
    from bilm.weights import export_official

    checkpoint = args.checkpoint if args.checkpoint is not None else _default_checkpoint()
    bilm = _load_bilm(checkpoint)
    options, weights = export_official(bilm, args.out, n_characters=args.n_characters)
    print(json.dumps({"options": str(options), "weights": str(weights)}))
    return 0


# ---------------------------------------------------------------------------------- registry
COMMANDS: dict[str, Command] = {
    "embed": Command(
        help="write ELMo vectors of a text file to HDF5 (allennlp `elmo` layout)",
        description=EMBED_DESCRIPTION,
        configure=_configure_embed,
        run=_run_embed,
    ),
    "pretrain": Command(
        help="train a biLM on your own text (resumes from OUT/checkpoint.pt)",
        description=PRETRAIN_DESCRIPTION,
        configure=_configure_pretrain,
        run=_run_pretrain,
    ),
    "finetune": Command(
        help="fine-tune a biLM on a task's text; perplexity before/after (resumes from OUT)",
        description=FINETUNE_DESCRIPTION,
        configure=_configure_finetune,
        run=_run_finetune,
    ),
    "evaluate": Command(
        help="held-out perplexity (forward, backward, average) as JSON",
        description="Perplexity of a language model on tokenized text, full softmax, state "
        "carried through the text (bilm-tf test()).",
        configure=_configure_evaluate,
        run=_run_evaluate,
    ),
    "export": Command(
        help="write options.json + weights.hdf5 in the official ELMo layout",
        description="Export a biLM so any ELMo consumer (allennlp, bilm-tf) can load it.",
        configure=_configure_export,
        run=_run_export,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    """The ``bilm`` argument parser with one subparser per entry of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="ELMo biLM tools (Peters et al., 2018)."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
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
    except DeviceError as exc:  # the arguments are fine, the machine lacks the device
        print(f"{sub.prog}: error: {exc}", file=sys.stderr)
        return 2
    except (EmbedError, WeightsError, OptionsError, OSError, ValueError) as exc:
        print(f"{sub.prog}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{sub.prog}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
