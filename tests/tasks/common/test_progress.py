"""tasks/common/progress.py: a bar only when it is asked for and stderr is a terminal; the
harness's bars (feature cache, GloVe conversion, probes) all ask it."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
import torch

from tasks.common.progress import bars_enabled, on_terminal, progress_bar


def test_a_bar_is_drawn_only_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    assert not on_terminal() and not bars_enabled(True)
    with progress_bar(True, total=3, desc="off") as bar:
        bar.update(3)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert on_terminal() and bars_enabled(True) and not bars_enabled(False)
    with progress_bar(True, total=3, desc="on") as bar:
        bar.update(3)
    err = capsys.readouterr().err
    assert "\r" in err and "on: 100%" in err
    with progress_bar(False, total=3) as bar:  # not asked for: off, terminal or not
        bar.update(3)
    assert capsys.readouterr().err == ""


def test_odd_streams_are_no_terminal() -> None:
    closed = io.StringIO()
    closed.close()
    assert not on_terminal(closed)  # isatty raises ValueError
    assert not on_terminal(io.StringIO())
    assert not on_terminal(object())  # type: ignore[arg-type]  # no isatty at all


def test_the_harness_bars_write_nothing_to_a_log_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Asked for (``progress=True``) but stderr is not a terminal: the feature cache's bar,
    GloVe's conversion bar and the probes' encoding bar stay silent; on a terminal they draw."""
    from experiments.analyses.probes import ProbeConfig, encode_sentences
    from tasks.common.vectors import iter_text_vectors
    from tasks.features.feature_cache import FeatureCache
    from tests.contract.helpers import HashedTokens

    def cache(root: str) -> None:
        FeatureCache.build(HashedTokens(output_dim=4), sentences, tmp_path / root, progress=True)

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)
    glove = tmp_path / "v.txt"
    glove.write_text("the 0.1 0.2\ncat 0.3 0.4\n", encoding="utf-8")
    sentences = [["the", "cat"], ["a"]]
    cache("off")
    assert sum(len(words) for words, _ in iter_text_vectors(glove, progress=True)) == 2
    encoded = list(
        encode_sentences(HashedTokens(output_dim=4), sentences, ProbeConfig(progress=True))
    )
    assert len(encoded) == 2 and all(isinstance(t, torch.Tensor) for _, t in encoded)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the same on a terminal: bars
    cache("on")
    assert "tok" in capsys.readouterr().err
    list(iter_text_vectors(glove, progress=True))
    list(encode_sentences(HashedTokens(output_dim=4), sentences, ProbeConfig(progress=True)))
    err = capsys.readouterr().err
    assert "converting v.txt" in err and "encode" in err
