"""Spec lint: a table of flawed suites, each finding pinned by rule, severity, line and column; clean suites."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from simulator.errors import InputError
from simulator.loading.lint import RULES, Finding, find_facts, lint_paths

ROOT = Path(__file__).resolve().parents[2]

AGENT = """\
type: python
callable: simulator.demo.shop:respond
name: shop
variables:
  customer_id: {type: string}
  order_id: {type: string}
tools:
  - name: lookup_order
    parameters: {type: object, properties: {order_id: {type: string}}}
  - name: refund_order
    parameters: {type: object, properties: {order_id: {type: string}}}
"""

AGENT_WITHOUT_TOOLS = """\
type: python
callable: simulator.demo.shop:respond
name: bare
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def _findings(
    tmp_path: Path, suite: str, *, agent: str = AGENT, personas: dict[str, str] | None = None
) -> list[Finding]:
    _write(tmp_path, "agent.yaml", agent)
    for name, text in (personas or {}).items():
        _write(tmp_path, f"personas/{name}.yaml", text)
    path = _write(tmp_path, "suite.yaml", suite)
    report = lint_paths([path])
    assert report.errors == [], [e.render() for e in report.errors]
    return report.findings


def _pinned(findings: list[Finding]) -> list[tuple[str, str, int, int]]:
    return [(f.rule, f.severity, f.line, f.column) for f in findings]


def _suite_of(param: Any) -> str:
    """The suite text of a row of :data:`FLAWED`."""
    text = param.values[0]
    assert isinstance(text, str)
    return text


def _persona(name: str, facts: str) -> str:
    return f"name: {name}\npersonality: Brief and to the point.\nbackground:\n  facts: {facts}\n"


