"""Streaming bidirectional LM batches: semantics of bilm-tf _get_batch, resume, bad input, DDP."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import torch

from bilm import corpus
from bilm.chars import BOS_TOKEN, EOS_TOKEN, batch_to_ids
from bilm.corpus import SkipStats, count_tokens
from bilm.lm_data import BidirectionalLMStream, LMBatch
from bilm.vocab import Vocabulary

SENTENCE_LENGTHS = [[1, 4, 2, 5, 3, 1, 2], [3, 1, 6, 2], [2, 2, 4]]  # three shards


def make_shards(tmp_path: Path) -> list[Path]:
    """Shards whose tokens name their sentence (s<k>w<j>), so every token is traceable."""
    paths, k = [], 0
    for i, lengths in enumerate(SENTENCE_LENGTHS):
        lines = []
        for n in lengths:
            lines.append(" ".join(f"s{k}w{j}" for j in range(n)))
            k += 1
        path = tmp_path / f"shard{i}.txt"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    return make_shards(tmp_path)


@pytest.fixture
def vocab(shards: list[Path]) -> Vocabulary:
    full = Vocabulary.build(shards)
    return Vocabulary(full.tokens[:-5])  # a few OOV words → <UNK> targets


def take(stream: BidirectionalLMStream, n: int) -> list[LMBatch]:
    return [next(stream) for _ in range(n)]


def assert_same(a: list[LMBatch], b: list[LMBatch]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.reset_state == y.reset_state and x.n_tokens == y.n_tokens
        for dx, dy in ((x.forward, y.forward), (x.backward, y.backward)):
            assert dx.tokens == dy.tokens
            assert torch.equal(dx.char_ids, dy.char_ids)
            assert torch.equal(dx.targets, dy.targets)
            assert torch.equal(dx.mask, dy.mask)


def test_stream_inputs_and_next_token_targets_exact(shards: list[Path], vocab: Vocabulary) -> None:
    stream = BidirectionalLMStream(shards[2:], vocab, batch_size=1, unroll_steps=4, shuffle=False)
    b1, b2, b3 = take(stream, 3)
    # shard2's sentences, twice (the stream starts epoch 2 with the same order: shuffle=False)
    s = [["s11w0", "s11w1"], ["s12w0", "s12w1"], ["s13w0", "s13w1", "s13w2", "s13w3"]] * 2
    stream_tokens = [t for sent in s for t in [BOS_TOKEN, *sent, EOS_TOKEN]]
    inputs = [t for t in stream_tokens if t != EOS_TOKEN]  # the last token is only a target
    targets = [t for t in stream_tokens if t != BOS_TOKEN]
    got_in = b1.forward.tokens[0] + b2.forward.tokens[0] + b3.forward.tokens[0]
    assert got_in == inputs[:12]
    got_tg = torch.cat([b.forward.targets[0] for b in (b1, b2, b3)]).tolist()
    assert got_tg == vocab.encode(targets[:12])
    # the backward stream: the same sentences reversed, </S> first, <S> only a target
    bw = b1.backward.tokens[0] + b2.backward.tokens[0]
    assert bw[:4] == [EOS_TOKEN, "s11w1", "s11w0", EOS_TOKEN]
    assert b1.backward.targets[0].tolist() == vocab.encode(["s11w1", "s11w0", BOS_TOKEN, "s12w1"])
    assert b1.forward.mask.all() and b1.n_tokens == 8 and not b1.reset_state
    assert torch.equal(b1.forward.char_ids, batch_to_ids(b1.forward.tokens))
    assert b1.forward.char_ids.shape == (1, 4, 50) and b1.forward.targets.dtype == torch.long


def test_oov_targets_map_to_unk(shards: list[Path], vocab: Vocabulary) -> None:
    stream = BidirectionalLMStream(shards, vocab, batch_size=2, unroll_steps=5, max_epochs=1)
    unk = 0
    for batch in stream:
        for half in (batch.forward, batch.backward):
            for row, ids in zip(half.tokens, half.targets.tolist(), strict=True):
                # a row's next input is the previous target, except at sentence boundaries
                for t in range(len(row) - 1):
                    if ids[t] not in (vocab.bos_id, vocab.eos_id):
                        assert vocab.id(row[t + 1]) == ids[t]
            unk += int((half.targets == vocab.unk_id).sum())
    assert unk > 0


def test_rows_are_continuous_across_batches_and_boundaries(
    shards: list[Path], vocab: Vocabulary
) -> None:
    stream = BidirectionalLMStream(shards, vocab, batch_size=3, unroll_steps=4, seed=3)
    batches = take(stream, 12)
    for name, first, last in (
        ("forward", BOS_TOKEN, EOS_TOKEN),
        ("backward", EOS_TOKEN, BOS_TOKEN),
    ):
        for r in range(3):
            inputs = [t for b in batches for t in getattr(b, name).tokens[r]]
            targets = [
                vocab.token(i) for b in batches for i in getattr(b, name).targets[r].tolist()
            ]
            assert last not in inputs  # the final boundary token is only ever a target
            for t in range(len(inputs) - 1):
                if targets[t] == last:
                    assert inputs[t + 1] == first  # the next sentence starts with its own boundary
                elif targets[t] != "<UNK>":
                    assert inputs[t + 1] == targets[t]


def collect_sentences(stream: BidirectionalLMStream, name: str) -> list[tuple[str, ...]]:
    out = []
    for batch in stream:
        half = getattr(batch, name)
        out.append(tuple(t for t in half.tokens[0] if t))
    return out


def test_backward_is_reversed_and_independently_shuffled(
    shards: list[Path], vocab: Vocabulary
) -> None:
    kwargs = dict(batch_size=1, unroll_steps=10, mode="sentence", max_epochs=1, seed=5)
    fwd = collect_sentences(BidirectionalLMStream(shards, vocab, **kwargs), "forward")
    bwd = collect_sentences(BidirectionalLMStream(shards, vocab, **kwargs), "backward")
    assert len(fwd) == len(bwd) == sum(map(len, SENTENCE_LENGTHS))
    assert all(s[0] == BOS_TOKEN for s in fwd) and all(s[0] == EOS_TOKEN for s in bwd)
    as_forward = [(BOS_TOKEN, *reversed(s[1:])) for s in bwd]
    assert sorted(as_forward) == sorted(fwd)  # the same sentences, reversed ...
    assert as_forward != fwd  # ... in another order


def test_shuffle_false_reads_files_in_order(shards: list[Path], vocab: Vocabulary) -> None:
    kwargs = dict(batch_size=1, unroll_steps=10, mode="sentence", max_epochs=1, shuffle=False)
    fwd = collect_sentences(BidirectionalLMStream(shards, vocab, **kwargs), "forward")
    assert [s[1] for s in fwd] == [f"s{k}w0" for k in range(len(fwd))]


def test_deterministic_by_seed(shards: list[Path], vocab: Vocabulary) -> None:
    def run(seed: int) -> list[LMBatch]:
        return take(
            BidirectionalLMStream(shards, vocab, batch_size=2, unroll_steps=3, seed=seed), 15
        )

    assert_same(run(7), run(7))
    assert [b.forward.tokens for b in run(7)] != [b.forward.tokens for b in run(8)]
    assert [b.backward.tokens for b in run(7)] != [b.backward.tokens for b in run(8)]


@pytest.mark.parametrize("mode", ["stream", "sentence"])
def test_resume_is_exact_across_shard_and_epoch_boundaries(
    shards: list[Path], vocab: Vocabulary, mode: str
) -> None:
    kwargs = dict(batch_size=2, unroll_steps=3, mode=mode, seed=11)
    reference = take(BidirectionalLMStream(shards, vocab, **kwargs), 34)
    seen = {d: set() for d in ("forward", "backward")}
    for k in range(0, 30, 1 if mode == "stream" else 2):
        stream = BidirectionalLMStream(shards, vocab, **kwargs)
        take(stream, k)
        state = json.loads(json.dumps(stream.state_dict()))
        for d in seen:
            s = state["streams"][d]
            seen[d].add((s["epoch"], s["shard_pos"], s["shard_size"] is None))
        resumed = BidirectionalLMStream(shards, vocab, **kwargs)
        resumed.load_state_dict(state)
        assert resumed.batches == k
        assert_same(take(resumed, 4), reference[k : k + 4])
    for d in seen:  # the resume points covered several shards, two epochs, mid- and end-of-shard
        assert {e for e, _, _ in seen[d]} >= {0, 1}
        assert len({p for _, p, _ in seen[d]}) >= 3
        assert {between for _, _, between in seen[d]} == {True, False}


def test_resume_rejects_other_settings(shards: list[Path], vocab: Vocabulary) -> None:
    stream = BidirectionalLMStream(shards, vocab, batch_size=2, unroll_steps=3)
    take(stream, 2)
    state = stream.state_dict()
    with pytest.raises(ValueError, match="unroll_steps"):
        BidirectionalLMStream(shards, vocab, batch_size=2, unroll_steps=4).load_state_dict(state)
    other = Vocabulary(vocab.tokens[:-1])
    with pytest.raises(ValueError, match="vocab"):
        BidirectionalLMStream(shards, other, batch_size=2, unroll_steps=3).load_state_dict(state)
    one = BidirectionalLMStream(shards[:1], vocab, batch_size=1, unroll_steps=2)
    next(one)
    state = one.state_dict()
    assert state["streams"]["forward"]["shard_size"] == len(SENTENCE_LENGTHS[0])
    with shards[0].open("a", encoding="utf-8") as f:
        f.write("an extra sentence\n")
    with pytest.raises(ValueError, match="shard0.txt .*changed"):
        BidirectionalLMStream(shards[:1], vocab, batch_size=1, unroll_steps=2).load_state_dict(
            state
        )


def test_rank_slices_union_equals_single_process(shards: list[Path], vocab: Vocabulary) -> None:
    for mode in ("stream", "sentence"):
        kwargs = dict(batch_size=4, unroll_steps=3, mode=mode, seed=2)
        single = take(BidirectionalLMStream(shards, vocab, **kwargs), 10)
        for world in (2, 4):
            ranks = [
                take(BidirectionalLMStream(shards, vocab, rank=r, world_size=world, **kwargs), 10)
                for r in range(world)
            ]
            for i, whole in enumerate(single):
                for name in ("forward", "backward"):
                    parts = [getattr(rank[i], name) for rank in ranks]
                    want = getattr(whole, name)
                    assert [row for p in parts for row in p.tokens] == want.tokens
                    for field in ("char_ids", "targets", "mask"):
                        got = torch.cat([getattr(p, field) for p in parts])
                        assert torch.equal(got, getattr(want, field))
                    assert parts[0].targets.shape[0] == 4 // world
    with pytest.raises(ValueError, match="divisible"):
        BidirectionalLMStream(shards, vocab, batch_size=3, world_size=2)


def test_sentence_mode_pads_truncates_and_resets(shards: list[Path], vocab: Vocabulary) -> None:
    stream = BidirectionalLMStream(
        shards[:1], vocab, batch_size=7, unroll_steps=4, mode="sentence", shuffle=False
    )
    batch = next(stream)
    lengths = [n + 1 for n in SENTENCE_LENGTHS[0]]  # inputs: <S> + tokens
    assert batch.reset_state
    assert batch.forward.mask.sum(1).tolist() == [min(n, 4) for n in lengths]
    assert batch.n_tokens == 2 * sum(min(n, 4) for n in lengths)
    assert batch.forward.tokens[0] == [BOS_TOKEN, "s0w0", "", ""]
    assert batch.forward.char_ids[0, 2:].eq(0).all() and batch.forward.targets[0, 2:].eq(0).all()
    assert batch.forward.targets[0, :2].tolist() == vocab.encode(["s0w0", EOS_TOKEN])
    assert stream.truncated == 2 * 2  # the 4- and 5-token sentences, both directions


def test_max_epochs_drops_final_incomplete_batch(shards: list[Path], vocab: Vocabulary) -> None:
    stream = BidirectionalLMStream(shards, vocab, batch_size=1, unroll_steps=4, max_epochs=2)
    n_targets = count_tokens(shards) + sum(map(len, SENTENCE_LENGTHS))  # + one </S> a sentence
    assert len(list(stream)) == 2 * n_targets // 4
    with pytest.raises(StopIteration):
        next(stream)


def test_bad_lines_skipped_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus, "MAX_LINE_BYTES", 64)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(
        b"\xef\xbb\xbfok one\r\n"  # BOM and CRLF: fine
        b"\n   \t \n"  # 2 empty
        + b" ".join([b"w"] * 9)
        + b"\n"  # too many tokens
        + b"x" * 200
        + b"\n"  # too many bytes
        b"caf\xe9 latin1\n\xc3\x28 broken\n"  # 2 invalid UTF-8
        b"nul\x00byte\nbell\x07 x\n"  # 2 control chars
        b"ok two\nPK\x03\x04\x00\x00 garbage \x00\x01"  # binary tail, no newline
    )
    good = tmp_path / "good.txt"
    good.write_text("fine line here\n", encoding="utf-8")
    vocab = Vocabulary.build([good])
    stream = BidirectionalLMStream(
        [bad, good], vocab, batch_size=1, unroll_steps=2, max_epochs=3, max_tokens_per_line=8
    )
    seen = {t for batch in stream for t in batch.forward.tokens[0]}
    assert {"ok", "one", "two", "fine"} <= seen and not seen & {"w", "byte", "broken", "garbage"}
    expected = {"empty": 2, "too_long": 2, "invalid_utf8": 2, "control_chars": 3}
    assert stream.skip_stats.as_dict() == expected  # each shard counted once, not per epoch
    stats = SkipStats()
    assert count_tokens([bad], max_tokens_per_line=8, stats=stats) == 4
    assert stats.as_dict() == expected and stats.total == 9


def test_skip_counts_survive_resume(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"a b c\n\n\xff\nd e\n")
    vocab = Vocabulary.build([path])
    stream = BidirectionalLMStream([path], vocab, batch_size=1, unroll_steps=2)
    take(stream, 3)
    resumed = BidirectionalLMStream([path], vocab, batch_size=1, unroll_steps=2)
    resumed.load_state_dict(stream.state_dict())
    take(resumed, 5)
    assert resumed.skip_stats.as_dict() == {**SkipStats().as_dict(), "empty": 1, "invalid_utf8": 1}


def test_missing_shard_named_at_construction(shards: list[Path], vocab: Vocabulary) -> None:
    missing = shards[0].with_name("gone.txt")
    with pytest.raises(FileNotFoundError, match="gone.txt"):
        BidirectionalLMStream([shards[1], missing], vocab, batch_size=1)
    with pytest.raises(FileNotFoundError, match="gone.txt"):
        count_tokens([missing])
    with pytest.raises(TypeError):
        BidirectionalLMStream(str(shards[0]), vocab, batch_size=1)  # type: ignore[arg-type]


def test_each_shard_read_once_per_epoch_per_direction(
    shards: list[Path], vocab: Vocabulary, monkeypatch: pytest.MonkeyPatch
) -> None:
    opens: Counter[str] = Counter()
    real_open = corpus._open_shard

    def counting_open(path: Path):  # noqa: ANN202
        opens[path.name] += 1
        return real_open(path)

    monkeypatch.setattr(corpus, "_open_shard", counting_open)
    stream = BidirectionalLMStream(shards, vocab, batch_size=2, unroll_steps=3, max_epochs=2)
    assert len(list(stream)) > 0
    # 2 directions x 2 epochs at most; the forward stream ran out, so it read everything twice
    assert set(opens) == {p.name for p in shards}
    assert max(opens.values()) <= 2 * 2 and sum(opens.values()) >= 2 * len(shards) + len(shards)


def test_empty_corpus_raises_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.txt"
    path.write_text("\n\n", encoding="utf-8")
    vocab = Vocabulary(["<S>", "</S>", "<UNK>"])
    with pytest.raises(ValueError, match="no usable sentence"):
        next(BidirectionalLMStream([path], vocab, batch_size=1))


@pytest.mark.shared
def test_shared_corpus_smoke() -> None:
    from tests.conftest import shared_path

    valid = shared_path("data", "corpus", "valid.txt")
    assert count_tokens([valid]) == 22_979
    vocab = Vocabulary.build([valid], min_count=2)
    batch = next(BidirectionalLMStream([valid], vocab, batch_size=4, unroll_steps=20))
    assert batch.forward.char_ids.shape == (4, 20, 50) and batch.n_tokens == 160
