"""Network parts of the task models: layers (variational dropout, masked bi-GRU, attention,
masked softmax, character CNN, :func:`~tasks.nn.layers.run_rnn`), the packed-sequence RNN step
loop (:mod:`~tasks.nn.packed_rnn`) and the linear-chain CRF (:mod:`~tasks.nn.crf`).

May import: :mod:`bilm`, :mod:`tasks.common` and modules of this package (the layer order is
``TASKS_LAYERS`` in ``tests/test_boundaries.py``).
"""
