"""Pre-computed ELMo vectors for a text file, in the HDF5 layout of the old ``allennlp elmo``.

As allennlp ``allennlp/commands/elmo.py`` (v0.x–v1.0.0rc3, e.g. tag v0.9.0). The input holds one
sentence per line (whitespace-tokenised, or raw text with ``tokenize=True``). The output holds:

* one float32 dataset per input line, named by the 0-based line index (``"0"``, ``"1"``, …):
  ``(L + 1, n_tokens, 2P)`` for ``layers="all"`` (token layer, biLSTM 1, …, sentence markers
  removed), ``(n_tokens, 2P)`` for ``"average"`` (mean of the layers) and ``"top"`` (last layer).
  An empty line gives an empty dataset (``(L + 1, 0, 2P)`` or ``(0, 2P)``), where allennlp raised
  an error;
* dataset ``sentence_to_index``, shape ``(1,)``, variable-length UTF-8 string: the JSON object
  ``{sentence: key}`` where ``sentence`` is the line's tokens joined by single spaces. A sentence
  that occurs on several lines maps to its **last** line, as in allennlp (it fills a dict in file
  order). Left out with ``sentence_index=False`` (allennlp's ``--forget-sentences``).

Order and state (docs/bilm.md). The input is streamed: chunks of ``lines_per_chunk`` lines are
read, cut into batches and written before the next chunk is read. With the ``"reset"`` and
``"warm"`` state policies a sentence's vectors do not depend on its batch, so each chunk is
sorted by length to reduce padding (keys still follow the input lines), and batches also respect
a token budget (``max_tokens`` padded positions, markers included), so a batch of long sentences
holds fewer of them: the memory of a batch (its outputs, the LSTM buffers) is bounded by the
budget, not by the longest line of the file. Each batch's vectors are written to the HDF5 file
as soon as it finishes and then released. With ``"carry"`` the
state of batch row ``i`` flows into row ``i`` of the next batch, so batches are consecutive runs of
``batch_size`` lines in file order, exactly like allennlp's ``elmo`` command and the fixture
protocol; the output then depends on ``batch_size``.

The output is written to a hidden temporary file beside it and renamed when complete
(:func:`bilm.files.atomic_path`), so a failed run never leaves a file that looks finished. A run
killed outright (``kill -9``, out of memory) cannot remove its temporary; the next run to the same
output does, before it writes (:func:`bilm.files.remove_stale_temporaries`: only
``.NAME.tmp-PID-RANDOM`` files of that output whose process is gone and on which nobody holds a
lock, as HDF5 does on a file it writes), and lists them in :attr:`EmbedStats.removed`.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import torch
from torch import Tensor
from tqdm import tqdm

from bilm.bilm import BiLM
from bilm.chars import batch_to_ids
from bilm.devices import exact_fp32
from bilm.files import atomic_path, remove_stale_temporaries

LayerSelection = Literal["all", "average", "top"]
LAYER_SELECTIONS: tuple[str, ...] = ("all", "average", "top")
#: Name of the dataset that maps sentences to keys (allennlp's name).
SENTENCE_INDEX_KEY = "sentence_to_index"
#: Default chunk size, in batches: lines read, sorted and written together.
CHUNK_BATCHES = 32
#: Default token budget per batch, in padded positions per sentence of ``batch_size``
#: (``max_tokens = batch_size * TOKENS_PER_ROW``); natural sentences up to 46 tokens fill a
#: batch, longer ones share one with fewer rows.
TOKENS_PER_ROW = 48
#: Default capacity of the biLM's LRU token cache during a run (distinct words; 2 KiB each at
#: P = 512).
TOKEN_CACHE_WORDS = 8192

Tokenizer = Callable[[str], list[str]]


class EmbedError(ValueError):
    """The input cannot be embedded (missing file, invalid UTF-8, missing tokenizer, bad option)."""


@dataclass(frozen=True)
class EmbedStats:
    """What :func:`embed_file` did.

    Attributes:
        sentences: input lines embedded (empty lines included).
        tokens: tokens embedded (sentence markers not counted).
        seconds: wall-clock time of the whole run (reading, model, writing).
        output: the finished HDF5 file.
        removed: temporaries of ``output`` left by killed runs, removed before writing.
    """

    sentences: int
    tokens: int
    seconds: float
    output: Path
    removed: tuple[Path, ...] = ()

    @property
    def tokens_per_second(self) -> float:
        """Throughput over the whole run (0 when nothing took measurable time)."""
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        """One line: ``embedded 3 sentences, 20 tokens in 0.1 s (200 tokens/s) -> out.hdf5``."""
        return (
            f"embedded {self.sentences} sentences, {self.tokens} tokens in {self.seconds:.1f} s "
            f"({self.tokens_per_second:.0f} tokens/s) -> {self.output}"
        )


@dataclass(frozen=True)
class Sentence:
    """One input line.

    Attributes:
        index: 0-based line number, the dataset key.
        tokens: the tokens to embed (empty for an empty line).
    """

    index: int
    tokens: list[str]


# ---------------------------------------------------------------------------------- tokenizers
def whitespace_tokenize(text: str) -> list[str]:
    """Split on runs of whitespace (``str.split()``), as allennlp's ``elmo`` command does."""
    return text.split()


