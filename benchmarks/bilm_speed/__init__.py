"""The pieces of ``benchmarks/bench_bilm.py``, the CPU speed and memory benchmark of the biLM.

Run the benchmark through its entry point (``python benchmarks/bench_bilm.py --quick`` for a
smoke run of every stage, ``nox -s bench_bilm`` for the full-size run; docs/performance.md
describes what it prints). The modules, in the order the run's stages print:

* :mod:`~benchmarks.bilm_speed.cli`: the command line and ``main`` (child-process bodies too);
* :mod:`~benchmarks.bilm_speed.run`: the header, the stages in order, the memory summary;
* :mod:`~benchmarks.bilm_speed.model_file`: the random-weight model file (cached) and its load;
* :mod:`~benchmarks.bilm_speed.roofline`: the machine's fp32 GEMM roofline;
* :mod:`~benchmarks.bilm_speed.text`: the corpus, the 64 × 20 batch;
* :mod:`~benchmarks.bilm_speed.cost`: FLOPs per batch (nominal, executed, floor);
* :mod:`~benchmarks.bilm_speed.throughput`: tokens/s on 64 × 20 and on natural text;
* :mod:`~benchmarks.bilm_speed.fp32_paths`: every exact fp32 path of :mod:`bilm.lstm`;
* :mod:`~benchmarks.bilm_speed.reference`: the straightforward implementation and the float64
  correctness check (``benchmarks/reference_bilm.py`` in child processes);
* :mod:`~benchmarks.bilm_speed.precision`: int8 and bf16 against fp32;
* :mod:`~benchmarks.bilm_speed.profiling`: the char CNN / LSTM time split (``--profile``);
* :mod:`~benchmarks.bilm_speed.embed_rss`: peak RSS of ``python -m bilm embed``;
* :mod:`~benchmarks.bilm_speed.versus_allennlp`: the allennlp-style computation, same weights;
* :mod:`~benchmarks.bilm_speed.contention`: other processes' CPU use, tokens/s under load;
* :mod:`~benchmarks.bilm_speed.targets`: the targets and the PASS/MISS table;
* :mod:`~benchmarks.bilm_speed.measure`: timing, memory and formatting helpers they share.
"""