# Each suite is written as shown (dedented): line 1 is `name: t`. The positions are those of the key that holds
# the problem (`success_criteria:` of step 1 ...), or of the list item for a term or a check.
FLAWED = [
    pytest.param(
        """\
        name: t
        cases:
          - name: refund
            kind: simulation
            steps:
              - goal: Ask for a refund.
                success_criteria: The agent refunds order ORD-55555.
        """,
        [("unknown-fact", "error", 7, 9)],
        id="id-in-criteria-never-given",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: refund
            kind: simulation
            steps:
              - goal: Ask for a refund.
                success_criteria: The refund of 49.90 EUR is sent to jane@example.com on 12 March 2026.
                checks:
                  - must_contain: [refund]
        """,
        # The email is reported as an error; the amount and date as a warning (the agent may compute them).
        [("unknown-fact", "error", 7, 9), ("unknown-value", "warning", 7, 9)],
        id="amount-email-date-never-given",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: refund
            kind: simulation
            steps:
              - goal: Ask for a refund.
                success_criteria: The agent asks for the order number.
                checks:
                  - must_contain: [order number]
              - goal: Give the order number.
                success_criteria: The agent looks up the order.
                checks:
                  - tool_call:
                      name: lookup_order
                      arguments: {order_id: ORD-77777}
              - goal: Confirm.
                response_guide: {order number: ORD-77777}
                success_criteria: The agent confirms.
                checks:
                  - must_contain: [ORD-77777]
        """,
        # Step 2 needs the number the user only learns in step 3 (a later step's guide does not count).
        [("unknown-fact", "error", 15, 27)],
        id="fact-only-in-a-later-step",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: status
            kind: golden
            turns:
              - user: Where is my order ORD-10042?
                expect:
                  must_contain: [shipped, RF-9999]
        """,
        [("unknown-fact", "error", 8, 35)],
        id="golden-term-no-one-gives",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: courier
            kind: scenario
            goal: Find out who delivers the parcel.
            success_criteria: The agent says that Royal Mail delivers it.
            checks:
              - must_contain: [deliver]
        """,
        [("unknown-name", "warning", 6, 5)],
        id="name-no-one-gives",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: two
            kind: scenario
            goal: Cancel your order and change your delivery address.
            checks:
              - must_contain: [cancelled]
          - name: questions
            kind: simulation
            steps:
              - goal: Where is my order? When will it arrive?
                checks:
                  - must_contain: [order]
        """,
        [("two-goals", "warning", 5, 5), ("two-goals", "warning", 11, 9)],
        id="two-goals",
    ),
    pytest.param(
        """\
        name: t
        language: de
        cases:
          - name: zwei
            kind: scenario
            goal: Die Bestellung stornieren und die Lieferadresse ändern.
            checks:
              - must_contain: [storniert]
        """,
        [("two-goals", "warning", 6, 5)],
        id="two-goals-german",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: vague
            kind: simulation
            expectations:
              - The agent is polite and helpful.
            steps:
              - goal: Ask about the opening hours.
                success_criteria: The agent responds helpfully to the request.
              - goal: Say thanks.
        """,
        [
            ("vague-criteria", "warning", 6, 9),
            ("vague-criteria", "warning", 9, 9),
            ("vague-criteria", "warning", 10, 9),
        ],
        id="vague-criteria-and-nothing-to-check",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: script
            kind: simulation
            steps:
              - goal: Report a broken jug.
                say: [Hello, My jug is broken, It came yesterday]
                max_turns: 2
                checks:
                  - must_contain: [sorry]
              - goal: Ask for a replacement.
                say: [one, two, three, four]
                checks:
                  - must_contain: [replacement]
          - name: scenario
            kind: scenario
            goal: Ask for a replacement.
            say: [one, two]
            max_turns: 1
            checks:
              - must_contain: [replacement]
        """,
        # Step 2 leaves max_turns at its default (3): the finding is at its say lines.
        [
            ("say-beyond-max-turns", "error", 8, 9),
            ("say-beyond-max-turns", "error", 12, 9),
            ("say-beyond-max-turns", "error", 19, 5),
        ],
        id="say-lines-beyond-max-turns",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: never
            kind: simulation
            steps:
              - goal: Ask for the refund policy.
                checks:
                  - must_contain: [refund policy]
                  - must_not_contain: [Refund]
              - goal: Ask for a refund.
                checks:
                  - must_contain: [refund]
                    must_not_contain: [refund]
              - goal: Say goodbye.
                checks:
                  - variable: {name: order_id, value: gold}
                  - variable: {name: order_id, value: silver}
        """,
        [
            ("unreachable-step", "error", 9, 13),
            ("unreachable-step", "error", 12, 13),
            ("unreachable-step", "error", 17, 13),
        ],
        id="unreachable-steps",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: whole
            kind: simulation
            expectations:
              - text: Never says refund
                must_not_contain: [refund]
            steps:
              - goal: Ask for a refund.
                checks:
                  - must_contain: [refund approved]
          - name: turn
            kind: golden
            turns:
              - user: Hello
                expect:
                  must_contain: [Hello there]
                  must_not_contain: [hello]
        """,
        [("contradicting-checks", "error", 11, 13), ("contradicting-checks", "error", 16, 9)],
        id="contradicting-checks",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: tools
            kind: simulation
            expectations:
              - text: Refunds after a lookup
                tool_call: {name: refund_order}
                after: lookup_order
            steps:
              - goal: Ask where your order is.
                checks:
                  - tool_call: {name: lookup_order}
        """,
        [
            ("undeclared-tool", "error", 7, 21),
            ("undeclared-tool", "error", 8, 9),
            ("undeclared-tool", "error", 12, 25),
        ],
        id="tools-of-an-agent-without-tools",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: first
            kind: scenario
            goal: Ask where your parcel is.
            checks:
              - must_contain: [parcel]
          - name: other
            kind: golden
            turns:
              - user: Ask where your parcel is.
          - name: second
            kind: scenario
            goal: Ask where your parcel is!
            checks:
              - must_contain: [parcel]
        """,
        [("duplicate-case", "warning", 12, 5)],
        id="near-duplicate-cases",
    ),
    pytest.param(
        """\
        name: t
        tool_fakes:
          - tool: lookup_order
            arguments: {order_id: ORD-88888}
            result: {status: shipped}
        cases:
          - name: status
            kind: scenario
            goal: Ask where your order is.
            checks:
              - tool_call: {name: lookup_order, arguments: {order_id: ORD-88888}}
        """,
        # A fake's arguments are what the agent must already know to make the call: they tell it nothing.
        [("unknown-fact", "error", 11, 53)],
        id="fact-only-in-a-fakes-arguments",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: block
            kind: scenario
            goal: Get your stolen card blocked.
            say: [My card was stolen, "yes", block it please]
            max_turns: 3
            checks:
              - must_contain: [blocked]
          - name: steps
            kind: simulation
            steps:
              - goal: Get your stolen card blocked.
                say: [sure, go ahead]
                checks:
                  - must_contain: [blocked]
              - goal: Ask for a new card.
                say: ["Thanks", "send a new one"]
                checks:
                  - must_contain: [new card]
              - goal: Ask when it arrives.
                say: [one, two]
                checks:
                  - must_contain: [days]
              - goal: Leave.
                say:
                  - ok
                  - see you
                checks:
                  - must_contain: [bye]
        """,
        # A list in brackets whose unquoted line is words in lower case: one sentence cut at its commas. Lines
        # each in quotes, single words, and a list written one line per item are meant.
        [("say-split-by-comma", "warning", 6, 5), ("say-split-by-comma", "warning", 14, 9)],
        id="say-sentence-cut-by-commas",
    ),
    pytest.param(
        """\
        evals:
          - name: billing
            steps:
              - goal: Ask for a refund for order ORD-31337.
                success_criteria: The agent refunds ORD-31337 with refund RF-4242.
        """,
        [("unknown-fact", "error", 5, 9)],
        id="hosted-evals-file",
    ),
]


