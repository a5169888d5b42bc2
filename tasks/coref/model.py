"""The end-to-end span-ranking coreference model of Lee et al. (2017), with ELMo at the input of
its biLSTM (Peters et al. 2018, §4, A.6) or at any other site the harness asks for.

Read top to bottom (e2e-coref @53c4116 ``coref_model.py``, ``best``; docs/reference/coref.md):

1. words → [fixed GloVe; fixed Turian; char CNN (widths 3, 4, 5)] → lexical dropout = ``text``
   (+ ELMo input mix, which carries the injector's own dropout)
2. one biLSTM layer per sentence → dropout (+ ELMo output mix) = ``context``
3. every span of ≤ ``max_span_width`` tokens inside one sentence (:func:`candidate_spans`):
   ``g = [context_start; context_end; width embedding; head attention over text]``
4. mention score ``s_m = FFNN(g)``; keep the ``⌊λ·T⌋`` best spans that do not cross a better one
   (:func:`prune_spans`), sorted by position
5. each kept span ``i`` ranks its ``K`` closest preceding kept spans and a dummy ε:
   ``s(i, j) = s_m(i) + s_m(j) + FFNN([g_i; g_j; g_i∘g_j; φ(i, j)])``, ``s(i, ε) = 0``, with φ the
   distance bucket, same-speaker and genre embeddings (:func:`distance_buckets`)
6. loss = −log Σ over gold antecedents of ``softmax(s(i, ·))`` (ε when there is none), summed
   over kept spans; prediction = the argmax antecedent, clusters by transitivity

Memory: candidate spans grow with ``T × max_span_width`` and pair scoring with
``⌊λT⌋ × K``; the pair FFNN runs over blocks of ``antecedent_block`` spans (re-computed in the
backward pass when a document needs several blocks), so no tensor is ``T × T`` and the pair
tensors of a block are ``block × K × width``. The first pair layer is applied as
``W_i g_i + W_j g_j + W_p (g_i∘g_j) + W_f φ``, the same affine map as a linear layer on the
concatenation (tested), without materialising the concatenation.

The context biLSTM is e2e-coref's ``CustomLSTMCell`` (:class:`CoupledBiLSTM`: coupled input and
forget gates, learned initial state, a recurrent dropout mask fixed over time, block-orthonormal
recurrent weights). Deviations from e2e-coref (documented, none changes the model's function
class): at least one span is kept when λT < 1; character windows over padding are masked.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.utils.checkpoint import checkpoint

from tasks.coref.config import CorefConfig
from tasks.features.inject import Injector
from tasks.representations import Layers

NUM_DISTANCE_BUCKETS = (
    10  # [0, 1, 2, 3, 4, 5–7, 8–15, 16–31, 32–63, 64+]; e2e-coref bucket_distance
)


@dataclass(frozen=True)
class CorefBatch:
    """One document (or a part of one). Shapes: (sentences, time) unless noted.

    Attributes:
        words: word ids (both word-vector tables share them).
        chars: (sentences, time, max_word_chars) character ids.
        mask: bool, real tokens.
        speakers: speaker id of each token (ids are per document; 0 at padding).
        genre: () genre id.
        gold_starts, gold_ends: (mentions,) document-level inclusive token spans of gold
            mentions (empty when the document has none); ``None`` without gold.
        gold_clusters: (mentions,) 1-based cluster of each gold mention.
        layers: representation layers (e.g. ELMo) of the sentences (:meth:`Layers.empty`
            without).
    """

    words: Tensor
    chars: Tensor
    mask: Tensor
    speakers: Tensor
    genre: Tensor
    gold_starts: Tensor | None
    gold_ends: Tensor | None
    gold_clusters: Tensor | None
    layers: Layers


@dataclass(frozen=True)
class CorefOutput:
    """Loss (``None`` without gold) and the kept spans with their chosen antecedents.

    Attributes:
        loss: 0-dim summed marginal log-likelihood loss, or ``None``.
        starts, ends: (k,) document-level token spans kept by pruning, sorted by position.
        antecedents: (k,) index into the kept spans of the predicted antecedent, −1 for ε.
        mention_scores: (k,) ``s_m`` of the kept spans.
        candidates: number of candidate spans scored.
    """

    loss: Tensor | None
    starts: Tensor
    ends: Tensor
    antecedents: Tensor
    mention_scores: Tensor
    candidates: int


# ------------------------------------------------------------------------------ pure helpers
def candidate_spans(sentence_of_token: Tensor, max_width: int) -> tuple[Tensor, Tensor]:
    """Every span of 1..``max_width`` tokens that lies inside one sentence.

    Args:
        sentence_of_token: (T,) sentence index of each token of the flattened document.
        max_width: the widest span.

    Returns:
        ``(starts, ends)``, each (N,), inclusive, ordered by start then width.
    """
    t = sentence_of_token.shape[0]
    starts = torch.arange(t, device=sentence_of_token.device)[:, None].expand(t, max_width)
    ends = starts + torch.arange(max_width, device=starts.device)[None, :]  # (T, W)
    inside = ends < t
    clamped = ends.clamp(max=max(t - 1, 0))
    inside &= sentence_of_token[starts] == sentence_of_token[clamped]  # (T, W)
    return starts[inside], ends[inside]


def prune_spans(
    starts: Sequence[int], ends: Sequence[int], scores: Sequence[float], k: int
) -> list[int]:
    """Greedy top-``k`` spans by score that cross no span accepted before (Lee et al. 2017 §5):
    span i is refused when an accepted span j has ``s_i < s_j ≤ e_i < e_j`` or
    ``s_j < s_i ≤ e_j < e_i``; nested and identical-boundary spans are allowed.

    Returns:
        Indices of the accepted spans sorted by ``(start, end)``.
    """
    order = sorted(range(len(scores)), key=lambda i: -scores[i])  # stable for ties
    ends_by_start: dict[int, list[int]] = {}
    starts_by_end: dict[int, list[int]] = {}
    chosen: list[int] = []
    for i in order:
        if len(chosen) >= k:
            break
        s, e = starts[i], ends[i]
        crossing = any(
            ej > e for sj in range(s + 1, e + 1) for ej in ends_by_start.get(sj, ())
        ) or any(sj < s for ej in range(s, e) for sj in starts_by_end.get(ej, ()))
        if crossing:
            continue
        chosen.append(i)
        ends_by_start.setdefault(s, []).append(e)
        starts_by_end.setdefault(e, []).append(s)
    return sorted(chosen, key=lambda i: (starts[i], ends[i]))


def distance_buckets(distances: Tensor) -> Tensor:
    """e2e-coref ``bucket_distance``: 0–4 as themselves, then ⌊log2 d⌋ + 3, capped at 9
    (buckets [0, 1, 2, 3, 4, 5–7, 8–15, 16–31, 32–63, 64+])."""
    log_space = torch.floor(torch.log2(distances.clamp(min=1).float())).long() + 3
    buckets = torch.where(distances <= 4, distances, log_space)
    return buckets.clamp(0, NUM_DISTANCE_BUCKETS - 1)


def antecedent_loss(scores: Tensor, labels: Tensor) -> Tensor:
    """Σ_i [logsumexp_j s(i, j) − logsumexp_{j gold} s(i, j)] over ``[ε; antecedents]``.

    Args:
        scores: (k, 1 + K), column 0 = ε (−inf where there is no antecedent).
        labels: (k, 1 + K) bool, at least one true per row (ε when no gold antecedent).
    """
    gold = scores.masked_fill(~labels, float("-inf"))
    return (torch.logsumexp(scores, dim=1) - torch.logsumexp(gold, dim=1)).sum()


def clusters_from_antecedents(
    starts: Sequence[int], ends: Sequence[int], antecedents: Sequence[int]
) -> list[list[tuple[int, int]]]:
    """Clusters by transitivity of the predicted links (e2e-coref ``get_predicted_clusters``):
    a span joins its antecedent's cluster; spans without a link and never chosen stay out."""
    cluster_of: dict[int, int] = {}
    clusters: list[list[tuple[int, int]]] = []
    for i, j in enumerate(antecedents):
        if j < 0:
            continue
        if j not in cluster_of:
            cluster_of[j] = len(clusters)
            clusters.append([(starts[j], ends[j])])
        cluster_of[i] = cluster_of[j]
        clusters[cluster_of[j]].append((starts[i], ends[i]))
    return clusters


