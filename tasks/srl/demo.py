"""DEMO semantic-role set in the CoNLL-2012 column format, built from real public-domain English.

This is **not OntoNotes**. It exists so that the reader, the deep SRL tagger, the props writer and
the srl-eval.pl scorer run end to end without the licensed data, on real sentences whose labels
are hard enough that a small model does not saturate them in a few epochs.

Material: sentences of 6–35 tokens from ``train.txt`` of the project's public-domain corpus
(``../shared/data/corpus``: Jane Austen's six novels, the King James Bible, US inaugural and State
of the Union addresses; see its README for sources and licences). The corpus is cut into blocks
of 400 lines; block index % 10 == 8 goes to ``development``, == 9 to ``test``, the rest to
``train``, so dev and test sentences are unseen in training.

Labels are **heuristic** (rules in this module, no tagger or parser; spaCy has no English model
here), PropBank-style but not PropBank:

* predicates: tokens found in a hand-made verb lexicon (about 170 verbs with regular,
  irregular and archaic ``-eth``/``-est`` forms), unless a determiner or possessive precedes them
  ("his love" is a noun); forms of *be*, *have*, *do* are auxiliaries, never predicates;
* each predicate's clause is bounded by punctuation, coordinators and subordinators;
* before the verb: modals → ``ARGM-MOD``, *not*/*never* → ``ARGM-NEG``, ``-ly`` adverbs →
  ``ARGM-MNR``, time adverbs → ``ARGM-TMP``; the subject phrase → ``ARG0`` (``ARG1`` for a
  passive: a *be* form before a participle); a relative pronoun (*who*, *which*, *that*) in
  subject position → ``R-ARG0`` (``R-ARG1`` if passive) with the noun phrase before it as the
  argument; an empty subject after *and* or *to* (shared subject, control) reuses the subject of
  the previous predicate of the sentence;
* after the verb: for verbs of saying, ``unto``/``to`` + phrase → ``ARG2`` and the quotation or
  ``that``-clause to the end of the sentence → ``ARG1``; a pronoun between a giving verb and its
  object → ``ARG2``; the object phrase → ``ARG1`` (a ``to`` + verb complement included);
  prepositional phrases: *by* after a passive → ``ARG0``, *to*/*unto*/*into* after a verb of
  motion → ``ARG4``, time phrases → ``ARGM-TMP``, place phrases (a place noun or a capitalised
  name) → ``ARGM-LOC``, *with* → ``ARGM-MNR`` when it names a manner (``with joy``), *for* +
  phrase after a giving verb → ``ARG2``; any other phrase is left unlabelled (``O``).

The rules are consistent but lexical and noisy (a noun used as a verb, a missed boundary), so the
labels are learnable yet a small tagger stays well below 100 F1.

Usage (the committed files in ``tasks/srl/demo_data`` are exactly this command's output)::

    python -m tasks.srl.demo --corpus ../shared/data/corpus --out tasks/srl/demo_data

writes ``train.v4_gold_conll.gz``, ``development.v4_gold_conll.gz`` and ``test.v4_gold_conll.gz``
(gzip with mtime 0: same arguments give byte-identical files; document ids start with
``demo/``, a ``#`` notice is not allowed by the format, so the notice is this docstring and the
README). :func:`ensure_demo` unpacks them into ``<cache>/srl-demo-<hash>/{train,development,
test}/demo.v4_gold_conll`` and returns that folder, which the SRL recipe reads as ``--data``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bilm.files import write_bytes
from tasks.common.demo import DemoCommand, DemoSet, gzip_text

GENERATOR_VERSION = 1
DATA_DIR = Path(__file__).resolve().parent / "demo_data"
SPLITS = ("train", "development", "test")
FILE_NAME = "demo.v4_gold_conll"
DEFAULT_SIZES = {"train": 1650, "development": 280, "test": 280}  # sentences
BLOCK, GROUP = 400, 10  # corpus lines per block; block % GROUP == 8: dev, == 9: test
MIN_TOKENS, MAX_TOKENS = 6, 35
SENTENCES_PER_DOCUMENT = 20
# train.txt line ranges (1-based, inclusive) of the corpus sources, in file order
SOURCES = (
    ("austen", 1, 30792),
    ("kjv", 30793, 58642),
    ("inaugural", 58643, 63767),
    ("sotu", 63768, 80938),
)

# --- lexicon ---------------------------------------------------------------------------------

# base past participle (irregular verbs)
_IRREGULAR = """
arise arose arisen; become became become; begin began begun; behold beheld beheld;
bring brought brought; build built built; buy bought bought; choose chose chosen;
come came come; eat ate eaten; fall fell fallen; feel felt felt; fight fought fought;
find found found; flee fled fled; forget forgot forgotten; forgive forgave forgiven;
get got got; give gave given; go went gone; grow grew grown; hear heard heard; hide hid hidden;
hold held held; keep kept kept; know knew known; lay laid laid; lead led led; leave left left;
lose lost lost; make made made; meet met met; pay paid paid; put put put; read read read;
rise rose risen; run ran run; say said said; see saw seen; seek sought sought; sell sold sold;
send sent sent; set set set; shake shook shaken; shew shewed shewn; sit sat sat; slay slew slain;
speak spake spoken; spend spent spent; stand stood stood; strike smote smitten; swear sware sworn;
take took taken; teach taught taught; tell told told; think thought thought; throw threw thrown;
understand understood understood; win won won; write wrote written; smite smote smitten;
bear bare borne; drink drank drunk; forsake forsook forsaken; break brake broken
"""
_REGULAR = """
accept add admire agree allow answer appear ask attend believe belong call carry cease change
choose claim consider continue create cry declare deliver depend deserve desire destroy
determine die discover dwell encourage end enter establish expect explain fail fear fill finish
follow gather grant hope improve increase intend invite join kill laugh learn like listen live
look love marry mention mind move need observe obtain offer open order pass perceive perform
persuade place plan pray prepare preserve prevent promise protect prove provide pursue raise
reach receive recommend reduce refuse reign rejoice remain remember remove reply report require
rest return serve settle show smile strengthen succeed suffer suppose talk thank travel trust
try turn urge visit wait walk want wish wonder work worship
"""
_SAY = frozenset("say speak answer reply cry tell declare talk ask swear pray".split())
_GIVE = frozenset("give bring send offer tell show shew grant pay sell teach promise".split())
_MOTION = frozenset(
    "go come return flee run walk travel move enter bring send carry lead turn".split()
)

_BE = frozenset("be am is are was were been being art wast".split())
_HAVE_DO = frozenset("have has had hath hast having do does did doth dost didst".split())
_MODALS = frozenset("shall will would may might must can could should wilt shalt canst".split())
_NEGATION = frozenset("not never n't".split())
_TIME_ADVERBS = frozenset("then now today yesterday soon always often already once".split())
_DETERMINERS = frozenset(
    "the a an his my their its our your thy this these those every each no her".split()
)
_RELATIVES = frozenset("who which that whom".split())
_BOUNDARY_WORDS = frozenset(
    "and but or that which who whom when if because while though whereas lest nor".split()
)
_PUNCTUATION = frozenset(list(",;:.!?()\"'`") + ["--", "''", "``"])
_PREPOSITIONS = frozenset(
    """in on at by to unto into upon with from of for during after before until since
    toward towards through near within throughout among against over under about""".split()
)
_PRONOUNS = frozenset("him her them me us you thee ye it".split())
_TIME_WORDS = frozenset(
    """day days night nights morning evening year years time times hour hours week weeks month
    months season seasons age ages generation generations winter summer spring autumn moment
    century decade today war peace sabbath dinner breakfast""".split()
)
_PLACE_WORDS = frozenset(
    """house home land city country room field fields town temple street wilderness mountain
    mount world earth heaven place parish park village garden church states nation river sea
    gate gates camp hall house office capital congress office streets""".split()
)
_MANNER_WORDS = frozenset(
    """joy pleasure care haste delight respect kindness zeal courage gratitude anger fear
    confidence difficulty ease patience spirit""".split()
)


def _regular_forms(base: str) -> dict[str, str]:
    """Inflected forms of a regular verb → ``"base"`` / ``"past"`` / ``"participle"`` / …."""
    if base.endswith("e"):
        stem = base[:-1]
        past, ing, eth, est = base + "d", stem + "ing", stem + "eth", stem + "est"
    elif base.endswith("y") and base[-2] not in "aeiou":
        past, ing, eth, est = base[:-1] + "ied", base + "ing", base + "eth", base + "est"
    else:
        past, ing, eth, est = base + "ed", base + "ing", base + "eth", base + "est"
    if base.endswith(("s", "sh", "ch", "x")):
        third = base + "es"
    elif base.endswith("y") and base[-2] not in "aeiou":
        third = base[:-1] + "ies"
    else:
        third = base + "s"
    return {
        base: "base",
        third: "third",
        past: "participle",
        ing: "ing",
        eth: "third",
        est: "second",
    }


def verb_lexicon() -> dict[str, tuple[str, str]]:
    """Lowercased verb form → ``(lemma, form)``; ``form`` is ``participle`` for forms that can be
    passive participles, ``past`` for simple-past-only forms, else another tag."""
    lexicon: dict[str, tuple[str, str]] = {}
    for base in _REGULAR.split():
        for form, kind in _regular_forms(base).items():
            lexicon.setdefault(form, (base, kind))
    for entry in _IRREGULAR.replace("\n", " ").split(";"):
        if not entry.strip():
            continue
        base, past, participle = entry.split()
        for form, kind in _regular_forms(base).items():
            if kind != "participle":
                lexicon.setdefault(form, (base, kind))
        lexicon[base] = (base, "base")
        lexicon.setdefault(past, (base, "past"))
        lexicon[participle] = (base, "participle")
    for special, base in (("saith", "say"), ("hath", "have"), ("spoke", "speak")):
        lexicon[special] = (base, "third" if special.endswith("th") else "past")
    for aux in _BE | _HAVE_DO | _MODALS:
        lexicon.pop(aux, None)
    return lexicon


LEXICON = verb_lexicon()


# --- the rules ---------------------------------------------------------------------------------


@dataclass
class Frame:
    """One predicate and its labelled, non-overlapping argument spans (inclusive)."""

    predicate: int
    lemma: str
    spans: list[tuple[int, int, str]] = field(default_factory=list)
    subject: tuple[int, int] | None = None  # for the next predicate's shared subject

    def add(self, start: int, end: int, label: str) -> None:
        """Add a span unless it is empty, covers the predicate or overlaps another span."""
        if start > end or start <= self.predicate <= end:
            return
        if any(not (end < s or start > e) for s, e, _ in self.spans):
            return
        self.spans.append((start, end, label))


def _low(tokens: Sequence[str]) -> list[str]:
    return [t.lower() for t in tokens]


def find_predicates(tokens: Sequence[str]) -> list[int]:
    """Token positions of the predicates (lexicon verbs not preceded by a determiner)."""
    low = _low(tokens)
    found = []
    for i, word in enumerate(low):
        if word not in LEXICON:
            continue
        if i > 0 and (low[i - 1] in _DETERMINERS or low[i - 1] in _PREPOSITIONS - {"to"}):
            continue  # "his love", "of love": a noun
        if i > 0 and low[i - 1] == "to" and LEXICON[word][1] != "base":
            continue  # "to England", not an infinitive
        found.append(i)
    return found


def _is_boundary(low: Sequence[str], i: int) -> bool:
    return low[i] in _PUNCTUATION or low[i] in _BOUNDARY_WORDS


def _clause(low: Sequence[str], v: int, predicates: set[int]) -> tuple[int, int]:
    """``(first, last)`` token of the predicate's clause (boundaries excluded)."""
    first = v
    while first > 0 and not _is_boundary(low, first - 1):
        first -= 1
    last = v
    while last + 1 < len(low) and not _is_boundary(low, last + 1):
        last += 1
    return first, last


