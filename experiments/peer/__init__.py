"""Each baseline beside the implementation that reproduced the paper (``nox -s peer``).

allennlp-models 2.10.1 (``crf_tagger``, ``bcn``, ``esim``, ``srl``, ``coref``) is trained beside
the project's ``paper`` preset on the same data, with the same inputs (the embedded GloVe as a
text file, the shipped biLM exported in the official layout), the same seeds count, epochs and
batch size, one thread each. Both sides' predictions of every epoch are scored by the task's own
official-parity scorer, so one ruler measures both; per epoch the table shows each side's mean ±
sd, the seed-aware test of the difference and the CPU seconds of the training pass.

* :mod:`experiments.peer.run`: the request, the inputs, the runs of both sides (reused by the
  content of their configuration and data), the peer's records;
* :mod:`experiments.peer.render`: the table (``results/peer/<task>.md``) and the learning-curve
  plot;
* :mod:`experiments.peer.venv`: the peer's venv, built from the repository's recipe when
  missing (``allennlp_side/venv.toml``; atomically, import-checked, rebuilt when broken or built
  from another recipe; ``python -m experiments.peer.venv --dry-run`` prints the steps);
* ``allennlp_side/``: what runs in the peer's venv (never imported here): ``allennlp_epochs.py``
  (every epoch's checkpoint applied to the dev split), ``peer_timing.py`` (the trainer callback
  that times each epoch's training and validation pass, and keeps with each epoch's checkpoint
  the random generators and carried states that a resumed run puts back), ``peer_compat.py``
  (allennlp 2.10.1's schedulers under torch 2.13) and ``peer_check.py`` (the venv's import
  check), beside the recipe ``venv.toml``.

allennlp is never a dependency of this project (it pins torch < 1.13): it lives in that venv
alone. A task takes part by setting ``TaskSpec.peer`` (:class:`tasks.common.peer.PeerAdapter`);
nothing here names a task.
"""
