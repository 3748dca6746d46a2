"""Every mistake a person can make in a suite, hosted evals, agent or persona file, and the exact error for it.

Each entry of ``INVALID`` writes files into a fresh folder and compares the complete list of errors
``validate_paths`` (or ``load_suite``) reports, as ``(file, line, column, key path, message)``, with the
expected list. The test runs inside the folder, as a person would, so the paths some messages name (an agent
file, a personas folder) are relative to it.

An entry given ``bug="..."`` is marked xfail (strict): it describes the error the loader *should* give while
the loader gets it wrong; none is marked today.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest
from _pytest.mark.structures import ParameterSet

import simulator.loading._limits as limits_module
from simulator.errors import ConfigError, ConfigErrors
from simulator.loading import load_suite, validate_paths

Expected = tuple[str, int, int, str, str]


@dataclass(frozen=True)
class Invalid:
    """Files to write (relative path -> text or bytes) and the errors they must produce."""

    files: Mapping[str, str | bytes]
    errors: Sequence[Expected]
    via: Literal["validate", "load_suite"] = "validate"
    default_agent: bool = True
    #: Limits of simulator.loading._limits set lower for the entry (MAX_FILE_BYTES, MAX_VALUES), by name.
    limits: Mapping[str, int] = field(default_factory=dict)


def entry(
    id: str,
    files: Mapping[str, str | bytes],
    errors: Sequence[Expected],
    *,
    bug: str | None = None,
    via: Literal["validate", "load_suite"] = "validate",
    limits: Mapping[str, int] | None = None,
    default_agent: bool = True,
) -> ParameterSet:
    marks = [pytest.mark.xfail(reason=f"loader bug: {bug}", strict=True, raises=AssertionError)] if bug else []
    invalid = Invalid(files, errors, via=via, limits=limits or {}, default_agent=default_agent)
    return pytest.param(invalid, id=id, marks=marks)


def y(text: str) -> str:
    """YAML written indented in this file, as it is in the file on disk (line 1 is the first line)."""
    return textwrap.dedent(text)


AGENT = y("""\
    type: python
    callable: bot.main:respond
    variables:
      customer_id:
        type: string
      vip:
        type: boolean
      party_size:
        type: integer
      visit_date:
        type: string
    tools:
      - name: book_table
      - name: cancel_booking
""")

ALICE = y("""\
    name: alice
    personality: Patient and friendly.
""")

OK_SUITE = y("""\
    name: demo
    cases:
      - name: c1
        kind: scenario
        goal: Book a table
""")

CANNOT_TELL = (
    "cannot tell what this file holds: a suite has `cases:`, a hosted evals file `evals:`, an agent file is named "
    "agent.yaml, a persona file lies in a personas/ folder, and a world file is named by a suite's `world:`"
)
SUITE_KEYS = (
    "name, description, language, agent, models, thresholds, judging, personas, scorers, repeats, seed, tool_fakes, "
    "faults, world, budgets, modality, voice, metadata, judge_prompts, cases"
)
ALIAS_BOMB = (
    "aliases expand to more values than the 100,000-value limit (an alias bomb?): write the repeated parts out or "
    "use fewer nested aliases"
)
TOO_DEEP = "nested deeper than the 100-level limit: flatten the lists and mappings"
NOT_FINITE = "is not a finite number: write a number such as 1.5, or put it in quotes to keep it as text"
TOO_LONG_NUMBER = "is longer than the 100-digit limit: write it in quotes to keep it as text"
RECURSIVE_ALIAS = "an alias refers to the mapping or list that contains it: remove the recursive alias"
TAG_REFUSED = "is not allowed: Simulator reads plain YAML data only"
DECLARED = "(declared: customer_id, party_size, vip, visit_date)"
TOOLS = "(declared: book_table, cancel_booking)"
#: An agent with one live tool; ``function`` is filled in per entry.
LIVE_AGENT = y("""\
    type: python
    callable: bot:respond
    tools:
      - name: list_holidays
        function: {function}
