"""Benchmarks for medallion_assets. Run them all with ``bash bench/run``.

A-C: lineage and catalog speed; D: orchestration overhead of a Dagster run against a plain
PySpark script; E: code-location load (Definitions) of a large project.

Informational only: never part of the test suite, and ``bench/run`` exits 0 whether a bar is
met or not. Modules:

- ``corpus``         locate the TPC corpora and schema; wrap each query as a CTAS file
- ``timing``         repetition, gc handling and statistics shared by every measurement
- ``tools``          one adapter per lineage tool (ours, clgraph, sqllineage) for benchmark A
- ``competitors``    the clgraph and sqllineage adapters
- ``worker``         runs one tool in a fresh process and prints its timing as JSON
- ``lineage_bench``  benchmark A: TPC-H + TPC-DS table and column lineage, ours vs. competitors
- ``synthetic``      generators: a 5,000-table project (B) and a 50,000-node DAG (C)
- ``catalog_bench``  benchmark B: load_catalog on the synthetic project, cold and warm
- ``dag_bench``      benchmark C: downstream / impact latency on the synthetic DAG
- ``report``         table formatting and PASS/FAIL lines
- ``shop_data``      TheWorldShop project copy + ``medallion demo-data`` raw files for D
- ``plain_pyspark``  D's baseline: the same pipeline as a plain PySpark script (one process)
- ``dagster_run``    D's Dagster side: ``run_project`` in one process, instrumented
- ``orchestration_bench``  benchmark D: Dagster run vs plain PySpark, ratio and breakdown
- ``definitions_worker``   E's worker: build and resolve the Definitions in one process
- ``definitions_bench``    benchmark E: code-location load of a 2,000-table project, cold/warm
- ``profiles``       cProfile dumps summarised by package
- ``simulate_bench`` benchmark I: ``medallion simulate``'s engine over a day of a synthetic
  10,000-table project (bar: 2 s), against one run's unit-duration plan
"""
