"""Data acquisition: the datasets the benchmarks score, built or fetched into the canonical records
the tasks read (:mod:`scorers.data.records`).

- :mod:`gem_data.openreview`: GRE-bench datasets built from OpenReview for an ICLR or NeurIPS
  year, and public releases converted into records;
- :mod:`gem_data.fetch`: ``gem-tasks data fetch``, the public datasets the evidence uses, pinned
  and checked;
- :mod:`gem_data.files`: the all-or-nothing writes both use.

It reads the scoring core's record schema; the scoring core never imports it.
"""
