"""Word vocabulary for biLM pre-training, in the bilm-tf vocab-file format (``bilm/data.py``).

The file has one token per line; it must contain ``<S>``, ``</S>`` and ``<UNK>``; lines equal to
``!!!MAXTERMID`` are skipped. Ids are line numbers (after skipping), exactly as bilm-tf's
``Vocabulary``, so an official file whose specials come in another order keeps its ids.
:meth:`Vocabulary.build` writes the specials first (``<S>`` = 0, ``</S>`` = 1, ``<UNK>`` = 2, the
order of the bilm-tf README), then the words by descending count — the order the log-uniform
sampled softmax assumes — with ties broken by the token string (code-point order).

Example:
    >>> vocab = Vocabulary(["<S>", "</S>", "<UNK>", "the", "cat"])
    >>> vocab.encode(["the", "dog"])
    [3, 2]
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from bilm.chars import BOS_TOKEN, EOS_TOKEN
from bilm.corpus import DEFAULT_MAX_TOKENS_PER_LINE, SkipStats, check_files, read_sentences
from bilm.files import write_bytes

logger = logging.getLogger(__name__)

UNK_TOKEN = "<UNK>"
SPECIAL_TOKENS: tuple[str, str, str] = (BOS_TOKEN, EOS_TOKEN, UNK_TOKEN)
MAXTERMID = "!!!MAXTERMID"  # marker line in some bilm-tf vocab files; skipped on load


class Vocabulary:
    """An immutable token ↔ id mapping with ``<S>``, ``</S>`` and ``<UNK>``.

    Args:
        tokens: the tokens in id order. Each must be a non-empty string without whitespace, unique,
            and not ``!!!MAXTERMID``; the three special tokens must be present (anywhere).
        source: what to name in error messages (a file path when loading).

    Raises:
        ValueError: on an invalid, duplicate or missing (special) token.
    """

    __slots__ = ("_tokens", "_ids", "_bos", "_eos", "_unk")

    def __init__(self, tokens: Iterable[str], *, source: str = "vocabulary") -> None:
        tokens = tuple(tokens)
        ids: dict[str, int] = {}
        for i, token in enumerate(tokens):
            if not isinstance(token, str) or token.split() != [token]:
                raise ValueError(f"{source}: token {i} ({token!r}) is empty or contains whitespace")
            if token == MAXTERMID:
                raise ValueError(f"{source}: {MAXTERMID!r} is a reserved marker, not a token")
            if token in ids:
                raise ValueError(f"{source}: duplicate token {token!r} (ids {ids[token]} and {i})")
            ids[token] = i
        missing = [s for s in SPECIAL_TOKENS if s not in ids]
        if missing:
            raise ValueError(
                f"{source}: missing special token(s) {', '.join(missing)}; a bilm vocabulary must "
                f"contain {', '.join(SPECIAL_TOKENS)} (specials first, then by descending count)"
            )
        self._tokens = tokens
        self._ids = ids
        self._bos = ids[BOS_TOKEN]
        self._eos = ids[EOS_TOKEN]
        self._unk = ids[UNK_TOKEN]

    # ----------------------------------------------------------------------------- construction
    @classmethod
    def build(
        cls,
        files: Sequence[str | os.PathLike[str]],
        min_count: int = 1,
        max_size: int | None = None,
        *,
        max_tokens_per_line: int | None = None,
        stats: SkipStats | None = None,
    ) -> Vocabulary:
        """Count whitespace tokens over text files (streaming) and build a vocabulary.

        Lines are read with the bad-input policy of :mod:`bilm.corpus` (empty, over-long,
        invalid-UTF-8 and control-character lines are skipped and counted, never fatal).

        Args:
            files: text files of one tokenized sentence per line.
            min_count: keep words seen at least this many times.
            max_size: cap on the vocabulary size **including** the three special tokens.
            max_tokens_per_line: lines with more tokens are skipped (default:
                :data:`bilm.DEFAULT_MAX_TOKENS_PER_LINE`).
            stats: a :class:`bilm.corpus.SkipStats` to add skipped-line counts to.

        Returns:
            ``<S>``, ``</S>``, ``<UNK>``, then words by descending count, ties by token string.
            Literal special tokens and ``!!!MAXTERMID`` in the text are not counted as words.

        Raises:
            FileNotFoundError: a file is missing (named in the message).
            ValueError: ``min_count < 1`` or ``max_size < 3``.
        """
        if min_count < 1:
            raise ValueError(f"min_count must be >= 1, got {min_count}")
        if max_size is not None and max_size < len(SPECIAL_TOKENS):
            raise ValueError(f"max_size must be >= {len(SPECIAL_TOKENS)} (the specials)")
        paths = check_files(files)
        skip = stats if stats is not None else SkipStats()
        limit = max_tokens_per_line or DEFAULT_MAX_TOKENS_PER_LINE
        counts: Counter[str] = Counter()
        for path in paths:
            for tokens in read_sentences(path, max_tokens_per_line=limit, stats=skip):
                counts.update(tokens)
        for reserved in (*SPECIAL_TOKENS, MAXTERMID):
            counts.pop(reserved, None)
        words = sorted(
            (w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w)
        )
        if max_size is not None:
            words = words[: max_size - len(SPECIAL_TOKENS)]
        if skip.total:
            logger.warning("vocabulary build skipped %d bad lines: %s", skip.total, skip.as_dict())
        logger.info("vocabulary: %d words kept of %d types", len(words), len(counts))
        return cls((*SPECIAL_TOKENS, *words), source="built vocabulary")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Vocabulary:
        """Read a bilm-tf vocab file (one token per line; ``!!!MAXTERMID`` lines skipped).

        Raises:
            FileNotFoundError: the file does not exist.
            ValueError: not UTF-8, a blank or multi-token line, a duplicate, or a missing special
                token; the message names the file.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"vocabulary file not found: {path}")
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as err:
            raise ValueError(f"{path}: vocabulary file is not valid UTF-8 ({err})") from err
        lines = text.split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        tokens: list[str] = []
        for lineno, line in enumerate(lines, start=1):
            token = line.strip()
            if token == MAXTERMID:
                continue
            if not token or token.split() != [token]:
                raise ValueError(f"{path}:{lineno}: expected one token per line, got {line!r}")
            tokens.append(token)
        return cls(tokens, source=str(path))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the vocab file (one token per line, ``\\n`` endings, UTF-8), atomically."""
        write_bytes(path, self._file_bytes())

    # ----------------------------------------------------------------------------------- lookup
    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Ids of ``tokens``; out-of-vocabulary tokens map to ``<UNK>``."""
        get, unk = self._ids.get, self._unk
        return [get(t, unk) for t in tokens]

    def id(self, token: str) -> int:
        """Id of ``token`` (the ``<UNK>`` id when out of vocabulary)."""
        return self._ids.get(token, self._unk)

    def token(self, id: int) -> str:
        """Token with id ``id``.

        Raises:
            IndexError: ``id`` is outside ``[0, len(self))``.
        """
        if not 0 <= id < len(self._tokens):
            raise IndexError(f"token id {id} out of range for a vocabulary of {len(self)}")
        return self._tokens[id]

    def fingerprint(self) -> str:
        """sha256 (hex) of the token list: equal to the sha256 of the file :meth:`save` writes."""
        return hashlib.sha256(self._file_bytes()).hexdigest()

    @property
    def tokens(self) -> tuple[str, ...]:
        """All tokens in id order."""
        return self._tokens

    @property
    def bos_id(self) -> int:
        """Id of ``<S>``."""
        return self._bos

    @property
    def eos_id(self) -> int:
        """Id of ``</S>``."""
        return self._eos

    @property
    def unk_id(self) -> int:
        """Id of ``<UNK>``."""
        return self._unk

    def __len__(self) -> int:
        return len(self._tokens)

    def __contains__(self, token: object) -> bool:
        return token in self._ids

    def __iter__(self) -> Iterator[str]:
        return iter(self._tokens)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocabulary):
            return NotImplemented
        return self._tokens == other._tokens

    def __hash__(self) -> int:
        return hash(self._tokens)

    def __repr__(self) -> str:
        return f"Vocabulary(size={len(self)}, fingerprint={self.fingerprint()[:12]})"

    def _file_bytes(self) -> bytes:
        return ("\n".join(self._tokens) + "\n").encode("utf-8", "surrogatepass")
