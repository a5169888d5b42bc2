"""Score every epoch's weights of one allennlp training run (runs in the peer's venv, not here).

    PEER_PYTHON allennlp_epochs.py SERIALIZATION_DIR NAME=FILE [NAME=FILE ...] --out OUT.json
        [--keep KEY ...] [--batch-size 64] [--include-package PKG ...]

This file is never imported by the project (it imports allennlp, which the project does not
depend on); :mod:`experiments.peer.run` starts it with the peer venv's Python. For each epoch's
checkpoint ``model_state_e<N>_b0.th`` in ``SERIALIZATION_DIR`` (allennlp keeps every epoch's when
the checkpointer's ``keep_most_recent_by_count`` is null) and each named file, it reads the file
with the archived validation dataset reader, runs the model in evaluation mode on batches of
``--batch-size`` instances in file order, and writes one JSON object:

    {"epochs": [{"epoch": N, "NAME": {"metrics": {...allennlp's get_metrics...},
                                      "outputs": [{KEY: value, ...} per instance]}}, ...]}

``--keep`` names the output keys kept per instance (e.g. ``tags``); their values are the model's
human-readable outputs (``make_output_human_readable``), so the project can score them with its
own official-parity scorer. One process scores every epoch (one archive load), on one thread.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any


def _plain(value: Any) -> Any:
    """numpy / torch values as JSON data."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("serialization_dir", type=Path)
    parser.add_argument("files", nargs="+", help="NAME=FILE pairs")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--keep", nargs="*", default=[])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--include-package", action="append", default=[])
    args = parser.parse_args()

    import torch

    torch.set_num_threads(1)
    for package in args.include_package:
        importlib.import_module(package)
    from allennlp.data import Batch
    from allennlp.models.archival import load_archive
    from allennlp.nn import util

    archive = load_archive(str(args.serialization_dir / "model.tar.gz"), cuda_device=-1)
    model, reader = archive.model, archive.validation_dataset_reader
    model.eval()
    pairs = [pair.partition("=")[::2] for pair in args.files]
    instances = {}
    for name, path in pairs:
        found = list(reader.read(path))
        for instance in found:
            instance.index_fields(model.vocab)
        instances[name] = found
    pattern = re.compile(r"model_state_e(\d+)_b0\.th$")
    checkpoints = sorted(
        (int(m.group(1)), p)
        for p in args.serialization_dir.iterdir()
        if (m := pattern.match(p.name))
    )
    if not checkpoints:
        print(f"{args.serialization_dir}: no model_state_e*_b0.th checkpoints", file=sys.stderr)
        return 1
    epochs = []
    for epoch, path in checkpoints:
        started = time.perf_counter()
        model.load_state_dict(torch.load(path, map_location="cpu"))
        row: dict[str, Any] = {"epoch": epoch}
        for name, found in instances.items():
            model.get_metrics(reset=True)
            outputs = []
            with torch.no_grad():
                for i in range(0, len(found), args.batch_size):
                    chunk = found[i : i + args.batch_size]
                    batch = Batch(chunk)
                    tensors = util.move_to_device(batch.as_tensor_dict(), -1)
                    out = model.make_output_human_readable(model(**tensors))
                    for j in range(len(chunk)):
                        outputs.append({k: _plain(out[k][j]) for k in args.keep if k in out})
            row[name] = {"metrics": _plain(model.get_metrics(reset=True)), "outputs": outputs}
        epochs.append(row)
        print(f"epoch {epoch}: scored in {time.perf_counter() - started:.1f} s", flush=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps({"epochs": epochs}), encoding="utf-8")
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
