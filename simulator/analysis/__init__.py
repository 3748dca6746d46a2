"""Analysis of stored runs: data in, data out (no rendering, no store).

- :mod:`~simulator.analysis.compare` -- two runs case by case and step by step, with McNemar's test;
- :mod:`~simulator.analysis.digest` -- the failures of a run grouped by cause, with a judge model's suggestions;
- :mod:`~simulator.analysis.judge_check` -- how far the judge model agrees with labels a person gave.

Their results are the models of :mod:`simulator.models.comparison` and :mod:`simulator.models.digest`, rendered by
:mod:`simulator.reports`.
"""