@pytest.mark.parametrize(("suite", "expected"), FLAWED)
def test_each_flaw_is_found_at_its_key(tmp_path: Path, suite: str, expected: list[tuple[str, str, int, int]]) -> None:
    agent = AGENT_WITHOUT_TOOLS if "tools-of" in suite or "name: tools" in suite else AGENT
    assert _pinned(_findings(tmp_path, suite, agent=agent)) == expected


CLEAN = [
    pytest.param(
        """\
        name: t
        cases:
          - name: refund
            kind: simulation
            session_parameters: {order_id: ORD-40051}
            tool_fakes:
              - tool: refund_order
                result: {refund_id: RF-5512, amount: 49.9, date: "2026-03-12"}
            steps:
              - goal: Ask for a refund and give your email when asked.
                response_guide: {email: jane@example.com}
                success_criteria: >-
                  The agent refunds ORD-40051 (49.90 EUR, on 12 March 2026), gives RF-5512 and writes to
                  jane@example.com.
                checks:
                  - must_contain: [RF-5512]
        """,
        id="facts-from-session-fakes-and-guide",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: later
            kind: simulation
            steps:
              - goal: Ask whether refunds are possible.
                checks:
                  - must_not_contain: [refund approved]
              - goal: Ask for the refund.
                checks:
                  - must_contain: [refund approved]
          - name: scoped
            kind: simulation
            expectations:
              - text: No promise in the greeting
                must_not_contain: [refund]
            steps:
              - goal: Say hello.
                checks:
                  - must_contain: [hello]
                expectations: [No promise in the greeting]
              - goal: Ask for the refund.
                checks:
                  - must_contain: [refund approved]
        """,
        id="checks-on-other-replies-do-not-contradict",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: one
            kind: scenario
            goal: Give your order number and find out where the parcel is.
            response_guide: {order number: ORD-10042}
            success_criteria: The agent says the order has shipped.
            say: [Where is my parcel?, It is ORD-10042]
            max_turns: 2
          - name: same_goal_other_persona
            kind: scenario
            personas: [quiet]
            goal: Give your order number and find out where the parcel is.
            response_guide: {order number: ORD-10042}
            success_criteria: The agent says the order has shipped.
        """,
        id="one-request-enough-turns-persona-variant",
    ),
    pytest.param(
        """\
        name: t
        cases:
          - name: any_order
            kind: golden
            turns:
              - user: Where is my order ORD-10042?
                expect:
                  tool_calls: [{name: lookup_order}]
          - name: exact_calls
            kind: golden
            turns:
              - user: Where is my order ORD-10042?
                expect:
                  tool_calls: [{name: lookup_order}]
                  tool_order: exact
        """,
        id="same-turns-other-checks-are-not-duplicates",
    ),
]


@pytest.mark.parametrize("suite", CLEAN)
def test_clean_suites_have_no_findings(tmp_path: Path, suite: str) -> None:
    personas = {"quiet": _persona("quiet", "{}")}
    assert _pinned(_findings(tmp_path, suite, personas=personas)) == []


def test_a_fact_one_persona_lacks_is_reported_naming_that_persona(tmp_path: Path) -> None:
    suite = """\
    name: t
    personas: [knows, forgets]
    cases:
      - name: refund
        kind: scenario
        goal: Ask for a refund.
        success_criteria: The agent refunds order ORD-55555.
    """
    personas = {"knows": _persona("knows", "{order_id: ORD-55555}"), "forgets": _persona("forgets", "{}")}
    [finding] = _findings(tmp_path, suite, personas=personas)
    assert (finding.rule, finding.line, finding.column) == ("unknown-fact", 7, 5)
    assert "personas forgets do not know it" in finding.message
    assert "'ORD-55555' (an id)" in finding.message
    personas["forgets"] = _persona("forgets", "{order_id: ORD-55555}")
    assert _findings(tmp_path, suite, personas=personas) == []