_INVERTED = _MODALS | _BE | _HAVE_DO | _TIME_ADVERBS | frozenset("so therefore thus yet".split())
_PARTICLES = frozenset("out up down away off forth back".split())


def _stops_subject(low: Sequence[str], i: int, predicates: set[int]) -> bool:
    """Whether token ``i`` cannot be part of a subject phrase."""
    word = low[i]
    return (
        i in predicates
        or (word in _PREPOSITIONS and word != "of")  # "the fame of him" is one subject
        or word in ("what", "to", "than", "as")
        or (word in _BE | _HAVE_DO and i > 0 and low[i - 1] not in _PUNCTUATION | _BOUNDARY_WORDS)
    )


def _phrase_end(low: Sequence[str], start: int, last: int, predicates: set[int]) -> int:
    """Last token of the phrase from ``start``: up to a preposition, a predicate or ``last``."""
    end = start
    while end + 1 <= last and low[end + 1] not in _PREPOSITIONS and end + 1 not in predicates:
        end += 1
    return end


def _pp_label(
    prep: str, words: Sequence[str], tokens: Sequence[str], lemma: str, passive: bool
) -> str | None:
    """The label of a prepositional phrase ``prep words`` after a verb of ``lemma``."""
    if prep == "by" and passive:
        return "ARG0"
    if prep in ("to", "unto", "into", "toward", "towards") and lemma in _MOTION:
        return "ARG4"
    if prep in ("to", "unto") and (lemma in _GIVE or lemma in _SAY):
        return "ARG2"
    if prep == "for" and lemma in _GIVE:
        return "ARG2"
    if any(w in _TIME_WORDS or (w.isdigit() and len(w) == 4) for w in words):
        if prep in ("in", "on", "at", "during", "after", "before", "until", "since", "for"):
            return "ARGM-TMP"
    if prep in ("in", "at", "on", "upon", "near", "within", "throughout", "from"):
        if any(w in _PLACE_WORDS for w in words) or any(t[:1].isupper() for t in tokens):
            return "ARGM-LOC"
    if prep == "with" and any(w in _MANNER_WORDS for w in words):
        return "ARGM-MNR"
    return None