# ------------------------------------------------------------------------------------ layers
class MultiWidthCharCNN(nn.Module):
    """Characters → ``len(widths) × filters`` features per word: one char embedding, a VALID
    convolution + ReLU per width, max over the windows that start on a real character
    (e2e-coref ``util.cnn``; padding tokens give 0)."""

    def __init__(self, n_chars: int, char_dim: int, widths: Sequence[int], filters: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(n_chars, char_dim, padding_idx=0)
        self.convs = nn.ModuleList(nn.Conv1d(char_dim, filters, w) for w in widths)
        self.widest = max(widths)
        self.output_dim = filters * len(widths)

    def forward(self, chars: Tensor) -> Tensor:
        """``chars`` (b, t, c) ids → (b, t, output_dim)."""
        b, t, c = chars.shape
        chars = F.pad(chars, (0, max(0, self.widest - c))).view(b * t, -1)  # (b·t, c')
        lengths = (chars != 0).sum(-1, keepdim=True)  # (b·t, 1)
        x = self.embedding(chars).transpose(1, 2)  # (b·t, char_dim, c')
        pooled = []
        for conv in self.convs:
            h = F.relu(conv(x))  # (b·t, filters, windows)
            starts = torch.arange(h.shape[2], device=h.device)[None, :]
            keep = (starts < lengths)[:, None, :]  # (b·t, 1, windows)
            pooled.append((h * keep).max(dim=2).values)  # (b·t, filters)
        return torch.cat(pooled, dim=-1).view(b, t, -1)


def ffnn(input_dim: int, hidden: int, depth: int, dropout: float) -> nn.Sequential:
    """``depth`` × (linear, ReLU, dropout) then a linear to 1 (e2e-coref ``util.ffnn``)."""
    layers: list[nn.Module] = []
    for i in range(depth):
        layers += [
            nn.Linear(input_dim if i == 0 else hidden, hidden),
            nn.ReLU(),
            nn.Dropout(dropout),
        ]
    layers.append(nn.Linear(hidden if depth else input_dim, 1))
    return nn.Sequential(*layers)


def block_orthonormal_(weight: Tensor, blocks: int) -> Tensor:
    """Fill ``weight`` (blocks · n, n) with ``blocks`` independent random orthogonal n × n blocks
    stacked along dim 0, in place (e2e-coref ``_block_orthonormal_initializer``, each block Haar
    distributed: QR of a Gaussian matrix with the signs of ``diag(R)`` fixed)."""
    with torch.no_grad():
        for block in weight.chunk(blocks, dim=0):
            nn.init.orthogonal_(block)
    return weight


def _tf_glorot_uniform_(tensor: Tensor, fan_in: int, fan_out: int) -> Tensor:
    """TensorFlow 1's default variable initialiser U(±√(6 / (fan_in + fan_out))), in place."""
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    with torch.no_grad():
        return tensor.uniform_(-bound, bound)


def reverse_padded(x: Tensor, lengths: Tensor) -> Tensor:
    """``tf.reverse_sequence``: reverse the first ``lengths[b]`` steps of each row, padding left
    in place. ``x`` (batch, time, ...), ``lengths`` (batch,) → same shape."""
    t = x.shape[1]
    steps = torch.arange(t, device=x.device)[None, :]  # (1, time)
    index = torch.where(steps < lengths[:, None], lengths[:, None] - 1 - steps, steps)  # (b, t)
    index = index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, index)


