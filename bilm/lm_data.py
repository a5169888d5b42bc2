"""Streaming bidirectional language-model batches for biLM pre-training.

This re-implements bilm-tf's ``LMDataset`` / ``_get_batch`` / ``BidirectionalLMDataset`` with
exact, JSON-serialisable resume state and a row split for data-parallel training.

Input
    Text shards of one whitespace-tokenized sentence per line (no ``<S>``/``</S>``). Each
    direction holds at most one shard in memory (its valid lines, as strings) and reads every
    shard exactly once per epoch. With ``shuffle=True`` an epoch visits the shards in an order
    drawn from ``(seed, direction, epoch)`` and a shard's sentences in an order drawn from
    ``(seed, direction, epoch, shard)``; with ``shuffle=False`` both are file order (evaluation).
    Epochs repeat forever unless ``max_epochs`` is given.

Bad input
    Lines are read with the policy of :mod:`bilm.corpus` (skipped and counted in a
    :class:`~bilm.corpus.SkipStats`, never fatal); a missing shard raises
    :class:`FileNotFoundError` when the stream is built.

Directions
    The forward stream encodes a sentence as ``[<S>] + tokens + [</S>]``; the backward stream is an
    **independent** stream (its own shard and sentence order) of ``[</S>] + reversed + [<S>]``, so
    the two halves of a batch hold different text, as in bilm-tf.

Modes
    ``"stream"`` (bilm-tf ``_get_batch``): each of the ``batch_size`` rows is a continuous stream of
    sentences; a batch gives ``unroll_steps`` inputs per row and the next token as target. The last
    token of a sentence is only a target (the next sentence starts with its own first boundary
    token); the row's leftover carries into the next batch (``reset_state=False``: carry the LSTM
    state). ``"sentence"``: each row is one sentence, inputs ``s[:-1]`` and targets ``s[1:]``
    truncated to ``unroll_steps`` (the rest of a longer sentence is dropped and counted in
    ``truncated``) and right-padded (token ``""``, all-zero char ids, target id 0,
    ``mask=False``); ``reset_state=True`` on every batch. With ``max_epochs`` the final incomplete
    batch is dropped.

Data parallelism
    ``batch_size`` is the **global** number of rows. Rank ``r`` of ``world_size`` gets the
    contiguous block of rows ``[r * b, (r + 1) * b)`` with ``b = batch_size // world_size``, so
    concatenating the ranks' batches in rank order gives the single-process batch. Every rank reads
    the whole stream (cheap next to the model) and builds tensors for its own rows only; the resume
    state does not depend on the rank.

Example:
    >>> stream = BidirectionalLMStream(["train.txt"], vocab, batch_size=128)  # doctest: +SKIP
    >>> batch = next(stream)  # doctest: +SKIP
    >>> batch.forward.char_ids.shape, batch.forward.targets.shape  # doctest: +SKIP
    (torch.Size([128, 20, 50]), torch.Size([128, 20]))
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch

from bilm.chars import BOS_TOKEN, EOS_TOKEN, MAX_CHARS, batch_to_ids
from bilm.corpus import DEFAULT_MAX_TOKENS_PER_LINE, SkipStats, check_files, iter_lines
from bilm.corpus import count_tokens as count_tokens  # re-exported for benchmarks/ and scripts/
from bilm.corpus import read_sentences as read_sentences  # (they import them from here)
from bilm.vocab import Vocabulary

logger = logging.getLogger(__name__)

STATE_FORMAT = "bilm.lm_data/1"

BatchMode = Literal["stream", "sentence"]
Direction = Literal["forward", "backward"]


# ------------------------------------------------------------------------------------- batches
@dataclass(frozen=True)
class DirectionBatch:
    """One direction of a batch (``B`` = this rank's rows, ``T`` = ``unroll_steps``).

    Attributes:
        tokens: ``B`` lists of ``T`` input token strings (``""`` where padded).
        char_ids: ``LongTensor (B, T, 50)`` of the inputs (:func:`bilm.chars.batch_to_ids`).
        targets: ``LongTensor (B, T)`` vocab ids of the next tokens (OOV → ``<UNK>``, padding 0).
        mask: ``BoolTensor (B, T)``, True at real targets (all True in stream mode).
        n_tokens: number of real targets (``mask.sum()``).
    """

    tokens: list[list[str]]
    char_ids: torch.Tensor
    targets: torch.Tensor
    mask: torch.Tensor
    n_tokens: int


@dataclass(frozen=True)
class LMBatch:
    """A bidirectional batch.

    Attributes:
        forward: the forward-LM half.
        backward: the backward-LM half (independent text, reversed sentences).
        reset_state: True when the trainer must zero the LSTM states before this batch
            (sentence mode); False in stream mode (carry the states: truncated BPTT).
        n_tokens: real targets in the batch, both directions (``forward.n_tokens +
            backward.n_tokens``).
    """

    forward: DirectionBatch
    backward: DirectionBatch
    reset_state: bool
    n_tokens: int


def _rng(*key: object) -> random.Random:
    digest = hashlib.sha256(repr(key).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


class _SentenceStream:
    """One direction's sentences, shard by shard and epoch by epoch (bilm-tf ``LMDataset``)."""

    def __init__(
        self,
        paths: list[Path],
        direction: Direction,
        *,
        seed: int,
        shuffle: bool,
        max_epochs: int | None,
        max_tokens_per_line: int,
        on_load: Callable[[int, SkipStats], None],
    ) -> None:
        self._paths = paths
        self._direction = direction
        self._seed = seed
        self._shuffle = shuffle
        self._max_epochs = max_epochs
        self._max_tokens = max_tokens_per_line
        self._on_load = on_load
        self.epoch = 0
        self.shard_pos = 0  # position in this epoch's shard order
        self.sentence_pos = 0  # position in the loaded shard's (shuffled) lines
        self.epoch_nonempty = False
        self._order = self._shard_order(0)
        self._lines: list[str] | None = None

    def _shard_order(self, epoch: int) -> list[int]:
        order = list(range(len(self._paths)))
        if self._shuffle:
            _rng(self._seed, self._direction, epoch).shuffle(order)
        return order

    def _load(self) -> list[str]:
        shard = self._order[self.shard_pos]
        stats = SkipStats()
        lines = list(iter_lines(self._paths[shard], self._max_tokens, stats))
        if self._shuffle:
            _rng(self._seed, self._direction, self.epoch, shard).shuffle(lines)
        self._on_load(shard, stats)
        return lines

    def next_sentence(self) -> list[str] | None:
        """The next encoded sentence, or None once ``max_epochs`` epochs are done."""
        while self._lines is None or self.sentence_pos >= len(self._lines):
            self._lines = None
            if self.shard_pos >= len(self._paths):  # end of epoch
                if not self.epoch_nonempty:
                    raise ValueError(
                        f"no usable sentence in any shard ({', '.join(map(str, self._paths))})"
                    )
                if self._max_epochs is not None and self.epoch + 1 >= self._max_epochs:
                    return None
                self.epoch += 1
                self.shard_pos = 0
                self.epoch_nonempty = False
                self._order = self._shard_order(self.epoch)
            lines = self._load()
            if lines:
                self._lines = lines
                self.sentence_pos = 0
                self.epoch_nonempty = True
            else:
                self.shard_pos += 1
        tokens = self._lines[self.sentence_pos].split()
        self.sentence_pos += 1
        if self.sentence_pos == len(self._lines):  # release the shard as soon as it is used up
            self._lines = None
            self.shard_pos += 1
            self.sentence_pos = 0
        if self._direction == "forward":
            return [BOS_TOKEN, *tokens, EOS_TOKEN]
        return [EOS_TOKEN, *reversed(tokens), BOS_TOKEN]

    def state_dict(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "shard_pos": self.shard_pos,
            "sentence_pos": self.sentence_pos,
            "shard_size": None if self._lines is None else len(self._lines),
            "epoch_nonempty": self.epoch_nonempty,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch = int(state["epoch"])
        self.shard_pos = int(state["shard_pos"])
        self.sentence_pos = int(state["sentence_pos"])
        self.epoch_nonempty = bool(state["epoch_nonempty"])
        self._order = self._shard_order(self.epoch)
        self._lines = None
        if state["shard_size"] is not None:
            lines = self._load()  # the shard being read when the state was taken
            if len(lines) != state["shard_size"]:
                shard = self._paths[self._order[self.shard_pos]]
                raise ValueError(
                    f"{shard} has {len(lines)} usable lines, the saved state expects "
                    f"{state['shard_size']}: the shard changed since the state was saved"
                )
            self._lines = lines


class BidirectionalLMStream:
    """Endless (or ``max_epochs``-long) iterator of :class:`LMBatch` with exact resume.

    See the module docstring for the data semantics.

    Args:
        files: text shards (one tokenized sentence per line).
        vocab: target vocabulary (OOV targets → ``<UNK>``; inputs always use characters).
        batch_size: global number of rows (over all ranks); divisible by ``world_size``.
        unroll_steps: time steps per batch (bilm-tf default 20).
        mode: ``"stream"`` (continuous rows, carry state) or ``"sentence"`` (one sentence a row).
        seed: seed of the shard and sentence orders (each direction derives its own).
        shuffle: shuffle shards and sentences per epoch; False reads them in file order.
        max_epochs: stop after this many epochs per direction (None: forever).
        max_tokens_per_line: longer lines are skipped as bad input.
        rank: this process's rank.
        world_size: number of data-parallel processes.
        max_chars: char slots per token (50 for every official model).

    Raises:
        FileNotFoundError: a shard is missing.
        ValueError: an invalid argument.
    """

    def __init__(
        self,
        files: Sequence[str | os.PathLike[str]],
        vocab: Vocabulary,
        *,
        batch_size: int,
        unroll_steps: int = 20,
        mode: BatchMode = "stream",
        seed: int = 0,
        shuffle: bool = True,
        max_epochs: int | None = None,
        max_tokens_per_line: int = DEFAULT_MAX_TOKENS_PER_LINE,
        rank: int = 0,
        world_size: int = 1,
        max_chars: int = MAX_CHARS,
    ) -> None:
        self._paths = check_files(files)
        if mode not in ("stream", "sentence"):
            raise ValueError(f"mode must be 'stream' or 'sentence', got {mode!r}")
        if batch_size < 1 or unroll_steps < 1 or max_tokens_per_line < 1:
            raise ValueError("batch_size, unroll_steps and max_tokens_per_line must be >= 1")
        if max_epochs is not None and max_epochs < 1:
            raise ValueError(f"max_epochs must be None or >= 1, got {max_epochs}")
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(f"need 0 <= rank < world_size, got rank={rank}, world={world_size}")
        if batch_size % world_size:
            raise ValueError(f"batch_size {batch_size} is not divisible by world_size {world_size}")
        self.vocab = vocab
        self.batch_size = batch_size
        self.unroll_steps = unroll_steps
        self.mode: BatchMode = mode
        self.seed = seed
        self.shuffle = shuffle
        self.max_epochs = max_epochs
        self.max_tokens_per_line = max_tokens_per_line
        self.rank = rank
        self.world_size = world_size
        self.max_chars = max_chars
        rows = batch_size // world_size
        self._own = slice(rank * rows, (rank + 1) * rows)

        self._skips = SkipStats()
        self._counted: set[int] = set()  # shards whose bad lines are already in _skips
        self._truncated = 0
        self._batches = 0
        self._exhausted = False
        self._streams = {
            d: _SentenceStream(
                self._paths,
                d,
                seed=seed,
                shuffle=shuffle,
                max_epochs=max_epochs,
                max_tokens_per_line=max_tokens_per_line,
                on_load=self._count_skips,
            )
            for d in ("forward", "backward")
        }
        self._rows: dict[str, list[list[str]]] = {
            d: [[] for _ in range(batch_size)] for d in self._streams
        }

    # ------------------------------------------------------------------------------- iteration
    def __iter__(self) -> BidirectionalLMStream:
        return self

    def __next__(self) -> LMBatch:
        if self._exhausted:
            raise StopIteration
        halves = {}
        for direction in ("forward", "backward"):
            rows = self._fill(direction)
            if rows is None:
                self._exhausted = True
                raise StopIteration
            halves[direction] = self._tensorize(rows[self._own])
        self._batches += 1
        fwd, bwd = halves["forward"], halves["backward"]
        return LMBatch(
            forward=fwd,
            backward=bwd,
            reset_state=self.mode == "sentence",
            n_tokens=fwd.n_tokens + bwd.n_tokens,
        )

    def _fill(self, direction: str) -> list[tuple[list[str], list[str]]] | None:
        """(inputs, targets) token lists of all global rows, or None when the data ran out."""
        stream, steps = self._streams[direction], self.unroll_steps
        out: list[tuple[list[str], list[str]]] = []
        if self.mode == "sentence":
            for _ in range(self.batch_size):
                sentence = stream.next_sentence()
                if sentence is None:
                    return None
                if len(sentence) - 1 > steps:
                    self._truncated += 1
                out.append((sentence[:-1][:steps], sentence[1:][:steps]))
            return out
        buffers = self._rows[direction]
        for i in range(self.batch_size):  # row by row, like bilm-tf _get_batch
            buf = buffers[i]
            inputs: list[str] = []
            targets: list[str] = []
            while len(inputs) < steps:
                if len(buf) <= 1:  # a sentence's last token is only a target
                    sentence = stream.next_sentence()
                    if sentence is None:
                        return None
                    buf = sentence
                n = min(len(buf) - 1, steps - len(inputs))
                inputs.extend(buf[:n])
                targets.extend(buf[1 : n + 1])
                buf = buf[n:]
            buffers[i] = buf
            out.append((inputs, targets))
        return out

    def _tensorize(self, rows: list[tuple[list[str], list[str]]]) -> DirectionBatch:
        steps, n_rows = self.unroll_steps, len(rows)
        tokens = [inputs + [""] * (steps - len(inputs)) for inputs, _ in rows]
        lengths = torch.tensor([len(t) for _, t in rows], dtype=torch.long)  # (B,)
        mask = torch.arange(steps).unsqueeze(0) < lengths.unsqueeze(1)  # (B, T)
        # Char ids of the distinct tokens only (one batch_to_ids "sentence"), then a gather.
        distinct: dict[str, int] = {}
        index = [distinct.setdefault(token, len(distinct)) for row in tokens for token in row]
        table = batch_to_ids([list(distinct)], self.max_chars)[0]  # (n_distinct, max_chars)
        char_ids = table[torch.tensor(index)].view(n_rows, steps, self.max_chars)
        if not bool(mask.all()):
            char_ids[~mask] = 0  # padded positions are all-zero tokens, as batch_to_ids pads
        pad = [0] * steps
        target_ids = [self.vocab.encode(t) + pad[len(t) :] for _, t in rows]
        targets = torch.tensor(target_ids, dtype=torch.long).view(n_rows, steps)
        return DirectionBatch(
            tokens=tokens,
            char_ids=char_ids,  # (B, T, max_chars)
            targets=targets,  # (B, T)
            mask=mask,  # (B, T)
            n_tokens=int(lengths.sum()),
        )

    def _count_skips(self, shard: int, stats: SkipStats) -> None:
        if shard in self._counted:
            return
        self._counted.add(shard)
        self._skips.update(stats)
        if stats.total:
            logger.warning(
                "%s: skipped %d bad lines %s", self._paths[shard], stats.total, stats.as_dict()
            )

    # ------------------------------------------------------------------------------ inspection
    @property
    def skip_stats(self) -> SkipStats:
        """Bad lines skipped so far, each shard counted once (the first time it is read)."""
        return SkipStats.from_dict(self._skips.as_dict())

    @property
    def truncated(self) -> int:
        """Sentences cut to ``unroll_steps`` in sentence mode (both directions)."""
        return self._truncated

    @property
    def batches(self) -> int:
        """Batches produced so far (including those before a resume)."""
        return self._batches

    @property
    def epoch(self) -> int:
        """Current epoch of the forward stream (0-based)."""
        return self._streams["forward"].epoch

    # ---------------------------------------------------------------------------------- resume
    def _config(self) -> dict[str, Any]:
        return {
            "files": [p.name for p in self._paths],
            "batch_size": self.batch_size,
            "unroll_steps": self.unroll_steps,
            "mode": self.mode,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "max_tokens_per_line": self.max_tokens_per_line,
            "vocab": self.vocab.fingerprint(),
        }

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable position; independent of ``rank``/``world_size``.

        Holds the epoch, shard and sentence position of each direction, each row's leftover
        tokens, the skip counters and the settings that must match on resume.
        """
        return {
            "format": STATE_FORMAT,
            "config": self._config(),
            "batches": self._batches,
            "exhausted": self._exhausted,
            "truncated": self._truncated,
            "skipped": self._skips.as_dict(),
            "counted_shards": sorted(self._counted),
            "streams": {d: s.state_dict() for d, s in self._streams.items()},
            "rows": {d: [list(row) for row in rows] for d, rows in self._rows.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue exactly where :meth:`state_dict` was taken (re-reads the current shards).

        Raises:
            ValueError: the state is from another format, or the files (by name and order),
                batch size, unroll steps, mode, seed, shuffle, line limit or vocabulary differ;
                or a shard's usable line count changed.
        """
        if state.get("format") != STATE_FORMAT:
            raise ValueError(f"not a {STATE_FORMAT} state (format={state.get('format')!r})")
        mine = self._config()
        diff = [k for k in mine if state["config"].get(k) != mine[k]]
        if diff:
            raise ValueError(
                f"saved data state does not match this stream: {', '.join(diff)} differ"
            )
        self._batches = int(state["batches"])
        self._exhausted = bool(state["exhausted"])
        self._truncated = int(state["truncated"])
        self._skips = SkipStats.from_dict(state["skipped"])
        self._counted = {int(i) for i in state["counted_shards"]}
        self._rows = {d: [list(row) for row in state["rows"][d]] for d in self._streams}
        for direction, stream in self._streams.items():
            stream.load_state_dict(state["streams"][direction])
