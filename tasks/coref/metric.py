"""MUC, B³, CEAF-e and the CoNLL F1, computed as the reference coreference scorer v8.01 does.

The official scorer of the CoNLL-2012 shared task and of Lee et al. (2017) / Peters et al. (2018) §4
is ``scorer.pl`` v8.01 (``lib/CorScorer.pm``; Pradhan et al. 2014, "Scoring coreference partitions
of predicted mentions: a reference implementation"). This module re-implements its arithmetic; the
behaviour below is the scorer's, re-expressed:

* Mentions are token spans ``(start, end)`` matched exactly. Key and response documents are scored
  separately and the metric **numerators and denominators are summed over documents** before
  dividing (micro average). recall = NR/DR, precision = NP/DP (0 when a denominator is 0),
  F1 = 2PR/(P+R); CoNLL F1 = mean of the MUC, B³ and CEAF-e F1.
* Repeated response mentions (``IdentifMentions``): walking the response clusters in order, a
  mention that is **also in the key** is kept at its first occurrence and removed from later ones
  (clusters left empty disappear); the scorer refuses to score a file with more than 10 such
  repeats (:attr:`CorefScore.repeated_mentions`). A repeated mention that is **not in the key**
  (twinless) is not removed: every copy counts.
* MUC (Vilain et al. 1995): recall = Σ_K (|K| − |p(K)|) / Σ_K (|K| − 1), where p(K) partitions K by
  the response and key mentions missing from the response are singleton parts; precision swaps the
  roles (twinless response mentions are singleton parts). Singleton clusters contribute nothing.
* B³ (Bagga & Baldwin 1998), on all clusters, singletons and twinless mentions included:
  recall = Σ_K Σ_R |K∩R|²/|K| / Σ_K |K|, precision = Σ_R Σ_K |K∩R|²/|R| / Σ_R |R|. Twinless response
  mentions enlarge the precision denominator; missing key mentions add 0 to the recall numerator.
* CEAF-e (Luo 2005), on all clusters: φ4(K, R) = 2|K∩R| / (|K| + |R|), an optimal one-to-one
  alignment of key and response clusters maximising Σφ4 (Kuhn–Munkres), recall = Σφ4 / #key
  clusters, precision = Σφ4 / #response clusters.

So a response that adds singleton clusters loses B³ and CEAF-e precision but no MUC; the CoNLL-2012
keys have no singletons.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from tasks.core import Column, MetricSpec
from tasks.metrics.prf import PRF, prf_scores

__all__ = [
    "MAX_REPEATED_MENTIONS",
    "AlignedClusters",
    "CorefScore",
    "DocumentScore",
    "align_clusters",
    "b_cubed",
    "ceafe",
    "max_weight_matching",
    "muc",
    "score_corpus",
    "score_document",
]

MAX_REPEATED_MENTIONS = 10  # v8.01: "Found too many repeated mentions (> 10) in the response"

Chain = Sequence[Hashable]


@dataclass(frozen=True)
class AlignedClusters:
    """Key and response clusters after the scorer's mention bookkeeping.

    Attributes:
        key: key clusters, mentions replaced by integer ids.
        response: response clusters with repeated key-matching mentions removed and empty clusters
            dropped; a twinless mention keeps every copy.
        repeated_mentions: number of removed repeats.
        mentions: mention identification (recall = exact matches / distinct key mentions,
            precision = exact matches / distinct response mentions).
    """

    key: tuple[tuple[int, ...], ...]
    response: tuple[tuple[int, ...], ...]
    repeated_mentions: int
    mentions: PRF


def align_clusters(
    key: Sequence[Sequence[Hashable]], response: Sequence[Sequence[Hashable]]
) -> AlignedClusters:
    """Give mentions integer ids and clean the response as ``IdentifMentions`` (v8.01) does.

    Args:
        key: key clusters of one document, each a sequence of mentions (any hashable, usually
            ``(start, end)``), in file order.
        response: response clusters of the same document, in file order.
    """
    ids: dict[Hashable, int] = {}
    counter = 0
    for cluster in key:
        for mention in cluster:
            ids[mention] = counter  # a mention repeated in the key keeps its last id, as in v8.01
            counter += 1
    key_chains = tuple(tuple(ids[m] for m in cluster) for cluster in key)

    matched: set[Hashable] = set()
    repeated = 0
    cleaned: list[list[Hashable]] = []
    for cluster in response:
        kept = []
        for mention in cluster:
            if mention in matched:
                repeated += 1
                continue
            if mention in ids:
                matched.add(mention)
            kept.append(mention)
        if kept:
            cleaned.append(kept)

    response_ids = dict(ids)
    for cluster in cleaned:
        for mention in cluster:
            if mention not in response_ids:
                response_ids[mention] = counter
                counter += 1
    response_chains = tuple(tuple(response_ids[m] for m in cluster) for cluster in cleaned)

    distinct_response = {m for cluster in cleaned for m in cluster}
    mentions = PRF(len(matched), len(ids), len(matched), len(distinct_response))
    return AlignedClusters(key_chains, response_chains, repeated, mentions)


def _index(chains: Sequence[Chain]) -> dict[Hashable, int]:
    """Mention → index of the last chain holding it (Perl ``Indexa``)."""
    index: dict[Hashable, int] = {}
    for i, chain in enumerate(chains):
        for mention in chain:
            index[mention] = i
    return index


def muc(key: Sequence[Chain], response: Sequence[Chain]) -> PRF:
    """MUC link-based recall and precision (Vilain et al. 1995) for one document.

    Correct links = Σ over response clusters of (mentions in the key − key clusters they touch),
    which equals Σ_K (|K| − |p(K)|). Key links = Σ (|K| − 1); response links = Σ (|R| − 1).
    """
    key_index = _index(key)
    correct = 0
    for chain in response:
        groups = Counter(key_index[m] for m in chain if m in key_index)
        correct += sum(size - 1 for size in groups.values())
    key_links = sum(len(chain) - 1 for chain in key if chain)
    response_links = sum(len(chain) - 1 for chain in response if chain)
    return PRF(correct, key_links, correct, response_links)


def b_cubed(key: Sequence[Chain], response: Sequence[Chain]) -> PRF:
    """B³ recall and precision (Bagga & Baldwin 1998) for one document, summed over mentions.

    Iterates over response mentions as v8.01 ``BCUBED`` does: each contributes |K∩R|/|R| to the
    precision numerator and |K∩R|/|K| to the recall numerator, K being its key cluster (empty for a
    twinless mention). Denominators: number of key mentions, number of response mentions.
    """
    key_index = _index(key)
    key_sets = [set(chain) for chain in key]
    recall_num = precision_num = 0.0
    for chain in response:
        overlap: dict[int, int] = {}
        for mention in chain:
            k = key_index.get(mention)
            if k is None:
                continue
            if k not in overlap:
                overlap[k] = sum(1 for m in chain if m in key_sets[k])
            common = overlap[k]
            precision_num += common / len(chain)
            recall_num += common / len(key[k])
    key_mentions = sum(len(chain) for chain in key)
    response_mentions = sum(len(chain) for chain in response)
    return PRF(recall_num, key_mentions, precision_num, response_mentions)


def _phi4(key: Chain, response: Chain, response_set: set[Hashable]) -> float:
    common = sum(1 for m in key if m in response_set)
    return 2 * common / (len(key) + len(response)) if common else 0.0


def ceafe(key: Sequence[Chain], response: Sequence[Chain]) -> PRF:
    """Entity-based CEAF with φ4 similarity (Luo 2005) and an optimal alignment, one document.

    Clusters that share no mention have φ4 = 0, so the alignment is solved separately on each
    connected component of the key/response overlap graph (exactly the same optimum, much faster).
    """
    key = [chain for chain in key if chain]
    response = [chain for chain in response if chain]
    response_sets = [set(chain) for chain in response]
    holders: dict[Hashable, set[int]] = {}
    for j, chain in enumerate(response):
        for mention in chain:
            holders.setdefault(mention, set()).add(j)
    edges: dict[int, set[int]] = {
        i: set().union(*(holders.get(m, set()) for m in chain)) for i, chain in enumerate(key)
    }
    reverse: dict[int, set[int]] = {}
    for i, js in edges.items():
        for j in js:
            reverse.setdefault(j, set()).add(i)

    total = 0.0
    seen: set[int] = set()
    for root in range(len(key)):
        if root in seen or not edges[root]:
            continue
        keys = {root}
        responses: set[int] = set()
        frontier = [root]
        while frontier:  # the connected component of key cluster ``root``
            for j in edges[frontier.pop()] - responses:
                responses.add(j)
                frontier.extend(reverse[j] - keys)
                keys.update(reverse[j])
        seen.update(keys)
        rows, cols = sorted(keys), sorted(responses)
        weights = [[_phi4(key[i], response[j], response_sets[j]) for j in cols] for i in rows]
        total += sum(weights[r][c] for r, c in max_weight_matching(weights))
    return PRF(total, len(key), total, len(response))


def max_weight_matching(weights: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """Maximum-weight one-to-one assignment of rows to columns (rectangular allowed).

    Every row is assigned when rows ≤ columns (every column otherwise), which for non-negative
    weights such as φ4 is a maximum-weight matching.

    The Kuhn–Munkres (Hungarian) algorithm with dual potentials and shortest augmenting paths,
    O(n²·m); written here to avoid a scipy dependency.

    Returns:
        ``(row, column)`` pairs, one per row when rows ≤ columns, else one per column.
    """
    rows = len(weights)
    cols = len(weights[0]) if rows else 0
    if rows == 0 or cols == 0:
        return []
    if rows > cols:
        transposed = [[weights[r][c] for r in range(rows)] for c in range(cols)]
        return [(r, c) for c, r in max_weight_matching(transposed)]
    # Minimise cost = -weight. 1-based arrays; column 0 is the virtual start of each augmentation.
    inf = float("inf")
    u = [0.0] * (rows + 1)
    v = [0.0] * (cols + 1)
    owner = [0] * (cols + 1)  # owner[j] = row assigned to column j (0 = free)
    way = [0] * (cols + 1)
    for row in range(1, rows + 1):
        owner[0] = row
        j0 = 0
        min_slack = [inf] * (cols + 1)
        used = [False] * (cols + 1)
        while True:
            used[j0] = True
            i0 = owner[j0]
            delta, j1 = inf, 0
            for j in range(1, cols + 1):
                if used[j]:
                    continue
                slack = -weights[i0 - 1][j - 1] - u[i0] - v[j]
                if slack < min_slack[j]:
                    min_slack[j], way[j] = slack, j0
                if min_slack[j] < delta:
                    delta, j1 = min_slack[j], j
            for j in range(cols + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    min_slack[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while j0:  # augment along the alternating path
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    return sorted((owner[j] - 1, j - 1) for j in range(1, cols + 1) if owner[j])


@dataclass(frozen=True)
class DocumentScore:
    """Per-document numerators/denominators of each metric."""

    muc: PRF
    b_cubed: PRF
    ceafe: PRF
    mentions: PRF
    repeated_mentions: int


def score_document(
    key: Sequence[Sequence[Hashable]], response: Sequence[Sequence[Hashable]]
) -> DocumentScore:
    """Score one document's response clusters against its key clusters (v8.01 semantics)."""
    aligned = align_clusters(key, response)
    return DocumentScore(
        muc=muc(aligned.key, aligned.response),
        b_cubed=b_cubed(aligned.key, aligned.response),
        ceafe=ceafe(aligned.key, aligned.response),
        mentions=aligned.mentions,
        repeated_mentions=aligned.repeated_mentions,
    )