class CoupledBiLSTM(nn.Module):
    """Lee et al. (2017)'s context biLSTM (e2e-coref ``util.CustomLSTMCell`` in
    ``encode_sentences``), one forward and one backward cell with separate parameters.

    Per direction and step, with ``x̃_t = W_x x_t + b_x`` computed for all steps at once:

    * ``[i; j; o] = x̃_t + W_h (m ∘ h_{t−1}) + b_h``
    * ``c_t = (1 − σ(i)) ∘ c_{t−1} + σ(i) ∘ tanh(j)`` (input and forget gates coupled, f = 1 − i)
    * ``h_t = tanh(c_t) ∘ σ(o)``

    ``(c_0, h_0)`` is learned (one vector each, shared by all sentences); ``m`` is a dropout mask
    (0 or 1/(1 − p)) drawn once per sentence and direction and used at every step, ones in
    evaluation. The backward cell reads each sentence reversed within its length. Initialisation
    as the original: ``W_h`` (3H × H) three orthogonal H × H blocks; ``W_x``, the biases and the
    initial states TensorFlow 1's default Glorot uniform (a bias of n entries has fans (n, n), an
    initial state fans (1, H)).

    Args:
        input_dim: width of ``x_t``.
        hidden_dim: H, units per direction.
        dropout: p of the recurrent mask (e2e-coref: the model's ``dropout_rate``).
    """

    def __init__(self, input_dim: int, hidden_dim: int, dropout: float) -> None:
        super().__init__()
        h = hidden_dim
        self.input_dim, self.hidden_dim, self.dropout = input_dim, hidden_dim, dropout
        self.output_dim = 2 * h
        # direction d ∈ {0: forward, 1: backward} indexes dim 0 of every parameter
        self.input_weight = nn.Parameter(torch.empty(2, 3 * h, input_dim))
        self.input_bias = nn.Parameter(torch.empty(2, 3 * h))
        self.recurrent_weight = nn.Parameter(torch.empty(2, 3 * h, h))
        self.recurrent_bias = nn.Parameter(torch.empty(2, 3 * h))
        self.initial_cell = nn.Parameter(torch.empty(2, h))
        self.initial_hidden = nn.Parameter(torch.empty(2, h))
        for d in range(2):
            _tf_glorot_uniform_(self.input_weight[d], input_dim, 3 * h)
            block_orthonormal_(self.recurrent_weight[d], 3)
        for bias in (self.input_bias, self.recurrent_bias):
            _tf_glorot_uniform_(bias, 3 * h, 3 * h)
        for state in (self.initial_cell, self.initial_hidden):
            _tf_glorot_uniform_(state, 1, h)

    def recurrent_mask(self, batch: int) -> Tensor:
        """The dropout mask ``m`` of a batch: (2, batch, H), one row per direction and sentence
        (no time axis: the same mask at every step), values 0 or 1/(1 − p); ones unless
        training."""
        keep = self.initial_hidden.new_ones(2, batch, self.hidden_dim)
        if self.training and self.dropout > 0:
            keep = F.dropout(keep, self.dropout, training=True)
        return keep

    def forward(self, x: Tensor, mask: Tensor, keep: Tensor | None = None) -> Tensor:
        """``x`` (batch, time, in), ``mask`` (batch, time) right-padded → (batch, time, 2·H)
        ``[forward; backward]``, 0 at padded positions. ``keep``: the recurrent dropout mask
        (2, batch, H) to use, by default a fresh :meth:`recurrent_mask`."""
        b, t, _ = x.shape
        h_dim = self.hidden_dim
        lengths = mask.sum(1)  # (b,)
        projected = torch.einsum("bti,dgi->dbtg", x, self.input_weight)  # (2, b, t, 3H)
        projected = projected + self.input_bias[:, None, None, :]
        projected = torch.stack([projected[0], reverse_padded(projected[1], lengths)])
        hidden = self.initial_hidden[:, None, :].expand(2, b, h_dim)  # (2, b, H)
        cell = self.initial_cell[:, None, :].expand(2, b, h_dim)  # (2, b, H)
        keep = self.recurrent_mask(b) if keep is None else keep  # (2, b, H), fixed over time
        recurrent = self.recurrent_weight.transpose(1, 2)  # (2, H, 3H)
        bias = self.recurrent_bias[:, None, :]  # (2, 1, 3H)
        outputs = []
        # unbind: its backward stacks the steps' gradients once (indexing a step would fill
        # and add a zero (2, b, t, 3H) gradient per step)
        for projected_step in projected.unbind(2):  # t × (2, b, 3H)
            gates = projected_step + torch.baddbmm(bias, hidden * keep, recurrent)
            i, j, o = gates.chunk(3, dim=-1)  # (2, b, H) each
            i = torch.sigmoid(i)
            cell = (1 - i) * cell + i * torch.tanh(j)  # (2, b, H)
            hidden = torch.tanh(cell) * torch.sigmoid(o)  # (2, b, H)
            outputs.append(hidden)
        out = torch.stack(outputs, dim=2) if outputs else x.new_zeros(2, b, 0, h_dim)
        both = torch.cat([out[0], reverse_padded(out[1], lengths)], dim=-1)  # (b, t, 2H)
        return both * mask[:, :, None]


