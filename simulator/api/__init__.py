"""The public API beyond running suites, as the command line uses it: stored runs (list, read, note, delete,
merge), what they say (compare, digest, coverage, persona fidelity, judge agreement), moving runs and cases
between stores and formats (export, import, golden cases), checking suite files (validate, lint, personas,
schemas) and rendering reports.

Every function is a name of :mod:`simulator`, served lazily from the module here that owns it: ``runs``,
``analysis``, ``exchange``, ``suites`` and ``reports``. Their heavy imports happen when they are called, so
``import simulator`` stays light. A run's records that cannot be read are left out, not fatal: functions that read
results take ``skipped``, a list that collects what was left out (each says why and how to fix it).
"""