def label_sentence(tokens: Sequence[str]) -> list[Frame]:
    """The heuristic frames of one tokenised sentence (module docstring for the rules)."""
    low = _low(tokens)
    predicates = find_predicates(tokens)
    pset = set(predicates)
    frames: list[Frame] = []
    previous_subject: tuple[int, int] | None = None
    for v in predicates:
        frame = _label_predicate(tokens, low, v, pset, previous_subject)
        frames.append(frame)
        previous_subject = frame.subject or previous_subject
    return frames


def _label_predicate(
    tokens: Sequence[str],
    low: Sequence[str],
    v: int,
    pset: set[int],
    previous_subject: tuple[int, int] | None,
) -> Frame:
    """The frame of the predicate at ``v``: its clause's left side, then its right side."""
    lemma, form = LEXICON[low[v]]
    frame = Frame(v, lemma)
    first, last = _clause(low, v, pset)
    i, passive = _left_modifiers(frame, low, v, first, form)
    core = "ARG1" if passive else "ARG0"
    _add_subject(frame, low, v, i, first, core, pset, previous_subject)
    j = v + 1
    if lemma in _SAY:
        j, complete = _say_arguments(frame, low, j, last, pset)
        if complete:
            return frame
    _add_right_arguments(frame, tokens, low, j, last, lemma, passive, pset)
    return frame


