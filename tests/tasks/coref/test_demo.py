"""The coreference DEMO set: the committed files load (sizes, genres, speakers, unseen dev and test
text), and the heuristic annotator on a hand-made passage."""

from __future__ import annotations

import gzip
from pathlib import Path

from tasks.common.io import ReadStats
from tasks.coref.data import load_split
from tasks.coref.demo import FILES, annotate, corpus_stats, ensure_demo


def test_demo_set_loads(tmp_path: Path) -> None:
    folder = ensure_demo(cache=tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)
    stats = {s: ReadStats() for s in ("train", "dev", "test")}
    docs = {s: load_split(s, folder, stats[s]) for s in stats}
    assert [len(docs[s]) for s in ("train", "dev", "test")] == [200, 50, 50]
    every = [d for split in docs.values() for d in split]
    assert all("/demo/" in d.document_id and d.clusters for d in every)
    assert {d.genre for d in every} == {"nw", "pt"}
    assert any(s not in ("Narrator", "-") for d in every for row in d.speakers for s in row)
    assert all(d.num_tokens <= 250 and len(d.sentences) <= 10 for d in every)
    texts = {s: {" ".join(w for sent in d.sentences for w in sent) for d in docs[s]} for s in docs}
    assert not texts["train"] & texts["dev"] and not texts["train"] & texts["test"]
    assert ensure_demo(cache=tmp_path) == folder  # unpacked once
    raw = gzip.decompress(
        (Path(__file__).parents[3] / "tasks/coref/demo_data/dev.demo_gold_conll.gz").read_bytes()
    )
    assert raw.decode() == (folder / "dev.demo_gold_conll").read_text()


def test_demo_heuristic_on_a_hand_made_passage() -> None:
    text = [
        (1, tuple("Mr. Darcy looked at Elizabeth , and she smiled at him .".split())),
        (2, tuple('" I am glad , " said Elizabeth .'.split())),
    ]
    corpus = [*text] + [
        (10 + i, tuple(f"Then {n} came and {p} sat .".split()))
        for i in range(10)
        for n, p in (("Elizabeth", "she"), ("Darcy", "he"))
    ]
    stats = corpus_stats(corpus)
    doc = annotate(text, stats, "nw/demo/test/1")
    words = [w for s in doc.sentences for w in s]
    chains = sorted([" ".join(words[s : e + 1]) for s, e in c] for c in doc.clusters)
    assert chains == [["Elizabeth", "she", "I", "Elizabeth"], ["Mr. Darcy", "him"]]
    assert doc.speakers[1][1] == "Elizabeth" and doc.speakers[0][0] == "Narrator"