def test_a_finding_says_what_where_and_the_fix(tmp_path: Path) -> None:
    [finding] = _findings(tmp_path, _suite_of(FLAWED[0]))
    assert finding.file.endswith("suite.yaml")
    assert finding.key_path == "cases[0].steps[0].success_criteria"
    assert finding.render().endswith(finding.message)
    assert finding.render().split(": ", 1)[1].startswith("error unknown-fact: cases[0].steps[0].success_criteria: ")
    assert "response_guide" in finding.fix
    assert finding.source == "rule"


def test_dates_and_amounts_are_warnings_the_agent_may_compute(tmp_path: Path) -> None:
    error, warning = _findings(tmp_path, _suite_of(FLAWED[1]))
    assert "'jane@example.com' (an email)" in error.message
    assert "'12 March 2026' (a date), '49.90' (a number)" in warning.message
    assert warning.message.endswith("(unless the agent computes it)")


def test_duplicate_findings_name_both_cases(tmp_path: Path) -> None:
    [finding] = _findings(tmp_path, _suite_of(FLAWED[12]))
    assert "case 'second'" in finding.message
    assert "case 'first' (line 3)" in finding.message


def test_a_sentence_cut_by_commas_is_named_with_the_line_meant(tmp_path: Path) -> None:
    (finding,) = _findings(
        tmp_path,
        _suite_of(next(param for param in FLAWED if param.id == "say-sentence-cut-by-commas")),
    )[:1]
    assert finding.message == (
        "say is 3 lines ('My card was stolen', 'yes', 'block it please'), said one per turn: in [...] a comma "
        "separates the lines"
    )
    assert finding.fix.startswith(
        'if one sentence was meant, write it whole in quotes: say: ["My card was stolen", "yes, block it please"]'
    )


def test_every_rule_has_an_id_severity_and_docstring() -> None:
    assert list(RULES) == [
        "unknown-fact",
        "unknown-value",
        "unknown-name",
        "two-goals",
        "vague-criteria",
        "say-beyond-max-turns",
        "say-split-by-comma",
        "unreachable-step",
        "contradicting-checks",
        "undeclared-tool",
        "duplicate-case",
        "unchangeable-state",
        "unwritable-field",
    ]
    for rule in RULES.values():
        assert rule.severity in ("error", "warning", "info")
        assert rule.summary, rule.id


def test_ignored_rules_are_skipped_and_unknown_ones_refused(tmp_path: Path) -> None:
    _write(tmp_path, "agent.yaml", AGENT)
    path = _write(tmp_path, "suite.yaml", _suite_of(FLAWED[0]))
    assert lint_paths([path], ignore=["unknown-fact"]).findings == []
    with pytest.raises(InputError, match="no lint rule 'unknown-facts'; did you mean 'unknown-fact'"):
        lint_paths([path], ignore=["unknown-facts"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Refund ORD-10042 and RF-5512 for cus_4821", [("ORD-10042", "id"), ("RF-5512", "id"), ("cus_4821", "id")]),
        ("about 25 USD (10% of 249.99)", [("249.99", "amount")]),
        (
            "49,90 EUR on 2026-03-12 or 12.03.2026",
            [("2026-03-12", "date"), ("12.03.2026", "date"), ("49,90", "amount")],
        ),
        ("within 3 turns, a 30-day window in 2026", []),
        (
            "Mail jane@example.com about Blender 900",
            [("jane@example.com", "email"), ("900", "amount"), ("Blender", "name")],
        ),
        ("The agent hands over to Jane Doe.", [("Jane Doe", "name")]),
    ],
)
def test_facts_found_in_a_text(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(fact.text, fact.kind) for fact in find_facts(text)] == expected


def test_a_fact_in_a_simulated_tools_behaviour_is_known_to_the_agent() -> None:
    # The example checks for the delivery date its simulated lookup_order's behaviour gives.
    report = lint_paths([ROOT / "suites" / "examples" / "simulated_tools"])
    assert report.errors == []
    assert [f.render() for f in report.findings] == []


def test_the_demo_suites_lint_clean() -> None:
    report = lint_paths([ROOT / "suites" / "demo", ROOT / "personas"])
    assert report.errors == []
    assert len(report.suites) == 3
    assert [f.render() for f in report.findings] == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "file is empty"),
        ("name: t\ncases: [\n", "YAML syntax error"),
        ("name: t\ncases: []\n", "cases: needs at least 1 entry"),
        ("- just a list\n", "expected a mapping at the top of the file"),
    ],
)
def test_invalid_files_give_the_validate_errors_and_no_findings(tmp_path: Path, text: str, message: str) -> None:
    _write(tmp_path, "agent.yaml", AGENT)
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    report = lint_paths([path])
    assert report.findings == []
    assert any(message in error.render() for error in report.errors), [e.render() for e in report.errors]
    assert report.exit_code() == 2