def _left_modifiers(
    frame: Frame, low: Sequence[str], v: int, first: int, form: str
) -> tuple[int, bool]:
    """Label modifiers and skip auxiliaries leftwards from the verb.

    Returns:
        The last token of the subject (the first one that is neither) and whether the verb is
        passive (a form of *be* before a participle).
    """
    i = v - 1
    passive = False
    while i >= first:
        word = low[i]
        if word in _MODALS:
            frame.add(i, i, "ARGM-MOD")
        elif word in _NEGATION:
            frame.add(i, i, "ARGM-NEG")
        elif word in _TIME_ADVERBS:
            frame.add(i, i, "ARGM-TMP")
        elif word.endswith("ly") and len(word) > 4:
            frame.add(i, i, "ARGM-MNR")
        elif word in _BE:
            passive = passive or form == "participle"
        elif word in _HAVE_DO or word == "to":
            pass
        else:
            break
        i -= 1
    return i, passive


def _add_subject(
    frame: Frame,
    low: Sequence[str],
    v: int,
    i: int,
    first: int,
    core: str,
    pset: set[int],
    previous_subject: tuple[int, int] | None,
) -> None:
    """The ``core`` argument left of the verb, ending at ``i``: a phrase in the clause, else the
    head of a relative pronoun's antecedent, else the previous predicate's subject when joined
    by *and* or *to*."""
    start = i  # the subject: back from i to a predicate, auxiliary, preposition or "what"
    while start - 1 >= first and not _stops_subject(low, start - 1, pset):
        start -= 1
    while start <= i and low[start] in _INVERTED:  # "Did she", "shall they", "Then he"
        if low[start] in _MODALS:
            frame.add(start, start, "ARGM-MOD")
        elif low[start] in _TIME_ADVERBS:
            frame.add(start, start, "ARGM-TMP")
        start += 1
    if i >= first and i not in pset and start <= i and i + 1 - start <= 8:
        frame.add(start, i, core)
        frame.subject = (start, i)
    elif i < first and first > 0 and low[first - 1] in _RELATIVES:
        _add_relative_antecedent(frame, low, first - 1, core, pset)
    elif i < first and previous_subject is not None:
        joined = (first > 0 and low[first - 1] == "and") or (v > 0 and low[v - 1] == "to")
        if joined and previous_subject[1] < v:
            frame.add(previous_subject[0], previous_subject[1], core)
            frame.subject = previous_subject