""")
HOLIDAY_TOOLS = "HOLIDAYS = {'DE': []}\n\n\ndef list_holidays(country):\n    return HOLIDAYS[country]\n"


INVALID: list[ParameterSet] = [
    # -- misspelt and unknown keys ----------------------------------------------------------------------------
    entry(
        "root-key-misspelt",
        {
            "suite.yaml": y("""\
            nmae: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book a table
        """)
        },
        [
            ("suite.yaml", 1, 1, "nmae", "unknown key 'nmae'; did you mean 'name'?"),
        ],
    ),
    entry(
        "root-key-unknown-no-close-match",
        {
            "suite.yaml": y("""\
            name: demo
            zzz: 1
            cases:
              - name: c1
                kind: scenario
                goal: Book a table
        """)
        },
        [("suite.yaml", 2, 1, "zzz", f"unknown key 'zzz'; allowed keys: {SUITE_KEYS}")],
    ),
    entry(
        "root-key-yaml11-word-stays-a-key",
        {
            "suite.yaml": y("""\
            name: demo
            on: push
            cases:
              - name: c1
                kind: scenario
                goal: Book a table
        """)
        },
        [("suite.yaml", 2, 1, "on", f"unknown key 'on'; allowed keys: {SUITE_KEYS}")],
    ),
    entry(
        "case-key-misspelt",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book a table
                max_turn: 4
        """)
        },
        [("suite.yaml", 6, 5, "cases[0].max_turn", "unknown key 'max_turn'; did you mean 'max_turns'?")],
    ),
    entry(
        "case-key-of-another-kind",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulation
                goal: Book a table
                steps:
                  - goal: Book a table
        """)
        },
        [
            (
                "suite.yaml",
                5,
                5,
                "cases[0].goal",
                "unknown key 'goal'; allowed keys: name, description, tags, personas, scorers, session_parameters, "
                "expectations, tool_fakes, faults, repeats, thresholds, budgets, world, expect_state, modality, kind, "
                "steps, initiator",
            )
        ],
    ),
    entry(
        "step-key-misspelt",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulation
                steps:
                  - goal: Book a table
                    sucess_criteria: Booked
        """)
        },
        [
            (
                "suite.yaml",
                7,
                9,
                "cases[0].steps[0].sucess_criteria",
                "unknown key 'sucess_criteria'; did you mean 'success_criteria'?",
            )
        ],
    ),
    entry(
        "expectation-key-misspelt",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book a table
                expectations:
                  - must_contian: [booked]
        """)
        },
        [
            (
                "suite.yaml",
                7,
                9,
                "cases[0].expectations[0].must_contian",
                "unknown key 'must_contian'; did you mean 'must_contain'?",
            )
        ],
    ),
    entry(
        "turn-key-misspelt",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: golden
                turns:
                  - usr: Hello
        """)
        },
        [("suite.yaml", 6, 9, "cases[0].turns[0].usr", "unknown key 'usr'; did you mean 'user'?")],
    ),
    entry(
        "turn-expect-key-misspelt",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: golden
                turns:
                  - user: Hi
                    expect:
                      mesage: Hello!
        """)
        },
        [("suite.yaml", 8, 11, "cases[0].turns[0].expect.mesage", "unknown key 'mesage'; did you mean 'message'?")],
    ),
    entry(
        "tool-fake-key-misspelt",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                tool_fakes:
                  - tool: book_table
                    reslut: ok
        """)
        },
        [("suite.yaml", 8, 9, "cases[0].tool_fakes[0].reslut", "unknown key 'reslut'; did you mean 'result'?")],
    ),
    entry(
        "thresholds-key-misspelt",
        {
            "suite.yaml": y("""\
            name: demo
            thresholds:
              semantic_macth: 3
            cases:
              - name: c1
                kind: scenario
                goal: Book
        """)
        },
        [
            (
                "suite.yaml",
                3,
                3,
                "thresholds.semantic_macth",
                "unknown key 'semantic_macth'; did you mean 'semantic_match'?",
            )
        ],
    ),
    entry(
        "persona-key-misspelt",
        {
            "suite.yaml": OK_SUITE,
            "personas/alice.yaml": y("""\
                name: alice
                personalty: Patient.
            """),
        },
        [
            ("personas/alice.yaml", 2, 1, "personalty", "unknown key 'personalty'; did you mean 'personality'?"),
        ],
    ),
    entry(
        "persona-background-key-misspelt",
        {
            "personas/bob.yaml": y("""\
            name: bob
            personality: Terse.
            background:
              ocupation: plumber
        """)
        },
        [("personas/bob.yaml", 4, 3, "background.ocupation", "unknown key 'ocupation'; did you mean 'occupation'?")],
    ),
    entry(
        "persona-key-unknown",
        {
            "personas/alice.yaml": y("""\
            name: alice
            personality: Patient.
            mood: grumpy
        """)
        },
        [
            (
                "personas/alice.yaml",
                3,
                1,
                "mood",
                "unknown key 'mood'; allowed keys: name, description, personality, language, background, style, "
                "misreports, voice",
            )
        ],
    ),
    entry(
        "agent-key-misspelt",
        {
            "suite.yaml": OK_SUITE,
            "agent.yaml": y("""\
                type: python
                callabel: bot:respond
            """),
        },
        [
            ("agent.yaml", 2, 1, "callabel", "unknown key 'callabel'; did you mean 'callable'?"),
        ],
    ),
    entry(
        "inline-agent-key-misspelt",
        {
            "suite.yaml": y("""\
            name: demo
            agent:
              type: python
              callable: bot:respond
              timout: 5
            cases:
              - name: c1
                kind: scenario
                goal: Book
        """)
        },
        [("suite.yaml", 5, 3, "agent.timout", "unknown key 'timout'; did you mean 'timeout'?")],
    ),
    # -- missing required keys --------------------------------------------------------------------------------
    entry(
        "missing-suite-name",
        {
            "suite.yaml": y("""\
            cases:
              - name: c1
                kind: scenario
                goal: Book a table
        """)
        },
        [("suite.yaml", 1, 1, "(root)", "missing required key 'name' (Name of the suite, shown in reports)")],
    ),
    entry(
        "missing-cases",
        {
            "suite.yaml": y("""\
            name: demo
            description: nothing here yet
        """)
        },
        [("suite.yaml", 1, 1, "(root)", "missing required key 'cases'")],
    ),
    entry(
        "missing-case-name",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - kind: scenario
                goal: Book a table
        """)
        },
        [("suite.yaml", 3, 5, "cases[0]", "missing required key 'name' (Unique within the suite)")],
    ),
    entry(
        "missing-kind-inferred",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                steps:
                  - goal: Book a table
              - name: c2
                turns:
                  - user: Hi
              - name: c3
                goal: Book a table
        """)
        },
        [
            (
                "suite.yaml",
                3,
                5,
                "cases[0]",
                "missing key 'kind': one of golden, scenario, simulation "
                "(this case has `steps`: add `kind: simulation`)",
            ),
            (
                "suite.yaml",
                6,
                5,
                "cases[1]",
                "missing key 'kind': one of golden, scenario, simulation (this case has `turns`: add `kind: golden`)",
            ),
            (
                "suite.yaml",
                9,
                5,
                "cases[2]",
                "missing key 'kind': one of golden, scenario, simulation (this case has `goal`: add `kind: scenario`)",
            ),
        ],
    ),
    entry(
        "missing-kind-no-hint",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                description: what is this?
        """)
        },
        [("suite.yaml", 3, 5, "cases[0]", "missing key 'kind': one of golden, scenario, simulation")],
    ),
    entry(
        "missing-scenario-goal",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
        """)
        },
        [("suite.yaml", 3, 5, "cases[0]", "missing required key 'goal'")],
    ),
    entry(
        "missing-simulation-steps",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulation
        """)
        },
        [("suite.yaml", 3, 5, "cases[0]", "missing required key 'steps'")],
    ),
    entry(
        "missing-golden-turns",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: golden
        """)
        },
        [("suite.yaml", 3, 5, "cases[0]", "missing required key 'turns'")],
    ),
    entry(
        "missing-handoff-to",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - handoff: {}
        """)
        },
        [
            (
                "suite.yaml",
                7,
                18,
                "cases[0].expectations[0].handoff",
                "missing required key 'to' ('human' or the name of the agent that takes over)",
            )
        ],
    ),
    # -- wrong kind -------------------------------------------------------------------------------------------
    entry(
        "kind-misspelt",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulaton
                steps:
                  - goal: Book a table
        """)
        },
        [
            (
                "suite.yaml",
                4,
                11,
                "cases[0].kind",
                "kind must be one of golden, scenario, simulation, got the text 'simulaton'; "
                "did you mean 'simulation'?",
            )
        ],
    ),
    entry(
        "kind-capitalised",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: Scenario
                goal: Book
        """)
        },
        [
            (
                "suite.yaml",
                4,
                11,
                "cases[0].kind",
                "kind must be one of golden, scenario, simulation, got the text 'Scenario'; did you mean 'scenario'?",
            )
        ],
    ),
    # -- wrong types ------------------------------------------------------------------------------------------
    entry(
        "list-where-mapping-belongs",
        {
            "suite.yaml": y("""\
            name: demo
            thresholds: [1, 2]
            cases:
              - name: c1
                kind: scenario
                goal: Book a table
        """)
        },
        [("suite.yaml", 2, 13, "thresholds", "expected a mapping (key: value), got a list")],
    ),
    entry(
        "mapping-where-list-belongs",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulation
                steps:
                  goal: Book a table
        """)
        },
        [("suite.yaml", 6, 7, "cases[0].steps", "expected a list, got a mapping")],
    ),
    entry(
        "text-where-list-belongs",
        {
            "suite.yaml": y("""\
                name: demo
                personas: alice
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
            """),
            "personas/alice.yaml": ALICE,
        },
        [("suite.yaml", 2, 11, "personas", "expected a list, got the text 'alice'")],
    ),
    entry(
        "text-where-step-mapping-belongs",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulation
                steps: [Book a table]
        """)
        },
        [("suite.yaml", 5, 13, "cases[0].steps[0]", "expected a mapping (key: value), got the text 'Book a table'")],
    ),
    entry(
        "number-where-text-belongs",
        {
            "suite.yaml": y("""\
            name: 2024
            cases:
              - name: c1
                kind: scenario
                goal: 42
        """)
        },
        [
            (
                "suite.yaml",
                1,
                7,
                "name",
                'expected text, got the number 2024: put it in quotes ("2024") to make it text',
            ),
            (
                "suite.yaml",
                5,
                11,
                "cases[0].goal",
                'expected text, got the number 42: put it in quotes ("42") to make it text',
            ),
        ],
    ),
    entry(
        "number-where-text-or-mapping-belongs",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - 42
        """)
        },
        [
            (
                "suite.yaml",
                7,
                9,
                "cases[0].expectations[0]",
                'expected text or a mapping (key: value), got the number 42: put it in quotes ("42") to make it text',
            )
        ],
    ),
    entry(
        "text-where-number-belongs",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                max_turns: "5"
        """)
        },
        [("suite.yaml", 6, 16, "cases[0].max_turns", "expected a whole number, got the text '5'")],
    ),
    entry(
        "empty-value",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal:
        """)
        },
        [
            (
                "suite.yaml",
                5,
                10,
                "cases[0].goal",
                "expected text, got nothing (the key has no value): write a value or remove the key",
            )
        ],
    ),
    entry(
        "empty-text",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: ''
        """)
        },
        [("suite.yaml", 5, 11, "cases[0].goal", "must not be empty")],
    ),
    entry(
        "empty-case-name",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: ''
                kind: scenario
                goal: Book
        """)
        },
        [("suite.yaml", 3, 11, "cases[0].name", "must not be empty")],
    ),
    entry(
        "blank-text",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: '   '
        """)
        },
        [("suite.yaml", 5, 11, "cases[0].goal", "must not be blank, got the text '   '")],
    ),
    entry(
        "identifier-with-space",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulation
                steps:
                  - event: hang up
        """)
        },
        [
            (
                "suite.yaml",
                6,
                16,
                "cases[0].steps[0].event",
                "must be an identifier: letters, digits, '_' or '-', starting with a letter or '_', got the text "
                "'hang up'",
            )
        ],
    ),
    entry(
        "suite-agent-is-a-number",
        {
            "suite.yaml": y("""\
            name: demo
            agent: 5
            cases:
              - name: c1
                kind: scenario
                goal: Book
        """)
        },
        [
            (
                "suite.yaml",
                2,
                8,
                "agent",
                'expected a mapping (key: value) or text, got the number 5: put it in quotes ("5") to make it text',
            )
        ],
    ),
    entry(
        "suite-agent-is-empty-text",
        {
            "suite.yaml": y("""\
            name: demo
            agent: ''
            cases:
              - name: c1
                kind: scenario
                goal: Book
        """)
        },
        [("suite.yaml", 2, 8, "agent", "must not be empty")],
    ),
    # -- numbers out of range ---------------------------------------------------------------------------------
    entry(
        "max-turns-zero",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulation
                steps:
                  - goal: Book a table
                    max_turns: 0
        """)
        },
        [("suite.yaml", 7, 20, "cases[0].steps[0].max_turns", "must be at least 1, got 0")],
    ),
    entry(
        "max-turns-101",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book a table
                max_turns: 101
        """)
        },
        [("suite.yaml", 6, 16, "cases[0].max_turns", "must be at most 100, got 101")],
    ),
    entry(
        "min-turns-above-max-turns",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulation
                steps:
                  - goal: Book a table
                    min_turns: 5
                    max_turns: 2
        """)
        },
        [("suite.yaml", 7, 20, "cases[0].steps[0].min_turns", "min_turns (5) is greater than max_turns (2)")],
    ),
    entry(
        "persona-values-out-of-range",
        {
            "personas/alice.yaml": y("""\
            name: alice
            personality: Patient.
            language: English
            style: {typo_rate: 0.9}
        """)
        },
        [
            (
                "personas/alice.yaml",
                3,
                11,
                "language",
                "must be a language tag such as 'en', 'de' or 'pt-BR', got the text 'English'",
            ),
            ("personas/alice.yaml", 4, 20, "style.typo_rate", "must be at most 0.5, got 0.9"),
        ],
    ),
    entry(
        "empty-cases",
        {
            "suite.yaml": y("""\
            name: demo
            cases: []
        """)
        },
        [("suite.yaml", 2, 8, "cases", "needs at least 1 entry")],
    ),
    entry(
        "cases-without-value",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
        """)
        },
        [
            (
                "suite.yaml",
                2,
                7,
                "cases",
                "expected a list, got nothing (the key has no value): write a value or remove the key",
            )
        ],
    ),
    # -- YAML traps -------------------------------------------------------------------------------------------
    entry(
        "duplicate-key",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book a table
                goal: Cancel it
        """)
        },
        [
            (
                "suite.yaml",
                6,
                5,
                "cases[0].goal",
                "duplicate key 'goal' (first written on line 5); YAML would silently keep only the last one: "
                "remove or rename one",
            )
        ],
    ),
    entry(
        "yaml11-no-in-text",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: no
        """)
        },
        [
            (
                "suite.yaml",
                5,
                11,
                "cases[0].goal",
                'YAML 1.1 reads `no` as the boolean false: write false for a boolean, or "no" in quotes for text',
            )
        ],
    ),
    entry(
        "yaml11-on-in-text",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                description: on
        """)
        },
        [
            (
                "suite.yaml",
                6,
                18,
                "cases[0].description",
                'YAML 1.1 reads `on` as the boolean true: write true for a boolean, or "on" in quotes for text',
            )
        ],
    ),
    entry(
        "yaml11-yes-in-list-of-text",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                tags: [yes]
        """)
        },
        [
            (
                "suite.yaml",
                6,
                12,
                "cases[0].tags[0]",
                'YAML 1.1 reads `yes` as the boolean true: write true for a boolean, or "yes" in quotes for text',
            )
        ],
    ),
    entry(
        "yaml11-octal-in-text",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: 012
        """)
        },
        [
            (
                "suite.yaml",
                5,
                11,
                "cases[0].goal",
                'YAML 1.1 reads `012` as an octal number (10): write "012" in quotes for text, '
                "or the number without leading zeros",
            )
        ],
    ),
    entry(
        "yaml11-base60-in-text",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: 1:30
        """)
        },
        [
            (
                "suite.yaml",
                5,
                11,
                "cases[0].goal",
                'YAML 1.1 reads `1:30` as a base-60 number (90): write "1:30" in quotes for text',
            )
        ],
    ),
    entry(
        "yaml11-date-in-text",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: 2024-05-01
        """)
        },
        [
            (
                "suite.yaml",
                5,
                11,
                "cases[0].goal",
                'YAML reads `2024-05-01` as a date, which JSON cannot hold: write "2024-05-01" in quotes to keep it '
                "as text",
            )
        ],
    ),
    entry(
        "yaml11-yes-in-session-parameters",
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
                    session_parameters:
                      vip: yes
            """),
            "agent.yaml": AGENT,
        },
        [
            (
                "suite.yaml",
                7,
                12,
                "cases[0].session_parameters.vip",
                'YAML 1.1 reads `yes` as the boolean true: write true for a boolean, or "yes" in quotes for text',
            )
        ],
    ),
    entry(
        # The suite's own agent has an error: the agent.yaml beside it (with other tools and no variables) is
        # not the agent under test, so the cases are not checked against it.
        "invalid-inline-agent-ignores-agent-yaml-beside-it",
        {
            "suite.yaml": y("""\
                name: demo
                agent:
                  type: python
                  callable: bot.main:respond
                  timeout: -5
                  tools:
                    - name: lookup_order
                tool_fakes:
                  - {tool: lookup_order, result: {}}
                cases:
                  - name: c1
                    kind: golden
                    session_parameters: {tier: gold}
                    turns:
                      - user: Hi
                        expect: {tool_calls: [{name: lookup_order}]}
            """),
            "agent.yaml": AGENT,
        },
        [("suite.yaml", 5, 12, "agent.timeout", "must be more than 0, got -5")],
    ),
    entry(
        # `yes` starts a sentence the brackets cut at its comma: the error says so, with the sentence whole.
        "yaml11-boolean-starting-a-sentence-in-brackets",
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: scenario
                    goal: Get the card blocked
                    say: [yes, block it please]
            """),
        },
        [
            (
                "suite.yaml",
                6,
                11,
                "cases[0].say[0]",
                'YAML 1.1 reads `yes` as the boolean true: write true for a boolean, or "yes" in quotes for text; '
                'in [...] a comma separates items: for one sentence, write it whole in quotes: "yes, block it please"',
            )
        ],
    ),
    entry(
        "yaml11-date-in-session-parameters",
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
                    session_parameters:
                      visit_date: 2024-05-01
            """),
            "agent.yaml": AGENT,
        },
        [
            (
                "suite.yaml",
                7,
                19,
                "cases[0].session_parameters.visit_date",
                'YAML reads `2024-05-01` as a date, which JSON cannot hold: write "2024-05-01" in quotes to keep it '
                "as text",
            )
        ],
    ),
    entry(
        "yaml11-octal-in-session-parameters",
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
                    session_parameters:
                      customer_id: 012
            """),
            "agent.yaml": AGENT,
        },
        [
            (
                "suite.yaml",
                7,
                20,
                "cases[0].session_parameters.customer_id",
                'YAML 1.1 reads `012` as an octal number (10): write "012" in quotes for text, '
                "or the number without leading zeros",
            )
        ],
    ),
    entry(
        "yaml11-no-in-session-parameters",
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
                    session_parameters:
                      customer_id: no
            """),
            "agent.yaml": AGENT,
        },
        [
            (
                "suite.yaml",
                7,
                20,
                "cases[0].session_parameters.customer_id",
                'YAML 1.1 reads `no` as the boolean false: write false for a boolean, or "no" in quotes for text',
            )
        ],
    ),
    entry(
        "yaml11-base60-in-session-parameters",
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
                    session_parameters:
                      party_size: 1:30
            """),
            "agent.yaml": AGENT,
        },
        [
            (
                "suite.yaml",
                7,
                19,
                "cases[0].session_parameters.party_size",
                'YAML 1.1 reads `1:30` as a base-60 number (90): write "1:30" in quotes for text',
            )
        ],
    ),
    entry(
        "python-tag",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: !!python/object/apply:os.system {}
        """)
        },
        [("suite.yaml", 5, 11, "cases[0].goal", f"tag !!python/object/apply:os.system {TAG_REFUSED}")],
    ),
    entry(
        "custom-tag",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: !secret Book a table
        """)
        },
        [("suite.yaml", 5, 11, "cases[0].goal", f"tag !secret {TAG_REFUSED}")],
    ),
    entry(
        "alias-bomb-billion-laughs",
        {
            "suite.yaml": y("""\
            name: demo
            metadata:
              a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]
              b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
              c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
              d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
              e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
              f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
              g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
              h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
              i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]
            cases:
              - name: c1
                kind: scenario
                goal: Book
        """)
        },
        [("suite.yaml", 3, 20, "metadata.e[7][8][9][0][2]", ALIAS_BOMB)],
    ),
    entry(
        "alias-bomb-counting-leaf-values",
        # 222,220 values from 8 lines; the limit counts only the lists and mappings an alias repeats (34,562).
        {
            "suite.yaml": y("""\
            name: demo
            metadata:
              a: &a [x, x, x, x, x, x, x, x, x, x]
              b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
              c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
              d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
              e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
              f: [*e, *e]
            cases:
              - name: c1
                kind: scenario
                goal: Book
        """)
        },
        [("suite.yaml", 3, 16, "metadata.e[7][8][9][0][2]", ALIAS_BOMB)],
    ),
    entry(
        "recursive-alias",
        {
            "suite.yaml": y("""\
            name: demo
            metadata: &m
              self: *m
            cases:
              - name: c1
                kind: scenario
                goal: Book
        """)
        },
        [("suite.yaml", 3, 3, "metadata.self", RECURSIVE_ALIAS)],
    ),
    entry(
        "merge-of-a-scalar",
        {
            "suite.yaml": y("""\
            name: demo
            metadata:
              <<: 1
            cases:
              - name: c1
                kind: scenario
                goal: Book
        """)
        },
        [
            (
                "suite.yaml",
                3,
                7,
                "metadata",
                "`<<` merges mappings only: point it at an anchored mapping (<<: *defaults)",
            )
        ],
    ),
    entry(
        "empty-key",
        {
            "suite.yaml": y("""\
            name: demo
            ~: 1
            cases:
              - name: c1
                kind: scenario
                goal: Book
        """)
        },
        [("suite.yaml", 2, 1, "(root)", "a key is empty: write a name before the colon")],
    ),
    # -- hostile files: nesting, numbers, values, characters --------------------------------------------------
    entry(
        "nesting-at-the-limit-is-read",
        {"suite.yaml": "name: demo\nmetadata: {a: " + "[" * 98 + "]" * 98 + "}\ncases: []\n"},
        [("suite.yaml", 3, 8, "cases", "needs at least 1 entry")],
    ),
    entry(
        "nesting-in-flow-lists-past-the-limit",
        # 481 levels crashed the loader (RecursionError, exit 70).
        {"suite.yaml": "name: demo\nmetadata: {a: " + "[" * 480 + "]" * 480 + "}\ncases: []\n"},
        [("suite.yaml", 2, 113, "metadata.a[0]", TOO_DEEP)],
    ),
    entry(
        "nesting-in-block-mappings-past-the-limit",
        {
            "suite.yaml": "name: demo\ncases: []\nmetadata:\n"
            + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(998))
            + "  " * 999
            + "v\n"
        },
        [("suite.yaml", 103, 201, "metadata.k0.k1", TOO_DEEP)],
    ),
    entry(
        "nesting-in-tool-parameters-past-the-limit",
        # 300 levels of JSON Schema in a tool's parameters crashed jsonschema's meta-schema check.
        {
            "agent.yaml": "type: python\ncallable: bot.main:respond\ntools:\n  - name: t\n    parameters: "
            + '{"type": "object", "properties": {"x": ' * 150
            + "{}"
            + "}}" * 150
            + "\n",
            "suite.yaml": OK_SUITE,
        },
        [("agent.yaml", 5, 1922, "tools[0].parameters", TOO_DEEP)],
    ),
    entry(
        "nesting-built-by-aliases-past-the-limit",
        {
            "suite.yaml": "name: demo\ncases: []\nmetadata:\n  a0: &a0 [x]\n"
            + "".join(f"  a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 120))
        },
        [("suite.yaml", 4, 7, "metadata.a98[0]", TOO_DEEP)],
    ),
    entry(
        "more-values-than-the-limit",
        {"suite.yaml": "name: demo\ncases: []\nmetadata: [" + ", ".join(["x"] * 1000) + "]\n"},
        [
            (
                "suite.yaml",
                3,
                2991,
                "metadata[993]",
                "file holds more values than the 1,000-value limit: split it into several files",
            )
        ],
        limits={"MAX_VALUES": 1000},
    ),
    entry(
        "integer-of-thousands-of-digits",
        # Python refuses to read more than 4,300 digits: the loader crashed with ValueError.
        {"suite.yaml": "name: demo\ncases: []\nmetadata:\n  n: " + "9" * 5000 + "\n"},
        [
            ("suite.yaml", 2, 8, "cases", "needs at least 1 entry"),
            ("suite.yaml", 4, 6, "metadata.n", f"the number 999999999999...999999 {TOO_LONG_NUMBER}"),
        ],
    ),
    entry(
        "integer-one-digit-past-the-limit",
        {"suite.yaml": "name: demo\ncases: []\nmetadata:\n  ok: " + "9" * 100 + "\n  n: -" + "1" * 101 + "\n"},
        [
            ("suite.yaml", 2, 8, "cases", "needs at least 1 entry"),
            ("suite.yaml", 5, 6, "metadata.n", f"the number -11111111111...111111 {TOO_LONG_NUMBER}"),
        ],
    ),
    entry(
        "hex-integer-past-the-limit",
        {"suite.yaml": "name: demo\ncases: []\nmetadata:\n  n: 0x" + "f" * 101 + "\n"},
        [
            ("suite.yaml", 2, 8, "cases", "needs at least 1 entry"),
            ("suite.yaml", 4, 6, "metadata.n", f"the number 0xffffffffff...ffffff {TOO_LONG_NUMBER}"),
        ],
    ),
    entry(
        "infinity-nan-and-float-overflow",
        {
            "suite.yaml": y("""\
            name: demo
            thresholds:
              semantic_match: .inf
            metadata:
              a: -.Inf
              b: .nan
              c: 1.0e+999
            cases:
              - name: c1
                kind: scenario
                goal: Book
        """)
        },
        [
            ("suite.yaml", 3, 19, "thresholds.semantic_match", f".inf {NOT_FINITE}"),
            ("suite.yaml", 5, 6, "metadata.a", f"-.Inf {NOT_FINITE}"),
            ("suite.yaml", 6, 6, "metadata.b", f".nan {NOT_FINITE}"),
            ("suite.yaml", 7, 6, "metadata.c", f"1.0e+999 {NOT_FINITE}"),
        ],
    ),
    entry(
        "control-character",
        {"suite.yaml": "name: demo\ncases:\n  - name: caf\u00e9\u00e9 \x1b[2Jx\n    kind: scenario\n    goal: Book\n"},
        [
            (
                "suite.yaml",
                3,
                17,
                "(root)",
                "control character U+001B is not allowed in YAML: remove it, or write it as an escape (\\u001b) in "
                "double quotes",
            )
        ],
    ),
    entry(
        "alias-without-anchor",
        {"suite.yaml": "name: demo\ncases: []\nmetadata:\n  n: *nope\n"},
        [("suite.yaml", 4, 6, "(root)", "alias *nope names no anchor: write &nope on a value before it")],
    ),
    entry(
        "anchor-defined-twice",
        {"suite.yaml": "name: demo\ncases: []\nmetadata:\n  a: &x 1\n  b: &x 2\n"},
        [("suite.yaml", 5, 6, "(root)", "anchor &x is defined twice (first on line 4, column 6): rename one of them")],
    ),
    entry(
        "file-one-byte-over-the-real-limit",
        {"suite.yaml": "name: demo\ncases: []\n" + "#" * (10_000_001 - 21)},
        [
            (
                "suite.yaml",
                1,
                1,
                "(root)",
                "file is 10,000,001 bytes, larger than the 10 MB limit: split it into several files",
            )
        ],
    ),
    # -- bytes, documents, syntax -----------------------------------------------------------------------------
    entry(
        "not-utf8",
        {"suite.yaml": b"name: demo\ncases:\n  - name: caf\xe9\n"},
        [("suite.yaml", 3, 14, "(root)", "not UTF-8 text (byte 0xe9): save the file as UTF-8")],
    ),
    entry(
        "not-utf8-after-multibyte-characters",
        {"suite.yaml": "name: été \xff\n".encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff")},
        [("suite.yaml", 1, 11, "(root)", "not UTF-8 text (byte 0xff): save the file as UTF-8")],
    ),
    entry(
        "not-utf8-after-bom",
        {"suite.yaml": b"\xef\xbb\xbfname: demo\ncases: \xff\n"},
        [("suite.yaml", 2, 8, "(root)", "not UTF-8 text (byte 0xff): save the file as UTF-8")],
    ),
    entry(
        "nul-bytes",
        {"suite.yaml": b"name: demo\ncases: \x00\n"},
        [("suite.yaml", 2, 8, "(root)", "binary file (contains a NUL byte): expected YAML text")],
    ),
    entry(
        "empty-file",
        {"suite.yaml": ""},
        [("suite.yaml", 1, 1, "(root)", "file is empty: write a mapping such as `name:` and `cases:`")],
    ),
    entry(
        "comment-only-file",
        {"suite.yaml": "# nothing yet\n# really\n"},
        [("suite.yaml", 1, 1, "(root)", "file is empty: write a mapping such as `name:` and `cases:`")],
    ),
    entry(
        "root-is-a-list",
        {
            "suite.yaml": y("""\
            - name: c1
              kind: scenario
              goal: Book
        """)
        },
        [
            (
                "suite.yaml",
                1,
                1,
                "(root)",
                "expected a mapping at the top of the file, got a list: put the cases under `cases:`",
            )
        ],
    ),
    entry(
        "root-is-a-list-load-suite",
        {
            "suite.yaml": y("""\
            - name: c1
              kind: scenario
              goal: Book
        """)
        },
        [
            (
                "suite.yaml",
                1,
                1,
                "(root)",
                "expected a mapping at the top of the file, got a list: put the cases under `cases:`",
            )
        ],
        via="load_suite",
    ),
    entry(
        "root-is-a-scalar",
        {"suite.yaml": "just some text\n"},
        [("suite.yaml", 1, 1, "(root)", "expected a mapping at the top of the file, got the text 'just some text'")],
    ),
    entry(
        "root-is-a-scalar-load-suite",
        {"suite.yaml": "just some text\n"},
        [("suite.yaml", 1, 1, "(root)", "expected a mapping at the top of the file, got the text 'just some text'")],
        via="load_suite",
    ),
    entry(
        "persona-root-is-a-list",
        {
            "personas/x.yaml": y("""\
            - name: alice
              personality: Patient.
        """)
        },
        [("personas/x.yaml", 1, 1, "(root)", "expected a mapping at the top of the file, got a list")],
    ),
    entry(
        "two-documents",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
            ---
            name: other
        """)
        },
        [
            (
                "suite.yaml",
                6,
                1,
                "(root)",
                "YAML syntax error: a file holds one YAML document: remove the '---' separator and what follows, "
                "or split the file",
            )
        ],
    ),
    entry(
        "syntax-error",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1: x
                kind: scenario
        """)
        },
        [("suite.yaml", 3, 13, "(root)", "YAML syntax error: mapping values are not allowed in this context")],
    ),
    entry(
        "syntax-error-unclosed-quote",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: "Book
        """)
        },
        [
            (
                "suite.yaml",
                5,
                11,
                "(root)",
                "YAML syntax error: found unexpected end of stream while scanning a quoted scalar",
            )
        ],
    ),
    entry(
        "file-too-large",
        {"suite.yaml": "name: demo\ncases: []\n" + "# padding\n" * 110_000},
        [("suite.yaml", 1, 1, "(root)", "file is 1.1 MB, larger than the 1 MB limit: split it into several files")],
        limits={"MAX_FILE_BYTES": 1_000_000},
    ),
    entry(
        "unclassifiable-file",
        {
            "notes.yaml": y("""\
            title: shopping list
            items: [milk]
        """)
        },
        [("notes.yaml", 1, 1, "(root)", CANNOT_TELL)],
    ),
    # -- rules across keys ------------------------------------------------------------------------------------
    entry(
        "step-static-utterance-and-event",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulation
                steps:
                  - static_utterance: Hi
                    event: hang_up
        """)
        },
        [
            (
                "suite.yaml",
                7,
                16,
                "cases[0].steps[0].event",
                "a step sends either `static_utterance` or `event`, not both: split it into two steps",
            )
        ],
    ),
    entry(
        "step-without-action",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulation
                steps:
                  - success_criteria: Booked
        """)
        },
        [("suite.yaml", 6, 9, "cases[0].steps[0]", "a step needs `goal`, `static_utterance`, `event` or `silence`")],
    ),
    entry(
        "expectation-with-two-checks",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - must_contain: [booked]
                    message: Your table is booked.
        """)
        },
        [
            (
                "suite.yaml",
                7,
                9,
                "cases[0].expectations[0]",
                "one check per expectation, found message, must_contain/must_not_contain: split it into several",
            )
        ],
    ),
    entry(
        "expectation-with-nothing",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - match: word
        """)
        },
        [
            (
                "suite.yaml",
                7,
                9,
                "cases[0].expectations[0]",
                "an expectation needs `text` or one check: must_contain, must_not_contain, message, tool_call, "
                "variable, handoff",
            )
        ],
    ),
    entry(
        "expectation-with-empty-term-list",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - must_contain: []
        """)
        },
        [("suite.yaml", 7, 23, "cases[0].expectations[0].must_contain", "needs at least 1 entry")],
    ),
    entry(
        "after-without-tool-call",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - text: books after the lookup
                    after: lookup
        """)
        },
        [("suite.yaml", 8, 16, "cases[0].expectations[0].after", "`after` orders a tool call: it needs `tool_call`")],
    ),
    entry(
        "regex-term-does-not-compile",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - must_contain: ["booked (ok"]
                    match: regex
        """)
        },
        [
            (
                "suite.yaml",
                7,
                24,
                "cases[0].expectations[0].must_contain[0]",
                "invalid regular expression 'booked (ok': missing ), unterminated subpattern at position 7",
            )
        ],
    ),
    entry(
        "regex-keyword-term-does-not-compile",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - must_contain:
                      - term: "[a-"
                        mode: regex
        """)
        },
        [
            (
                "suite.yaml",
                8,
                19,
                "cases[0].expectations[0].must_contain[0].term",
                "invalid regular expression '[a-': unterminated character set at position 0",
            )
        ],
    ),
    entry(
        "keyword-term-mode-misspelt",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - must_contain: [{term: booked, mode: regexp}]
        """)
        },
        [
            (
                "suite.yaml",
                7,
                45,
                "cases[0].expectations[0].must_contain[0].mode",
                "must be one of substring, word, stem, regex, got the text 'regexp'; did you mean 'regex'?",
            )
        ],
    ),
    entry(
        "regex-argument-rule-does-not-compile",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - tool_call:
                      name: book_table
                      arguments: {time: "19:00"}
                      argument_rules:
                        time: {mode: regex, pattern: "(19"}
        """)
        },
        [
            (
                "suite.yaml",
                11,
                42,
                "cases[0].expectations[0].tool_call.argument_rules.time.pattern",
                "invalid regular expression '(19': missing ), unterminated subpattern at position 0",
            )
        ],
    ),
    entry(
        "argument-rule-for-unknown-argument",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - tool_call:
                      name: book_table
                      arguments: {time: "19:00"}
                      argument_rules:
                        date: {mode: ignore}
        """)
        },
        [
            (
                "suite.yaml",
                11,
                19,
                "cases[0].expectations[0].tool_call.argument_rules.date",
                "argument_rules names 'date', which is not in `arguments`",
            )
        ],
    ),
    entry(
        "argument-rule-regex-without-pattern",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - tool_call:
                      name: book_table
                      arguments: {time: "19:00"}
                      argument_rules: {time: {mode: regex}}
        """)
        },
        [
            (
                "suite.yaml",
                10,
                34,
                "cases[0].expectations[0].tool_call.argument_rules.time",
                "mode regex needs `pattern`",
            )
        ],
    ),
    entry(
        "tool-fake-result-and-error",
        {
            "suite.yaml": y("""\
            name: demo
            tool_fakes:
              - tool: book_table
                result: {ok: true}
                error: down
            cases:
              - name: c1
                kind: scenario
                goal: Book
        """)
        },
        [("suite.yaml", 5, 12, "tool_fakes[0].error", "a tool fake has either `result` or `error`, not both")],
    ),
    entry(
        "tool-fake-neither-result-nor-error",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                tool_fakes:
                  - tool: book_table
                    arguments: {time: "19:00"}
        """)
        },
        [
            (
                "suite.yaml",
                7,
                9,
                "cases[0].tool_fakes[0]",
                "a tool fake needs `result` (what the tool returns) or `error`",
            )
        ],
    ),
    entry(
        "golden-turn-user-and-event",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: golden
                turns:
                  - user: Hello
                    event: hang_up
        """)
        },
        [
            (
                "suite.yaml",
                7,
                16,
                "cases[0].turns[0].event",
                "a golden turn has either `user` (a message) or `event`, not both",
            )
        ],
    ),
    # -- references across files ------------------------------------------------------------------------------
    entry(
        "session-parameter-not-declared",
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
                    session_parameters:
                      customer: "42"
            """),
            "agent.yaml": AGENT,
        },
        [
            (
                "suite.yaml",
                7,
                7,
                "cases[0].session_parameters.customer",
                "session parameter 'customer' is not a variable declared by agent 'agent'; did you mean "
                f"'customer_id'? {DECLARED}; declare it under `variables:` in agent.yaml",
            )
        ],
    ),
    entry(
        "session-parameter-without-agent",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                session_parameters:
                  customer_id: "42"
        """)
        },
        [
            (
                "suite.yaml",
                7,
                7,
                "cases[0].session_parameters.customer_id",
                "session parameter 'customer_id' cannot be checked against the agent's variables: no agent config "
                "was found (add `agent:` to the suite, or an agent.yaml beside this file declaring variables: "
                "customer_id: ...)",
            ),
            (
                "suite.yaml",
                1,
                1,
                "(root)",
                "no agent to test: add `agent:` to this file (a mapping, or the path of an agent file), or put an "
                "agent.yaml beside it or in a folder above",
            ),
        ],
        default_agent=False,
    ),
    entry(
        "session-parameter-agent-file-has-errors",
        {
            "suite.yaml": y("""\
                name: demo
                agent: bots/bot.yaml
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
                    session_parameters: {customer_id: "1"}
            """),
            "bots/bot.yaml": "type: http\n",
        },
        [
            (
                "bots/bot.yaml",
                1,
                1,
                "(root)",
                "missing required key 'base_url' (Base URL, e.g. http://localhost:8000/v1)",
            ),
            (
                "suite.yaml",
                7,
                26,
                "cases[0].session_parameters.customer_id",
                "session parameter 'customer_id' cannot be checked against the agent's variables: its agent file "
                "has errors (add `agent:` to the suite, or an agent.yaml beside this file declaring variables: "
                "customer_id: ...)",
            ),
        ],
    ),
    entry(
        "session-parameter-wrong-type",
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
                    session_parameters:
                      customer_id: 42
                      vip: "yes"
                      party_size: 2.5
            """),
            "agent.yaml": AGENT,
        },
        [
            (
                "suite.yaml",
                7,
                20,
                "cases[0].session_parameters.customer_id",
                "variable 'customer_id' is declared as string, got the number 42",
            ),
            (
                "suite.yaml",
                8,
                12,
                "cases[0].session_parameters.vip",
                "variable 'vip' is declared as boolean, got the text 'yes'",
            ),
            (
                "suite.yaml",
                9,
                19,
                "cases[0].session_parameters.party_size",
                "variable 'party_size' is declared as integer, got the number 2.5",
            ),
        ],
    ),
    entry(
        "expectation-reference-unknown",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulation
                expectations:
                  - Confirms the booking
                steps:
                  - goal: Book a table
                    expectations:
                      - Confirm the booking
        """)
        },
        [
            (
                "suite.yaml",
                10,
                13,
                "cases[0].steps[0].expectations[0]",
                "no expectation of this case has the text 'Confirm the booking'; did you mean 'Confirms the booking'? "
                "(expectations: 'Confirms the booking')",
            )
        ],
    ),
    entry(
        "expectation-reference-without-expectations",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: golden
                turns:
                  - user: Hi
                    expectations: [Greets the user]
        """)
        },
        [
            (
                "suite.yaml",
                7,
                24,
                "cases[0].turns[0].expectations[0]",
                "no expectation of this case has the text 'Greets the user': this case has no `expectations:`",
            )
        ],
    ),
    entry(
        "unknown-persona",
        {
            "suite.yaml": y("""\
                name: demo
                personas: [alise]
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
                    personas: [Alice]
            """),
            "personas/alice.yaml": ALICE,
        },
        [
            (
                "suite.yaml",
                2,
                12,
                "personas[0]",
                "unknown persona 'alise'; did you mean 'alice'? (personas in personas: alice)",
            ),
            (
                "suite.yaml",
                7,
                16,
                "cases[0].personas[0]",
                "unknown persona 'Alice'; did you mean 'alice'? (personas in personas: alice)",
            ),
        ],
    ),
    entry(
        "unknown-persona-without-personas-folder",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                personas: [alice]
        """)
        },
        [
            (
                "suite.yaml",
                6,
                16,
                "cases[0].personas[0]",
                "unknown persona 'alice': no personas/ folder found beside this file or above it",
            )
        ],
    ),
    entry(
        "duplicate-case-names",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
              - name: c1
                kind: scenario
                goal: Cancel
        """)
        },
        [
            (
                "suite.yaml",
                6,
                11,
                "cases[1].name",
                "case name 'c1' is used twice (first on line 3): case names must be unique in a suite",
            )
        ],
    ),
    entry(
        "duplicate-expectation-texts",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: scenario
                goal: Book
                expectations:
                  - Confirms the booking
                  - text: confirms the booking
                    must_contain: [booked]
        """)
        },
        [
            (
                "suite.yaml",
                8,
                9,
                "cases[0].expectations[1]",
                "another expectation already has the text 'confirms the booking': texts name them, make them unique",
            )
        ],
    ),
    entry(
        "tool-call-not-declared",
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
                    expectations:
                      - tool_call: {name: book_tabel}
            """),
            "agent.yaml": AGENT,
        },
        [
            (
                "suite.yaml",
                7,
                27,
                "cases[0].expectations[0].tool_call.name",
                f"tool 'book_tabel' is not declared by agent 'agent'; did you mean 'book_table'? {TOOLS}",
            )
        ],
    ),
    entry(
        "tool-fake-not-declared",
        {
            "suite.yaml": y("""\
                name: demo
                tool_fakes:
                  - tool: cancel_bookings
                    result: ok
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
            """),
            "agent.yaml": AGENT,
        },
        [
            (
                "suite.yaml",
                3,
                11,
                "tool_fakes[0].tool",
                f"tool 'cancel_bookings' is not declared by agent 'agent'; did you mean 'cancel_booking'? {TOOLS}",
            )
        ],
    ),
    entry(
        "tool-after-not-declared",
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
                    expectations:
                      - tool_call: {name: book_table}
                        after: lookup
            """),
            "agent.yaml": AGENT,
        },
        [
            (
                "suite.yaml",
                8,
                16,
                "cases[0].expectations[0].after",
                f"tool 'lookup' is not declared by agent 'agent' {TOOLS}",
            )
        ],
    ),
    entry(
        "golden-tool-call-not-declared",
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: golden
                    turns:
                      - user: Book for two
                        expect:
                          tool_calls:
                            - name: booktable
            """),
            "agent.yaml": AGENT,
        },
        [
            (
                "suite.yaml",
                9,
                21,
                "cases[0].turns[0].expect.tool_calls[0].name",
                f"tool 'booktable' is not declared by agent 'agent'; did you mean 'book_table'? {TOOLS}",
            )
        ],
    ),
    # -- hosted evals files -----------------------------------------------------------------------------------
    entry(
        "hosted-step-key-misspelt",
        {
            "evals.yaml": y("""\
            evals:
              - name: e1
                steps:
                  - goal: Book a table
                    max_tunrs: 3
        """)
        },
        [("evals.yaml", 5, 9, "evals[0].steps[0].max_tunrs", "unknown key 'max_tunrs'; did you mean 'max_turns'?")],
    ),
    entry(
        "hosted-kind-golden",
        {
            "evals.yaml": y("""\
            evals:
              - name: e1
                kind: golden
                steps:
                  - goal: Book a table
        """)
        },
        [("evals.yaml", 3, 11, "evals[0].kind", "must be 'simulation', got the text 'golden'")],
    ),
    entry(
        "hosted-root-key",
        {
            "evals.yaml": y("""\
            name: mine
            evals:
              - name: e1
                steps:
                  - goal: Book a table
        """)
        },
        [("evals.yaml", 1, 1, "name", "unknown key 'name'; allowed keys: models, evals")],
    ),
    entry(
        "hosted-missing-steps",
        {
            "evals.yaml": y("""\
            evals:
              - name: e1
        """)
        },
        [("evals.yaml", 2, 5, "evals[0]", "missing required key 'steps'")],
    ),
    # -- agent files ------------------------------------------------------------------------------------------
    entry(
        "agent-type-unknown",
        {
            "suite.yaml": OK_SUITE,
            "agent.yaml": y("""\
                type: pyhton
                callable: bot:respond
            """),
        },
        [
            (
                "agent.yaml",
                1,
                7,
                "type",
                "type must be one of http, langgraph, litellm, python, realtime or an installed agent plugin, "
                "got the text 'pyhton'; did you mean 'python'?",
            )
        ],
    ),
    entry(
        "agent-type-missing",
        {"agent.yaml": "callable: bot:respond\n"},
        [("agent.yaml", 1, 1, "(root)", "missing key 'type': one of http, langgraph, litellm, python, realtime")],
    ),
    entry(
        "agent-callable-not-module-attr",
        {
            "agent.yaml": y("""\
            type: python
            callable: bot.respond
        """)
        },
        [
            (
                "agent.yaml",
                2,
                11,
                "callable",
                "must be 'module:attribute', such as 'my_package.bot:respond', got the text 'bot.respond'",
            )
        ],
    ),
    entry(
        "agent-http-base-url-not-a-url",
        {
            "agent.yaml": y("""\
            type: http
            base_url: localhost:8000/v1
        """)
        },
        [
            (
                "agent.yaml",
                2,
                11,
                "base_url",
                "must be an http:// or https:// URL (or start with ${VAR}), got the text 'localhost:8000/v1'",
            )
        ],
    ),
    entry(
        "agent-realtime-url-not-a-websocket-url",
        {
            "agent.yaml": y("""\
            type: realtime
            url: https://api.example.com/v1/realtime
        """)
        },
        [
            (
                "agent.yaml",
                2,
                6,
                "url",
                "must be a ws:// or wss:// WebSocket URL (or start with ${VAR}), got the text "
                "'https://api.example.com/v1/realtime'",
            )
        ],
    ),
    entry(
        "agent-http-audio-format-unknown",
        {
            "agent.yaml": y("""\
            type: http
            base_url: http://127.0.0.1:8000/v1
            audio:
              voice: alloy
              format: mp3
        """)
        },
        [("agent.yaml", 5, 11, "audio.format", "must be one of wav, pcm16, got the text 'mp3'")],
    ),
    entry(
        "agent-http-audio-not-a-setting",
        {
            "agent.yaml": y("""\
            type: http
            base_url: http://127.0.0.1:8000/v1
            audio: alloy
        """)
        },
        [("agent.yaml", 3, 8, "audio", "expected true or false or a mapping (key: value), got the text 'alloy'")],
    ),
    entry(
        "agent-variable-type-misspelt",
        {
            "agent.yaml": y("""\
            type: python
            callable: bot:respond
            variables:
              customer_id: {type: str}
        """)
        },
        [
            (
                "agent.yaml",
                4,
                23,
                "variables.customer_id.type",
                "must be one of string, number, integer, boolean, object, array, got the text 'str'; "
                "did you mean 'string'?",
            )
        ],
    ),
    entry(
        "agent-tool-declared-twice",
        {
            "agent.yaml": y("""\
            type: python
            callable: bot:respond
            tools:
              - name: lookup
              - name: lookup
        """)
        },
        [("agent.yaml", 5, 11, "tools[1].name", "tool 'lookup' is declared twice")],
    ),
    entry(
        "agent-variable-default-of-wrong-type",
        {
            "agent.yaml": y("""\
            type: python
            callable: bot:respond
            variables:
              party_size: {type: integer, default: "2"}
        """)
        },
        [("agent.yaml", 4, 40, "variables.party_size.default", "default '2' is not of the declared type integer")],
    ),
    entry(
        "variable-expectation-not-declared",
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
                    expectations:
                      - variable: {name: party, value: 2}
                  - name: c2
                    kind: golden
                    turns:
                      - user: Hi
                        expect:
                          variables: {vipp: true}
            """),
            "agent.yaml": AGENT,
        },
        [
            (
                "suite.yaml",
                7,
                26,
                "cases[0].expectations[0].variable.name",
                "variable 'party' is not declared by agent 'agent'; did you mean 'party_size'? "
                "(declared: customer_id, party_size, vip, visit_date)",
            ),
            (
                "suite.yaml",
                13,
                29,
                "cases[1].turns[0].expect.variables.vipp",
                "variable 'vipp' is not declared by agent 'agent'; did you mean 'vip'? "
                "(declared: customer_id, party_size, vip, visit_date)",
            ),
        ],
    ),
    entry(
        "suite-agent-path-missing",
        {
            "suite.yaml": y("""\
            name: demo
            agent: agents/bot.yaml
            cases:
              - name: c1
                kind: scenario
                goal: Book
        """)
        },
        [
            (
                "suite.yaml",
                2,
                8,
                "agent",
                "agent file 'agents/bot.yaml' not found (looked for agents/bot.yaml): fix the path, relative to "
                "this file",
            )
        ],
    ),
    # -- code the agent names: validate imports it (without calling it) -----------------------------------------
    entry(
        "live-tool-function-module-missing",
        {"agent.yaml": LIVE_AGENT.format(function="holiday_tools:list_holidays"), "suite.yaml": OK_SUITE},
        [
            (
                "agent.yaml",
                5,
                15,
                "tools[0].function",
                "cannot import tool function 'holiday_tools:list_holidays': ModuleNotFoundError: no module named "
                "'holiday_tools' (looked in the working folder and the installed packages). Check the module path; a "
                "module of your own goes beside the suite file or the agent file, as holiday_tools.py",
            )
        ],
    ),
    entry(
        "live-tool-function-module-beside-neither-file",
        {
            "agent.yaml": LIVE_AGENT.format(function="holiday_tools:list_holidays"),
            "suites/shop/suite.yaml": OK_SUITE,
        },
        [
            (
                "agent.yaml",
                5,
                15,
                "tools[0].function",
                "cannot import tool function 'holiday_tools:list_holidays': ModuleNotFoundError: no module named "
                "'holiday_tools' (looked in suites/shop, the working folder and the installed packages). Check the "
                "module path; a module of your own goes beside the suite file or the agent file, as holiday_tools.py",
            )
        ],
    ),
    entry(
        "live-tool-function-misspelt",
        {
            "agent.yaml": LIVE_AGENT.format(function="holiday_tools:list_holiday"),
            "holiday_tools.py": HOLIDAY_TOOLS,
            "suite.yaml": OK_SUITE,
        },
        [
            (
                "agent.yaml",
                5,
                15,
                "tools[0].function",
                "cannot import tool function 'holiday_tools:list_holiday': module 'holiday_tools' has no "
                "'list_holiday' (in holiday_tools.py); did you mean 'list_holidays'?",
            )
        ],
    ),
    entry(
        "live-tool-function-not-callable",
        {
            "agent.yaml": LIVE_AGENT.format(function="holiday_tools:HOLIDAYS"),
            "holiday_tools.py": HOLIDAY_TOOLS,
            "suite.yaml": OK_SUITE,
        },
        [
            (
                "agent.yaml",
                5,
                15,
                "tools[0].function",
                "tool function 'holiday_tools:HOLIDAYS' is not callable: it is a dict; name a function (`def ...` or "
                "`async def ...`)",
            )
        ],
    ),
    entry(
        "live-tool-module-raises-on-import",
        {
            "agent.yaml": LIVE_AGENT.format(function="holiday_tools:list_holidays"),
            "holiday_tools.py": "import os\n\nAPI_KEY = os.environ['HOLIDAY_API_KEY_FOR_SIMULATOR_TESTS']\n",
            "suite.yaml": OK_SUITE,
        },
        [
            (
                "agent.yaml",
                5,
                15,
                "tools[0].function",
                "cannot import tool function 'holiday_tools:list_holidays': loading module 'holiday_tools' raised "
                "KeyError at holiday_tools.py:3: 'HOLIDAY_API_KEY_FOR_SIMULATOR_TESTS'",
            )
        ],
    ),
    entry(
        "live-tool-function-in-an-inline-agent",
        {
            "suite.yaml": y("""\
            name: demo
            agent:
              type: http
              base_url: http://127.0.0.1:8000/v1
              tools:
                - name: list_holidays
                  function: holiday_tools:list_holidays
            cases:
              - name: c1
                kind: scenario
                goal: Book a table
        """)
        },
        [
            (
                "suite.yaml",
                7,
                17,
                "agent.tools[0].function",
                "cannot import tool function 'holiday_tools:list_holidays': ModuleNotFoundError: no module named "
                "'holiday_tools' (looked in the working folder and the installed packages). Check the module path; a "
                "module of your own goes beside the suite file or the agent file, as holiday_tools.py",
            )
        ],
    ),
    entry(
        "python-callable-module-missing",
        {"agent.yaml": "type: python\ncallable: shop_bot:respond\n", "suite.yaml": OK_SUITE},
        [
            (
                "agent.yaml",
                2,
                11,
                "callable",
                "cannot import agent 'shop_bot:respond': ModuleNotFoundError: no module named 'shop_bot' (looked in "
                "the working folder and the installed packages). Check the module path; a module of your own goes "
                "beside the suite file or the agent file, as shop_bot.py",
            )
        ],
    ),
    entry(
        "python-callable-not-callable",
        {
            "agent.yaml": "type: python\ncallable: shop_bot:respond\n",
            "shop_bot.py": "respond = 'Hello!'\n",
            "suite.yaml": OK_SUITE,
        },
        [
            (
                "agent.yaml",
                2,
                11,
                "callable",
                "agent 'shop_bot:respond' is not callable: it is a str; name a function (`def ...` or `async def ...`)",
            )
        ],
    ),
    entry(
        "langgraph-graph-not-a-graph",
        {"agent.yaml": "type: langgraph\ngraph: bot:respond\n", "suite.yaml": OK_SUITE},
        [
            (
                "agent.yaml",
                2,
                8,
                "graph",
                "'bot:respond' is not a compiled LangGraph graph (it has no `ainvoke`): point `graph` at the result of "
                "`builder.compile()`",
            )
        ],
    ),
    # -- personas ---------------------------------------------------------------------------------------------
    entry(
        "persona-name-in-two-files",
        {"personas/a.yaml": ALICE, "personas/b.yaml": ALICE},
        [
            (
                "personas/b.yaml",
                1,
                7,
                "name",
                "persona 'alice' is already defined in personas/a.yaml: persona names must be unique",
            )
        ],
    ),
    entry(
        "persona-name-twice-in-a-collection",
        {
            "personas/all.yaml": y("""\
            personas:
              - name: alice
                personality: Patient.
              - name: alice
                personality: Curt.
        """)
        },
        [
            (
                "personas/all.yaml",
                4,
                11,
                "personas[1].name",
                "persona 'alice' is already defined in personas/all.yaml: persona names must be unique",
            )
        ],
    ),
    entry(
        "persona-missing-in-empty-folder",
        {
            "suite.yaml": y("""\
                name: demo
                personas: [bob]
                cases:
                  - name: c1
                    kind: scenario
                    goal: Book
            """),
            "personas/broken.yaml": "name: alice\n",
        },
        [
            (
                "personas/broken.yaml",
                1,
                1,
                "(root)",
                "missing required key 'personality' (How the person behaves in a conversation, in a few sentences)",
            ),
            ("suite.yaml", 2, 12, "personas[0]", "unknown persona 'bob' (personas in personas: none)"),
        ],
    ),
    # -- many errors at once ----------------------------------------------------------------------------------
    entry(
        "persona-collection-outside-personas-folder",
        {
            "people.yaml": y("""\
            personas:
              - name: alice
                personalty: Patient.
        """)
        },
        [
            ("people.yaml", 3, 5, "personas[0].personalty", "unknown key 'personalty'; did you mean 'personality'?"),
        ],
    ),
    entry(
        "many-errors-in-one-file",
        {
            "suite.yaml": y("""\
            name: demo
            cases:
              - name: c1
                kind: simulation
                steps:
                  - goal: Book
                    max_turns: 0
              - name: c2
                kind: scenario
                gaol: Cancel
              - name: c1
                kind: golden
                turns: []
        """)
        },
        [
            ("suite.yaml", 7, 20, "cases[0].steps[0].max_turns", "must be at least 1, got 0"),
            ("suite.yaml", 10, 5, "cases[1].gaol", "unknown key 'gaol'; did you mean 'goal'?"),
            (
                "suite.yaml",
                11,
                11,
                "cases[2].name",
                "case name 'c1' is used twice (first on line 3): case names must be unique in a suite",
            ),
            ("suite.yaml", 13, 12, "cases[2].turns", "needs at least 1 entry"),
        ],
    ),
]


