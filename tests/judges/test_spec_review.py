"""The model pass of spec lint: one structured request per suite, suggestions placed at the key they name."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

from simulator.judges.spec_review import review_suites, spec_review_prompt
from simulator.llm import FakeScript, LLMClient, Role
from simulator.loading import load_suite
from simulator.models import ModelRoles, ModelSettings
from tests.factories import section
from tests.loading.test_lint import AGENT

SUITE = """\
name: t
cases:
  - name: journey
    kind: simulation
    steps:
      - goal: Ask for a refund.
        checks: [{must_contain: [refund]}]
      - goal: Say thanks.
        success_criteria: The agent says goodbye.
"""


def test_the_prompt_comes_from_its_file_without_header_or_doubled_braces() -> None:
    text = spec_review_prompt()
    assert text.startswith("You review a test suite")
    assert '{"suggestions": [{"case"' in text
    assert "<!--" not in text
    assert "{{" not in text


def test_suggestions_are_placed_at_the_step_and_field_they_name(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(AGENT, encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(textwrap.dedent(SUITE), encoding="utf-8")
    loaded = load_suite(tmp_path / "suite.yaml")

    def suggestion(step: int | None, field: str) -> dict[str, object]:
        return {"case": "journey", "step": step, "field": field, "problem": f"{field} {step}", "fix": "Say more."}

    reply = {
        "suggestions": [
            suggestion(2, "success_criteria"),
            suggestion(1, "success_criteria"),  # step 1 writes no criteria: the step is where it points
            suggestion(9, "goal"),  # no step 9: the case's name
            suggestion(None, "case"),
        ]
    }
    script = FakeScript().enqueue("judge", reply)
    client = LLMClient(ModelRoles(judge=ModelSettings(model="fake/judge")), fake_script=script)
    findings = asyncio.run(review_suites([loaded], [], judge_model="fake/judge", llm=client))
    assert [(f.key_path, f.line, f.column, f.severity, f.source) for f in findings] == [
        ("cases[0].name", 3, 5, "info", "model"),
        ("cases[0].name", 3, 5, "info", "model"),
        ("cases[0].steps[0]", 6, 9, "info", "model"),
        ("cases[0].steps[1].success_criteria", 9, 9, "info", "model"),
    ]
    [request] = script.requests
    assert request.role == Role.JUDGE
    assert request.messages[0]["content"] == spec_review_prompt()
    assert section(request.messages[1]["content"], "findings") == "(none)"
    assert "name: journey" in section(request.messages[1]["content"], "suite")