@dataclass(frozen=True)
class CorefScore:
    """Corpus-level scores: per-metric sums over documents.

    Attributes:
        muc, b_cubed, ceafe: summed numerators/denominators.
        mentions: mention identification.
        repeated_mentions: removed repeated key-matching response mentions (v8.01 refuses to score
            when this exceeds :data:`MAX_REPEATED_MENTIONS`).
        num_documents: documents scored.
    """

    muc: PRF
    b_cubed: PRF
    ceafe: PRF
    mentions: PRF
    repeated_mentions: int
    num_documents: int

    @property
    def conll_f1(self) -> float:
        """Mean of the MUC, B³ and CEAF-e F1 (a fraction)."""
        return (self.muc.f1 + self.b_cubed.f1 + self.ceafe.f1) / 3

    def to_dict(self) -> dict[str, object]:
        """JSON-friendly report, percentages in percent."""
        return {
            "muc": self.muc.as_dict(scale=100),
            "bcub": self.b_cubed.as_dict(scale=100),
            "ceafe": self.ceafe.as_dict(scale=100),
            "conll_f1": 100 * self.conll_f1,
            "mentions": self.mentions.as_dict(scale=100),
            "repeated_mentions": self.repeated_mentions,
            "num_documents": self.num_documents,
        }


def score_corpus(
    documents: Iterable[tuple[Sequence[Sequence[Hashable]], Sequence[Sequence[Hashable]]]],
) -> CorefScore:
    """Sum :func:`score_document` over ``(key clusters, response clusters)`` pairs."""
    muc_total = bcub_total = ceafe_total = mention_total = PRF()
    repeated = count = 0
    for key, response in documents:
        score = score_document(key, response)
        muc_total += score.muc
        bcub_total += score.b_cubed
        ceafe_total += score.ceafe
        mention_total += score.mentions
        repeated += score.repeated_mentions
        count += 1
    return CorefScore(muc_total, bcub_total, ceafe_total, mention_total, repeated, count)


#: The CoNLL average F1 (mean of MUC, B³ and CEAF-e F1) and its parts, shown in percent.
CONLL_F1 = MetricSpec("conll_f1", label="Avg. F1", higher_is_better=True, scale=100.0, decimals=1)
MUC_F1 = MetricSpec("muc_f1", label="MUC F1", scale=100.0, decimals=1)
BCUB_F1 = MetricSpec("bcub_f1", label="B³ F1", scale=100.0, decimals=1)
CEAFE_F1 = MetricSpec("ceafe_f1", label="CEAF-e F1", scale=100.0, decimals=1)


def conll_f1_from_totals(totals: Sequence[Column]) -> Column:
    """The CoNLL average F1 from the column sums of per-document rows of the MUC, B³ and
    CEAF-e recall numerator / denominator and precision numerator / denominator (12 columns);
    floats or ``(m,)`` arrays (:attr:`tasks.core.TaskSpec.metric_from_totals`). Each F1 as
    :meth:`PRF.scores` computes it."""
    muc, bcub, ceafe = (
        prf_scores(totals[i], totals[i + 1], totals[i + 2], totals[i + 3])[2] for i in (0, 4, 8)
    )
    return (muc + bcub + ceafe) / 3