#: The agent written beside entries that name none: a suite needs an agent to test, and these entries are about
#: something else. An entry that names ``agent.yaml`` itself, or writes ``agent:`` into a file, gets none.
DEFAULT_AGENT = "type: http\nbase_url: http://127.0.0.1:9/v1\n"

#: The code the agents of this table name (``bot:respond``, ``bot.main:respond``), written beside every entry's
#: files, since ``validate`` imports the code an agent names.
BOT_PACKAGE = {
    "bot/__init__.py": "def respond(messages):\n    return 'hi'\n",
    "bot/main.py": "def respond(messages):\n    return 'hi'\n",
}


def write_files(root: Path, files: Mapping[str, str | bytes], *, default_agent: bool = True) -> None:
    # A .git folder stops the upward search for agent.yaml and personas/ at ``root``.
    (root / ".git").mkdir()
    names_an_agent = any(
        Path(name).name == "agent.yaml" or (isinstance(content, str) and "agent:" in content)
        for name, content in files.items()
    )
    if default_agent and not names_an_agent:
        (root / "agent.yaml").write_text(DEFAULT_AGENT, encoding="utf-8")
    for name, content in {**BOT_PACKAGE, **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def as_tuples(root: Path, errors: Sequence[ConfigError]) -> list[Expected]:
    # Files are shown relative to the working folder when inside it; resolve() reads them either way.
    return sorted(
        (Path(e.file).resolve().relative_to(root).as_posix(), e.line, e.column, e.key_path, e.message) for e in errors
    )


def collect(root: Path, via: Literal["validate", "load_suite"]) -> list[Expected]:
    if via == "load_suite":
        with pytest.raises(ConfigErrors) as caught:
            load_suite(root / "suite.yaml")
        return as_tuples(root, caught.value.errors)
    return as_tuples(root, validate_paths([root]).errors)


@pytest.mark.parametrize("invalid", INVALID)
def test_invalid_file(invalid: Invalid, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path.resolve()
    write_files(root, invalid.files, default_agent=invalid.default_agent)
    # Run where the files are, as a person would: paths in messages are then relative to the folder.
    monkeypatch.chdir(root)
    for name, value in invalid.limits.items():
        monkeypatch.setattr(limits_module, name, value)
    assert collect(root, invalid.via) == sorted(invalid.errors)


def test_table_is_large_enough() -> None:
    assert len(INVALID) >= 45
    ids = [param.id for param in INVALID]
    assert len(ids) == len(set(ids))


def test_reference_near_miss_is_accepted(tmp_path: Path) -> None:
    """References compare case-insensitively, ignoring surrounding and repeated spaces."""
    root = tmp_path.resolve()
    write_files(
        root,
        {
            "suite.yaml": y("""\
                name: demo
                cases:
                  - name: c1
                    kind: simulation
                    expectations:
                      - Confirms the booking
                    steps:
                      - goal: Book a table
                        expectations:
                          - "  confirms THE   booking "
                  - name: c2
                    kind: golden
                    expectations:
                      - text: Greets the user
                        must_contain: [hello]
                    turns:
                      - user: Hi
                        expectations: [GREETS THE USER]
            """)
        },
    )
    assert validate_paths([root]).errors == []
    loaded = load_suite(root / "suite.yaml")
    assert [case.name for case in loaded.suite.cases] == ["c1", "c2"]


def test_all_errors_of_a_file_come_in_one_call_sorted_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path.resolve()
    monkeypatch.chdir(root)
    write_files(
        root,
        {
            "suite.yaml": y("""\
                name: demo
                zzz: 1
                cases:
                  - name: c1
                    kind: simulaton
                    steps:
                      - goal: Book
                  - name: c2
                    kind: scenario
                    goal: 42
                    max_turns: 0
                  - name: c3
                    kind: golden
                    turns:
                      - usr: Hi
                  - name: c2
                    kind: scenario
                    goal:
            """)
        },
    )
    with pytest.raises(ConfigErrors) as caught:
        load_suite(root / "suite.yaml")
    errors = caught.value.errors
    assert [(e.line, e.key_path) for e in errors] == [
        (2, "zzz"),
        (5, "cases[0].kind"),
        (10, "cases[1].goal"),
        (11, "cases[1].max_turns"),
        (15, "cases[2].turns[0].usr"),
        (16, "cases[3].name"),
        (18, "cases[3].goal"),
    ]
    assert [(e.line, e.column) for e in errors] == sorted((e.line, e.column) for e in errors)
    rendered = str(caught.value).splitlines()
    assert len(rendered) == len(errors)
    assert rendered[0] == f"suite.yaml:2:1: zzz: unknown key 'zzz'; allowed keys: {SUITE_KEYS}"
    # validate_paths finds the same problems without raising.
    report = validate_paths([root])
    assert as_tuples(root, report.errors) == as_tuples(root, errors)