def spacy_tokenizer() -> Tokenizer:
    """spaCy's rule-based English tokenizer (``spacy.blank("en")``), imported lazily.

    Whitespace-only tokens (spaCy keeps extra spaces as tokens of their own) are dropped: they
    are not words, and they would make the ``sentence_to_index`` keys ambiguous.

    Raises:
        EmbedError: spaCy is not installed (the message says how to install it).
    """
    try:
        import spacy
    except ImportError:
        raise EmbedError(
            "tokenizing raw text needs spaCy: pip install 'elmo-bench[tokenize]' "
            "(or pip install spacy), or pass pre-tokenized text without --tokenize"
        ) from None
    tokenizer = spacy.blank("en").tokenizer

    def tokenize(text: str) -> list[str]:
        return [token.text for token in tokenizer(text) if not token.text.isspace()]

    return tokenize


# ---------------------------------------------------------------------------------- reading
def _decode(raw: bytes, path: Path, line_index: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EmbedError(
            f"{path}: line {line_index + 1} (dataset key {str(line_index)!r}) is not valid UTF-8: "
            f"{exc.reason} at byte {exc.start} of the line; the input must be UTF-8 text"
        ) from None
    if line_index == 0 and text.startswith("\ufeff"):
        text = text[1:]  # a UTF-8 byte-order mark is not part of the first sentence
    return text.rstrip("\r\n")


def scan_input(path: str | Path) -> int:
    """Check that ``path`` is a readable UTF-8 text file and count its lines, in O(1) memory.

    Args:
        path: the input file.

    Returns:
        Number of lines (a last line without a newline counts; a final newline adds none).

    Raises:
        EmbedError: the file is missing, not a file, or a line is not valid UTF-8 (its 1-based
            number is in the message).
    """
    path = Path(path)
    if not path.exists():
        raise EmbedError(f"{path}: input file not found")
    if not path.is_file():
        raise EmbedError(f"{path}: input is not a regular file")
    count = 0
    with path.open("rb") as handle:
        for count, raw in enumerate(handle, start=1):
            _decode(raw, path, count - 1)
    return count


def iter_sentences(
    handle: IO[bytes], path: str | Path, tokenize: Tokenizer = whitespace_tokenize
) -> Iterator[Sentence]:
    """Stream the sentences of an open binary file, one per line.

    Args:
        handle: the input opened in binary mode.
        path: its name, for error messages.
        tokenize: text → tokens.

    Yields:
        :class:`Sentence` objects in file order.

    Raises:
        EmbedError: a line is not valid UTF-8.
    """
    for index, raw in enumerate(handle):
        yield Sentence(index, tokenize(_decode(raw, Path(path), index)))


def plan_batches(
    chunk: Sequence[Sentence], batch_size: int, sort: bool, max_tokens: int | None = None
) -> list[list[Sentence]]:
    """Cut a chunk of sentences into batches.

    Args:
        chunk: sentences in file order.
        batch_size: sentences per batch (the last batch may be smaller).
        sort: sort by length, longest first (stable), to reduce padding; False keeps file order.
        max_tokens: token budget: a batch's ``rows × (longest + 2)`` (padded positions with the
            sentence markers) stays within it, except a single sentence longer than the budget,
            which gets a batch of its own. ``None``: no budget. Only applied with ``sort`` (file
            order with carried state needs fixed batches).

    Returns:
        The batches; every sentence appears exactly once.
    """
    ordered = sorted(chunk, key=lambda s: -len(s.tokens)) if sort else list(chunk)
    if max_tokens is None or not sort:
        return [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]
    batches: list[list[Sentence]] = []
    current: list[Sentence] = []
    longest = 0
    for sentence in ordered:
        width = max(longest, len(sentence.tokens)) + 2
        if current and (len(current) == batch_size or (len(current) + 1) * width > max_tokens):
            batches.append(current)
            current, longest = [], 0
        current.append(sentence)
        longest = max(longest, len(sentence.tokens))
    if current:
        batches.append(current)
    return batches


def select_layers(layers: Tensor, selection: LayerSelection) -> Tensor:
    """Reduce the biLM layers as the ``--all/--average/--top`` options of allennlp's command.

    Args:
        layers: ``(L + 1, batch, time, 2P)`` from :class:`~bilm.BiLM`.
        selection: ``"all"`` keeps them, ``"average"`` takes their mean, ``"top"`` the last.

    Returns:
        ``(L + 1, batch, time, 2P)`` for ``"all"``, else ``(batch, time, 2P)``.
    """
    if selection == "all":
        return layers  # (L+1, B, T, 2P)
    if selection == "average":
        return layers.mean(dim=0)  # (B, T, 2P)
    if selection == "top":
        return layers[-1]  # (B, T, 2P)
    raise EmbedError(f"layers must be one of {LAYER_SELECTIONS}, got {selection!r}")


def _h5py() -> Any:
    try:
        import h5py
    except ImportError as exc:  # pragma: no cover - h5py is a core dependency
        raise EmbedError("writing embedding files needs h5py: pip install h5py") from exc
    return h5py


#: Shapes whose oneDNN primitives stay cached (``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` and ideep's
#: ``LRU_CACHE_CAPACITY``, both 1024 by default): every batch shape adds primitives and their
#: buffers; 32 keeps a batch's own shapes and bounds the rest.
ONEDNN_CACHE_SHAPES = 32


def return_freed_memory_eagerly() -> bool:
    """Bound the memory a long run keeps between batches (process-wide; Linux/glibc).

    glibc raises its mmap threshold as large blocks are freed, after which tensors of a few MB
    come from the heap and their pages stay resident after release; a run then keeps the
    high-water mark of every batch shape it has seen. Fixing the threshold at 1 MiB (and the
    trim threshold at 4 MiB) keeps the resident memory of a long run near that of one batch.
    Also caps oneDNN's primitive caches at :data:`ONEDNN_CACHE_SHAPES` shapes unless the
    environment already sets them (effective before the first oneDNN call). Used by the
    ``embed`` command, not by :func:`embed_file`.

    Returns:
        True when the glibc setting was applied.
    """
    for name in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY"):
        os.environ.setdefault(name, str(ONEDNN_CACHE_SHAPES))
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3  # glibc <malloc.h>
        ok = libc.mallopt(m_mmap_threshold, 1 << 20) == 1
        return libc.mallopt(m_trim_threshold, 4 << 20) == 1 and ok
    except (OSError, AttributeError):
        return False


def trim_heap() -> None:
    """Give the free pages inside glibc's heap back to the system (``malloc_trim(0)``).

    Cheap (milliseconds); a no-op where glibc is absent. Called after each batch by
    :func:`embed_file` and after loading the model by the ``embed`` command.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _chunks(sentences: Iterator[Sentence], size: int) -> Iterator[list[Sentence]]:
    chunk: list[Sentence] = []
    for sentence in sentences:
        chunk.append(sentence)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# ---------------------------------------------------------------------------------- the command
def embed_file(
    bilm: BiLM,
    input: str | Path,
    output: str | Path,
    *,
    batch_size: int = 64,
    layers: LayerSelection = "all",
    tokenize: bool = False,
    progress: bool = True,
    sentence_index: bool = True,
    lines_per_chunk: int | None = None,
    max_tokens: int | None = None,
    token_cache: int = TOKEN_CACHE_WORDS,
) -> EmbedStats:
    """Embed every line of a text file and write the allennlp ``elmo`` HDF5 layout (module doc).

    Runs under ``torch.no_grad()`` with ``bilm`` in eval mode (its previous mode is restored),
    on the device of its parameters. The biLM's state policy decides the batch order (module
    doc); carried state is **not** reset first: call ``bilm.reset_states()`` for a run that
    depends only on the file.

    Args:
        bilm: the model (its ``state`` policy applies).
        input: UTF-8 text, one sentence per line.
        output: HDF5 file to write (replaced if it exists, only once the run succeeds).
        batch_size: sentences per forward pass.
        layers: ``"all"``, ``"average"`` or ``"top"`` (see :func:`select_layers`).
        tokenize: tokenise raw lines with spaCy's English tokenizer instead of ``str.split()``.
        progress: show a tqdm bar on stderr (hidden anyway when stderr is not a terminal).
        sentence_index: write the ``sentence_to_index`` dataset. It needs every distinct
            sentence in memory until the end; turn it off for very large inputs.
        lines_per_chunk: lines read, sorted and written at a time; default
            ``batch_size * CHUNK_BATCHES``. Rounded up to a multiple of ``batch_size``.
        max_tokens: token budget per batch in padded positions (markers included), applied
            when batches are sorted (not with ``"carry"``); default
            ``batch_size * TOKENS_PER_ROW``. Bounds the memory of a batch.
        token_cache: capacity (distinct words) of the biLM's LRU cache of char-CNN vectors
            during the run (:meth:`BiLM.set_token_cache`); 0 turns it off. The biLM's own
            setting is restored afterwards.

    Returns:
        :class:`EmbedStats` for the run.

    Raises:
        EmbedError: missing input, invalid UTF-8 (file and line named), spaCy missing, bad
            arguments. After a failure ``output`` is as it was (absent, or the previous file)
            and no temporary file is left beside it.
    """
    _check_arguments(batch_size, layers, lines_per_chunk, max_tokens, token_cache)
    input_path, output_path = Path(input), Path(output)
    _check_paths(input_path, output_path)
    budget = max_tokens if max_tokens is not None else batch_size * TOKENS_PER_ROW
    chunk_size = _chunk_size(batch_size, lines_per_chunk)
    tokenizer = spacy_tokenizer() if tokenize else whitespace_tokenize
    total_lines = scan_input(input_path)  # fails fast on a missing file or invalid UTF-8
    h5py = _h5py()
    removed = tuple(remove_stale_temporaries(output_path))  # a killed run's, before writing

    start = time.perf_counter()
    sort = bilm.state != "carry"
    index: dict[str, str] = {}
    n_sentences = n_tokens = 0
    with (
        _inference(bilm, token_cache),
        atomic_path(output_path) as tmp_path,  # output replaced only once everything is written
        input_path.open("rb") as source,
        h5py.File(tmp_path, "w") as sink,
        _progress_bar(total_lines, progress) as bar,
        torch.no_grad(),
        exact_fp32(),
    ):
        for chunk in _chunks(iter_sentences(source, input_path, tokenizer), chunk_size):
            if sentence_index:  # file order: a repeated sentence keeps its last key
                index.update((" ".join(s.tokens), str(s.index)) for s in chunk)
            for batch in plan_batches(chunk, batch_size, sort, budget):
                n_tokens += _write_batch(bilm, batch, layers, sink)
                trim_heap()  # the batch's buffers are released: return their pages
                n_sentences += len(batch)
                bar.update(len(batch))
        if sentence_index:
            dataset = sink.create_dataset(SENTENCE_INDEX_KEY, (1,), dtype=h5py.string_dtype())
            dataset[0] = json.dumps(index)
    seconds = time.perf_counter() - start
    return EmbedStats(n_sentences, n_tokens, seconds, output_path, removed)


def _chunk_size(batch_size: int, lines_per_chunk: int | None) -> int:
    """Lines per chunk: ``lines_per_chunk`` (default ``CHUNK_BATCHES`` batches), rounded up to a
    multiple of ``batch_size``."""
    size = lines_per_chunk or batch_size * CHUNK_BATCHES
    return -(-size // batch_size) * batch_size


def _progress_bar(total_lines: int, progress: bool) -> tqdm:
    """A bar of sentences on stderr (hidden without ``progress`` or when stderr is no terminal)."""
    disable = None if progress else True
    return tqdm(total=total_lines, unit="sent", desc="embed", disable=disable, dynamic_ncols=True)


def _check_arguments(
    batch_size: int,
    layers: str,
    lines_per_chunk: int | None,
    max_tokens: int | None,
    token_cache: int,
) -> None:
    if batch_size < 1:
        raise EmbedError(f"batch_size must be >= 1, got {batch_size}")
    if layers not in LAYER_SELECTIONS:
        raise EmbedError(f"layers must be one of {LAYER_SELECTIONS}, got {layers!r}")
    if lines_per_chunk is not None and lines_per_chunk < 1:
        raise EmbedError(f"lines_per_chunk must be >= 1, got {lines_per_chunk}")
    if max_tokens is not None and max_tokens < 1:
        raise EmbedError(f"max_tokens must be >= 1, got {max_tokens}")
    if token_cache < 0:
        raise EmbedError(f"token_cache must be >= 0, got {token_cache}")


def _check_paths(input_path: Path, output_path: Path) -> None:
    if output_path.is_dir():
        raise EmbedError(f"{output_path}: output is a directory")
    if not output_path.parent.is_dir():
        raise EmbedError(f"{output_path.parent}: output directory does not exist")
    if input_path.exists() and output_path.exists() and input_path.samefile(output_path):
        raise EmbedError(f"{output_path}: output would overwrite the input")


@contextmanager
def _inference(bilm: BiLM, token_cache: int) -> Iterator[None]:
    """``bilm`` in eval mode with a token cache of ``token_cache`` words; both restored after."""
    was_training, previous_cache = bilm.training, bilm._token_cache_size
    bilm.eval()
    bilm.set_token_cache(token_cache)
    try:
        yield
    finally:
        bilm.train(was_training)
        bilm.set_token_cache(previous_cache)


def _write_batch(bilm: BiLM, batch: list[Sentence], layers: LayerSelection, sink: Any) -> int:
    """Embed one batch and write a dataset per sentence; returns the tokens written."""
    device = next(bilm.parameters()).device
    max_chars = bilm.options.char_cnn.max_characters_per_token
    char_ids = batch_to_ids([s.tokens for s in batch], max_chars)  # (B, T, 50)
    out = bilm(char_ids.to(device))
    vectors = select_layers(out.layers, layers).float().cpu().numpy()
    del out  # (L+1, B, T, 2P): released as soon as the batch is written
    n_tokens = 0
    for row, sentence in enumerate(batch):
        n = len(sentence.tokens)
        if layers == "all":
            data = vectors[:, row, :n]  # (L+1, n, 2P)
        else:
            data = vectors[row, :n]  # (n, 2P)
        sink.create_dataset(str(sentence.index), data=data, dtype="float32")
        n_tokens += n
    return n_tokens