def _add_relative_antecedent(
    frame: Frame, low: Sequence[str], pronoun: int, core: str, pset: set[int]
) -> None:
    """``core`` on the (≤ 6-token) phrase before a relative pronoun, ``R-core`` on the pronoun."""
    head_end = pronoun - 1
    head_start = head_end
    while (
        head_start - 1 >= 0
        and head_end - head_start < 5
        and not _is_boundary(low, head_start - 1)
        and low[head_start - 1] not in _PREPOSITIONS
        and head_start - 1 not in pset
    ):
        head_start -= 1
    if head_end >= 0 and not _is_boundary(low, head_end) and head_end not in pset:
        frame.add(head_start, head_end, core)
        frame.add(pronoun, pronoun, "R-" + core)
        frame.subject = (head_start, head_end)


def _say_arguments(
    frame: Frame, low: Sequence[str], j: int, last: int, pset: set[int]
) -> tuple[int, bool]:
    """A verb of saying: the hearer (``unto``/``to`` phrase, ARG2), then the rest of the
    sentence as what is said (ARG1).

    Returns:
        The next token to label, and whether the frame is complete (ARG1 found).
    """
    if j <= last and low[j] in ("unto", "to") and j + 1 <= last:
        end = _phrase_end(low, j + 1, last, pset)
        frame.add(j, end, "ARG2")
        j = end + 1
    rest_start = j + 1 if j < len(low) and low[j] in (",", ":") else j
    if rest_start < len(low) and (rest_start > j or low[j] == "that"):
        rest_end = len(low) - 1
        while rest_end > rest_start and low[rest_end] in _PUNCTUATION:
            rest_end -= 1
        if rest_end - rest_start >= 1:
            frame.add(rest_start, rest_end, "ARG1")
            return j, True
    return j, False


def _add_right_arguments(
    frame: Frame,
    tokens: Sequence[str],
    low: Sequence[str],
    j: int,
    last: int,
    lemma: str,
    passive: bool,
    pset: set[int],
) -> None:
    """Right of the verb from ``j`` to the clause's ``last`` token: a particle, a pronoun
    recipient, the object or complement, then prepositional phrases and time adverbs."""
    if j <= last and low[j] in _PARTICLES:  # "went out", "laid up"
        if lemma in _MOTION:
            frame.add(j, j, "ARGM-DIR")
        j += 1
    if j <= last and low[j] in _PRONOUNS and lemma in _GIVE and j + 1 <= last:
        if low[j + 1] not in _PREPOSITIONS:
            frame.add(j, j, "ARG2")
            j += 1
    if j <= last and low[j] == "to" and j + 1 in pset:  # "wanted to go ...": the complement
        frame.add(j, last, "ARG1")
        j = last + 1
    elif j <= last and low[j] not in _PREPOSITIONS and j not in pset:
        end = _phrase_end(low, j, last, pset)
        if low[j] in _TIME_ADVERBS and end == j:
            frame.add(j, j, "ARGM-TMP")
        elif not passive:
            frame.add(j, end, "ARG1")
        j = end + 1
    while j <= last:
        if low[j] in _PREPOSITIONS and j + 1 <= last:
            end = _phrase_end(low, j + 1, last, pset)
            words = low[j + 1 : end + 1]
            label = _pp_label(low[j], words, tokens[j + 1 : end + 1], lemma, passive)
            if label is not None:
                frame.add(j, end, label)
            j = end + 1
        elif j in pset:
            break
        else:
            if low[j] in _TIME_ADVERBS:
                frame.add(j, j, "ARGM-TMP")
            j += 1


# --- corpus and CoNLL writing --------------------------------------------------------------------


def _source(line: int) -> str:
    for name, first, last in SOURCES:
        if first <= line <= last:
            return name
    return "other"


def _split_of(line: int) -> str:
    block = (line - 1) // BLOCK
    return {8: "development", 9: "test"}.get(block % GROUP, "train")


def read_corpus(corpus: str | Path) -> list[tuple[int, list[str]]]:
    """``(1-based line, tokens)`` of ``train.txt`` (``corpus`` is its folder or the file)."""
    path = Path(corpus)
    path = path / "train.txt" if path.is_dir() else path
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(n, line.split()) for n, line in enumerate(lines, start=1)]