# ------------------------------------------------------------------------------------- model
class SpanRankingCoref(nn.Module):
    """Lee et al. (2017)'s model; every width is computed from its parts.

    Args:
        config: hyper-parameters.
        word_vectors: fixed tables, each (vocab, dim) sharing word ids (GloVe, then Turian);
            rows are L2-normalised here when ``config.normalize_word_vectors``.
        n_chars: size of the character vocabulary (0 pad, 1 unknown).
        n_genres: size of the genre vocabulary (0 = unknown genre).
        injector: ELMo (or any representation) injection; a ``none`` injector adds nothing.
    """

    def __init__(
        self,
        config: CorefConfig,
        word_vectors: Sequence[Tensor],
        n_chars: int,
        n_genres: int,
        injector: Injector,
    ) -> None:
        super().__init__()
        self.config, self.injector = config, injector
        tables = [
            F.normalize(v, dim=1) if config.normalize_word_vectors else v for v in word_vectors
        ]
        self.word_tables = nn.ModuleList(
            nn.Embedding.from_pretrained(v, freeze=True, padding_idx=0) for v in tables
        )
        self.chars = MultiWidthCharCNN(
            n_chars, config.char_dim, config.char_widths, config.char_filters
        )
        text_dim = sum(v.shape[1] for v in tables) + self.chars.output_dim
        self.lexical_dropout = nn.Dropout(config.lexical_dropout)
        self.dropout = nn.Dropout(config.dropout)  # between the FFNN layers
        # the dropout outside the FFNNs: the context LSTM's recurrent mask, its output and the
        # feature embeddings (none of them under allennlp's sites; see CorefConfig.dropout_sites)
        outer = config.dropout if config.dropout_sites == "e2e" else 0.0
        self.outer_dropout = nn.Dropout(outer)
        self.encoder = CoupledBiLSTM(text_dim + injector.extra_dim("input"), config.hidden, outer)
        context_dim = self.encoder.output_dim + injector.extra_dim("output")
        f = config.feature_size
        self.width_embedding = (
            nn.Embedding(config.max_span_width, f) if config.use_features else None
        )
        self.head_scorer = nn.Linear(context_dim, 1) if config.model_heads else None
        head_dim = text_dim + (injector.extra_dim("input") if config.head_reads_elmo else 0)
        self.span_dim = (
            2 * context_dim
            + (f if config.use_features else 0)
            + (head_dim if config.model_heads else 0)
        )
        self.mention_scorer = ffnn(
            self.span_dim, config.ffnn_size, config.ffnn_depth, config.dropout
        )
        self.speaker_embedding = nn.Embedding(2, f) if config.use_metadata else None
        self.genre_embedding = nn.Embedding(n_genres, f) if config.use_metadata else None
        self.distance_embedding = (
            nn.Embedding(NUM_DISTANCE_BUCKETS, f) if config.use_features else None
        )
        self.pair_feature_dim = (2 * f if config.use_metadata else 0) + (
            f if config.use_features else 0
        )
        self.pair_dim = 3 * self.span_dim + self.pair_feature_dim
        # the pair FFNN: its first layer is applied in parts (see module docstring)
        self.pair_first = nn.Linear(self.pair_dim, config.ffnn_size if config.ffnn_depth else 1)
        self.pair_rest = (
            ffnn(config.ffnn_size, config.ffnn_size, config.ffnn_depth - 1, config.dropout)
            if config.ffnn_depth
            else None
        )
        if config.init == "allennlp":  # coref.jsonnet's initializer (see CorefConfig.init)
            self._allennlp_init()

    def _allennlp_init(self) -> None:
        """Xavier-normal weights of every FFNN layer and of the feature embeddings (allennlp's
        ``linear_layers``, ``scorer``, ``_distance_embedding`` and ``_span_width_embedding``
        rules; the speaker and genre embeddings, which allennlp's model lacks, alike)."""
        scorers = [self.mention_scorer, self.pair_first, self.pair_rest]
        linears = [
            m for s in scorers if s is not None for m in s.modules() if isinstance(m, nn.Linear)
        ]
        tables = [
            self.width_embedding,
            self.distance_embedding,
            self.speaker_embedding,
            self.genre_embedding,
        ]
        for module in [*linears, *(t for t in tables if t is not None)]:
            nn.init.xavier_normal_(module.weight)

    # ------------------------------------------------------------------------ encoding
    def truncate(self, batch: CorefBatch) -> CorefBatch:
        """A random run of ``max_training_sentences`` sentences (e2e-coref
        ``truncate_example``), gold mentions inside it shifted; others dropped."""
        limit = self.config.max_training_sentences
        n = batch.mask.shape[0]
        if n <= limit:
            return batch
        first = int(torch.randint(0, n - limit + 1, ()).item())
        lengths = batch.mask.sum(1)
        offset = int(lengths[:first].sum())
        size = int(lengths[first : first + limit].sum())
        rows = slice(first, first + limit)
        gold = {}
        if batch.gold_starts is not None:
            assert batch.gold_ends is not None and batch.gold_clusters is not None
            inside = (batch.gold_starts >= offset) & (batch.gold_ends < offset + size)
            gold = {
                "gold_starts": batch.gold_starts[inside] - offset,
                "gold_ends": batch.gold_ends[inside] - offset,
                "gold_clusters": batch.gold_clusters[inside],
            }
        layers = Layers(batch.layers.tensors[:, rows], batch.layers.mask[rows])
        return replace(
            batch,
            words=batch.words[rows],
            chars=batch.chars[rows],
            mask=batch.mask[rows],
            speakers=batch.speakers[rows],
            layers=layers,
            **gold,
        )

    def encode(self, batch: CorefBatch) -> tuple[Tensor, Tensor, Tensor]:
        """Steps 1–2: flattened ``context`` (T, context_dim), the head attention's values (T,
        text_dim; with ``head_reads_elmo`` the encoder's input, text + the input site's
        representation) and the sentence index of each token (T,)."""
        mask = batch.mask
        injected = self.injector(batch.layers)
        words = [table(batch.words) for table in self.word_tables]  # each (n, t, dim)
        text = self.lexical_dropout(
            torch.cat([*words, self.chars(batch.chars)], dim=-1)
        )  # (n, t, text)
        x = self.injector.concat("input", text, injected)  # (n, t, text + elmo?)
        h = self.outer_dropout(self.encoder(x, mask))  # (n, t, 2·hidden)
        h = self.injector.concat("output", h, injected)  # (n, t, context_dim)
        rows = torch.arange(mask.shape[0], device=mask.device)[:, None].expand_as(mask)
        values = x if self.config.head_reads_elmo else text  # (n, t, head_dim)
        return h[mask], values[mask], rows[mask]  # (T, ·), (T, ·), (T,)

    def span_embeddings(
        self, context: Tensor, text: Tensor, starts: Tensor, ends: Tensor
    ) -> Tensor:
        """Step 3: ``[context_start; context_end; width; head]`` (N, span_dim)."""
        parts = [context[starts], context[ends]]  # (N, context_dim) each
        if self.width_embedding is not None:
            parts.append(self.outer_dropout(self.width_embedding(ends - starts)))  # (N, f)
        if self.head_scorer is not None:
            width = self.config.max_span_width
            offsets = torch.arange(width, device=starts.device)  # (W,)
            index = starts[:, None] + offsets[None, :]  # (N, W)
            inside = index <= ends[:, None]
            index = index.clamp(max=context.shape[0] - 1)
            logits = self.head_scorer(context).squeeze(-1)[index]  # (N, W)
            weights = F.softmax(logits.masked_fill(~inside, float("-inf")), dim=1)  # (N, W)
            head = text.new_zeros(starts.shape[0], text.shape[1])  # (N, text_dim)
            for w in range(width):  # a loop keeps inference memory at N × text_dim
                head = head + weights[:, w : w + 1] * text[index[:, w]]
            parts.append(head)
        return torch.cat(parts, dim=-1)  # (N, span_dim)

    # ------------------------------------------------------------------------- pairs
    def _block_scores(
        self,
        targets: Tensor,
        spans: Tensor,
        projected_i: Tensor,
        projected_j: Tensor,
        antecedents: Tensor,
        features: Tensor | None,
    ) -> Tensor:
        """(B, K) pair FFNN scores: the first layer in parts, then the rest of the FFNN."""
        d = self.span_dim
        weight = self.pair_first.weight  # (H, pair_dim)
        g_j = spans[antecedents]  # (B, K, d)
        hidden = (
            projected_i[:, None, :]  # (B, 1, H): W_i g_i + bias
            + projected_j[antecedents]  # (B, K, H): W_j g_j
            + (targets[:, None, :] * g_j) @ weight[:, 2 * d : 3 * d].T  # (B, K, H)
        )
        if features is not None:
            hidden = hidden + self.outer_dropout(features) @ weight[:, 3 * d :].T  # (B, K, H)
        if self.pair_rest is None:
            return hidden.squeeze(-1)
        return self.pair_rest(self.dropout(F.relu(hidden))).squeeze(-1)  # (B, K)

    def pair_features(self, speakers: Tensor, genre: Tensor, antecedents: Tensor) -> Tensor | None:
        """φ(i, j) = [same speaker; genre; distance bucket] embeddings (k, K, pair_feature_dim)
        (only the parts the configuration uses; ``None`` when it uses none)."""
        k, big_k = antecedents.shape
        parts = []
        if self.speaker_embedding is not None and self.genre_embedding is not None:
            same = (speakers[:, None] == speakers[antecedents]).long()  # (k, K)
            parts.append(self.speaker_embedding(same))  # (k, K, f)
            parts.append(self.genre_embedding(genre).expand(k, big_k, -1))  # (k, K, f)
        if self.distance_embedding is not None:
            offsets = torch.arange(1, big_k + 1, device=antecedents.device)  # i − j
            parts.append(self.distance_embedding(distance_buckets(offsets)).expand(k, big_k, -1))
        return torch.cat(parts, dim=-1) if parts else None

    def antecedent_scores(
        self, spans: Tensor, mention_scores: Tensor, speakers: Tensor, genre: Tensor
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Step 5 for ``k`` kept spans: (k, 1 + K) scores with ε in column 0 (−inf where no
        antecedent), the antecedent indices (k, K) and their validity (k, K)."""
        k = spans.shape[0]
        big_k = min(self.config.max_antecedents, max(k - 1, 0))
        rows = torch.arange(k, device=spans.device)
        antecedents = (
            rows[:, None] - 1 - torch.arange(big_k, device=spans.device)[None, :]
        )  # (k, K)
        valid = antecedents >= 0
        antecedents = antecedents.clamp(min=0)
        d = self.span_dim
        weight, bias = self.pair_first.weight, self.pair_first.bias
        projected_i = spans @ weight[:, :d].T + bias  # (k, H)
        projected_j = spans @ weight[:, d : 2 * d].T  # (k, H)
        features = self.pair_features(speakers, genre, antecedents)  # (k, K, F) or None
        block = self.config.antecedent_block
        blocks = []
        for i0 in range(0, k, block):
            i1 = min(k, i0 + block)
            args = (
                spans[i0:i1],
                spans,
                projected_i[i0:i1],
                projected_j,
                antecedents[i0:i1],
                None if features is None else features[i0:i1],
            )
            if self.training and k > block and torch.is_grad_enabled():
                blocks.append(checkpoint(self._block_scores, *args, use_reentrant=False))
            else:
                blocks.append(self._block_scores(*args))
        pair = torch.cat(blocks) if blocks else spans.new_zeros(0, big_k)  # (k, K)
        scores = mention_scores[:, None] + mention_scores[antecedents] + pair  # (k, K)
        scores = scores.masked_fill(~valid, float("-inf"))
        dummy = scores.new_zeros(k, 1)
        return torch.cat([dummy, scores], dim=1), antecedents, valid  # (k, 1 + K)

    # ----------------------------------------------------------------------- forward
    def forward(self, batch: CorefBatch) -> CorefOutput:
        """Scores, the kept spans with their predicted antecedents and, with gold, the loss."""
        if self.training:
            batch = self.truncate(batch)
        context, text, sentence_of_token = self.encode(batch)  # (T, ·)
        total = context.shape[0]
        starts, ends = candidate_spans(sentence_of_token, self.config.max_span_width)  # (N,)
        span_emb = self.span_embeddings(context, text, starts, ends)  # (N, span_dim)
        mention_scores = self.mention_scorer(span_emb).squeeze(-1)  # (N,)
        k = max(1, math.floor(total * self.config.spans_per_word)) if starts.numel() else 0
        kept = prune_spans(
            starts.tolist(), ends.tolist(), mention_scores.detach().float().tolist(), k
        )
        keep = torch.tensor(kept, dtype=torch.long, device=starts.device)
        top_starts, top_ends = starts[keep], ends[keep]  # (k,)
        top_emb, top_scores = span_emb[keep], mention_scores[keep]  # (k, d), (k,)
        flat_speakers = batch.speakers[batch.mask]  # (T,)
        scores, antecedents, valid = self.antecedent_scores(
            top_emb, top_scores, flat_speakers[top_starts], batch.genre
        )  # (k, 1 + K)
        best = scores.argmax(dim=1)  # (k,), 0 = ε
        predicted = (
            torch.where(
                best > 0, antecedents.gather(1, (best - 1).clamp(min=0)[:, None]).squeeze(1), -1
            )
            if antecedents.shape[1]
            else torch.full_like(best, -1)
        )
        loss = None
        if batch.gold_starts is not None:
            loss = self.loss(scores, antecedents, valid, top_starts, top_ends, batch)
            if loss.grad_fn is None and self.training:
                loss = loss + 0.0 * mention_scores.sum()  # no kept span: a zero with a graph
        return CorefOutput(loss, top_starts, top_ends, predicted, top_scores, int(starts.numel()))

    def loss(
        self,
        scores: Tensor,
        antecedents: Tensor,
        valid: Tensor,
        starts: Tensor,
        ends: Tensor,
        batch: CorefBatch,
    ) -> Tensor:
        """Step 6: the marginal log-likelihood of the gold antecedents of the kept spans."""
        assert batch.gold_starts is not None and batch.gold_ends is not None
        assert batch.gold_clusters is not None
        match = (starts[:, None] == batch.gold_starts[None, :]) & (
            ends[:, None] == batch.gold_ends[None, :]
        )  # (k, gold)
        matched = match.long() * batch.gold_clusters[None, :]  # (k, gold)
        cluster = torch.cat([matched.new_zeros(len(starts), 1), matched], dim=1).amax(dim=1)  # (k,)
        same = (cluster[antecedents] == cluster[:, None]) & (cluster[:, None] > 0) & valid
        labels = torch.cat([~same.any(dim=1, keepdim=True), same], dim=1)  # (k, 1 + K)
        return antecedent_loss(scores, labels)
