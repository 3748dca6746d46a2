"""Spec lint: what makes a valid suite unwinnable or meaningless, found before any model is called.

:func:`lint_paths` validates the files as ``validate`` does, then runs every rule of :data:`RULES` over each
suite that loaded (a suite, or a hosted ``evals:`` file). A rule is one function registered with
:func:`rule`: its id, its severity and its docstring (what it finds and why it matters); it reads a
:class:`SuiteView` and yields :class:`Hit` s, each at a key path of the file, which the loader's line-aware tree
turns into ``file:line:col``. Rules are deterministic and conservative: a rule that does not apply to a kind of
case skips it, and each hit says how to fix what it found.

Where each check looks, as the engine and the scorers do it (so a contradiction is only one when the two checks
read the same replies):

* a step's ``checks`` decide the step, on that step's replies only (``simulator.engine``: replies since the
  step began); a scenario's ``checks`` decide its goal on its replies;
* a case expectation that a step (or golden turn) refers to is scored on that step's (turn's) replies; every
  other case expectation on the whole conversation (``simulator.judges.scorers.expectations``);
* a golden turn's ``expect`` is scored on that turn's reply.

So an earlier step's ``must_not_contain`` does not forbid what a later step must contain (other replies), but a
case expectation over the whole conversation does.
"""

from simulator.loading.lint._facts import Fact, Knowledge, find_facts
from simulator.loading.lint._rule import RULES, SEVERITIES, Finding, Hit, Rule, Severity, SuiteView, rule
from simulator.loading.lint._run import LintReport, lint_paths, lint_suite, suite_view

__all__ = [
    "RULES",
    "SEVERITIES",
    "Fact",
    "Finding",
    "Hit",
    "Knowledge",
    "LintReport",
    "Rule",
    "Severity",
    "SuiteView",
    "find_facts",
    "lint_paths",
    "lint_suite",
    "rule",
    "suite_view",
]