def _srl_column(length: int, frame: Frame) -> list[str]:
    """The frame as a CoNLL-2012 bracket column (``(ARG0*``, ``*``, ``*)``, ``(V*)``)."""
    column = ["*"] * length
    for start, end, label in [*frame.spans, (frame.predicate, frame.predicate, "V")]:
        column[start] = f"({label}" + column[start]
        column[end] = column[end] + ")"
    return column


def conll_sentence(document: str, tokens: Sequence[str], frames: Sequence[Frame]) -> list[str]:
    """The column lines of one sentence (12 + one column per frame)."""
    lemmas = {f.predicate: f.lemma for f in frames}
    columns = [_srl_column(len(tokens), f) for f in frames]
    rows = []
    for i, token in enumerate(tokens):
        fields = [document, "0", str(i), token, "-", "*", lemmas.get(i, "-")]
        fields += ["01" if i in lemmas else "-", "-", "-", "*"]
        fields += [c[i] for c in columns] + ["-"]
        rows.append(" ".join(fields))
    return rows


def generate(
    corpus: str | Path | Sequence[tuple[int, list[str]]],
    sizes: dict[str, int] | None = None,
) -> dict[str, str]:
    """The three splits as CoNLL-2012 text: split folder name → file content.

    Every corpus sentence of the right length with at least one predicate that has an argument
    is a candidate; each split takes its size evenly spaced over its candidates (all sources
    contribute), in corpus order.

    Raises:
        ValueError: a negative size, or fewer eligible sentences than asked for.
    """
    sizes = dict(DEFAULT_SIZES if sizes is None else sizes)
    if any(n < 0 for n in sizes.values()):
        raise ValueError(f"sizes must be >= 0, got {sizes}")
    lines = read_corpus(corpus) if isinstance(corpus, (str, Path)) else corpus
    candidates: dict[str, list[tuple[int, Sequence[str], list[Frame]]]] = {s: [] for s in SPLITS}
    for number, tokens in lines:
        if MIN_TOKENS <= len(tokens) <= MAX_TOKENS:
            frames = [f for f in label_sentence(tokens) if f.spans]
            if frames:
                candidates[_split_of(number)].append((number, tokens, frames))
    chosen = {}
    for split in SPLITS:
        pool, n = candidates[split], sizes.get(split, 0)
        if len(pool) < n:
            raise ValueError(f"the corpus gives {len(pool)} {split} sentences, {n} asked")
        chosen[split] = [pool[k * len(pool) // n] for k in range(n)]
    out = {}
    for split in SPLITS:
        text: list[str] = []
        items = chosen[split]
        for d in range(0, len(items), SENTENCES_PER_DOCUMENT):
            part = items[d : d + SENTENCES_PER_DOCUMENT]
            document = f"demo/{_source(part[0][0])}/{split}_{d // SENTENCES_PER_DOCUMENT:04d}"
            text.append(f"#begin document ({document}); part 000")
            for _, tokens, frames in part:
                text.extend(conll_sentence(document, tokens, frames))
                text.append("")
            text.append("#end document")
        out[split] = "\n".join(text) + "\n"
    return out


def write(
    corpus: str | Path, out_dir: str | Path, sizes: dict[str, int] | None = None
) -> list[Path]:
    """Generate and write ``<split>.v4_gold_conll.gz`` for the three splits under ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for split, text in generate(corpus, sizes).items():
        path = out / f"{split}.v4_gold_conll.gz"
        write_bytes(path, gzip_text(text))
        paths.append(path)
    return paths


#: The committed set (``content_hash()`` names its unpacked folder; ``ensure_demo()`` returns the
#: folder holding ``train/``, ``development/`` and ``test/``).
DEMO = DemoSet(
    "srl",
    DATA_DIR,
    {f"{split}/{FILE_NAME}": f"{split}.v4_gold_conll.gz" for split in SPLITS},
)
content_hash = DEMO.content_hash
ensure_demo = DEMO.ensure

main = DemoCommand(
    "srl",
    "Write the DEMO SRL set (heuristic labels; not OntoNotes) in the CoNLL-2012 format from the "
    "public-domain corpus.",
    DEFAULT_SIZES,
    "sentences",
    lambda corpus, out, _seed, sizes: write(corpus, out, sizes),
    "DEMO data, heuristic labels, not OntoNotes",
    seed=False,
).main


if __name__ == "__main__":
    sys.exit(main())
