"""A small, rule-based demo agent to run Simulator against offline (no model, no API key).

``simulator.demo.shop:respond`` is the customer-support agent that ``suites/demo/`` and ``suites/examples/``
test. It is deterministic and has one deliberate, documented flaw, so the demo shows a failing case too.
"""
