"""The progress line says what the run has used so far: tokens, the share of the prompt a provider's prompt cache
served, and the cost."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from simulator.cli import app
from simulator.cli._progress import _spent_words
from simulator.llm import FakeScript, Usage
from tests.cli.test_cached_answers import SUITE, judge

runner = CliRunner()


@pytest.mark.parametrize(
    ("usage", "words"),
    [
        (Usage(), ""),  # no model asked yet
        (Usage(prompt_tokens=900, completion_tokens=50, cost=0.0012), "950 tokens · $0.0012"),
        (Usage(prompt_tokens=12_000, completion_tokens=300, cost=None), "12.3k tokens · cost unknown"),
        (
            Usage(prompt_tokens=10_000, completion_tokens=2_300, cost=0.0123, cache_read_tokens=4_100),
            "12.3k tokens (41% of prompt cached) · $0.0123",
        ),
        (Usage(prompt_tokens=4_000_000, completion_tokens=560_000, cost=1.5), "4.56M tokens · $1.5000"),
    ],
)
def test_the_spend_so_far_in_words(usage: Usage, words: str) -> None:
    assert _spent_words(usage) == words


def test_the_progress_lines_add_up_tokens_cost_and_the_prompt_cache_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    # A judge whose provider caches prompts: each question after the first begins as an earlier one did.
    script = FakeScript().enqueue("judge", judge, times=100).cache_prompts("judge")
    script.price("judge", prompt=0.0001, completion=0.0002, cached=0.00001)
    with script.active():
        result = runner.invoke(
            app,
            [
                "run", "suite.yaml", "--judge-model", "fake/judge", "--db", "r.db", "--seed", "1", "--repeat", "3",
                "--concurrency", "1", "--no-cache",
            ],
        )  # fmt: skip
    assert result.exit_code == 0, result.stdout + result.stderr
    lines = [line for line in result.stdout.splitlines() if re.match(r"\[\d/3\]", line)]
    assert len(lines) == 3
    spent = [
        re.search(r" · ([\d.]+k?) tokens(?: \((\d+)% of prompt cached\))? · \$(\d+\.\d{4})$", line) for line in lines
    ]
    assert all(spent), lines
    tokens = [float(m.group(1).removesuffix("k")) * (1000 if m.group(1).endswith("k") else 1) for m in spent if m]
    costs = [float(m.group(3)) for m in spent if m]
    assert tokens == sorted(tokens)
    assert tokens[0] < tokens[-1]
    assert costs[0] < costs[-1]
    # The first conversation's judge questions already share their instructions; later ones more so.
    assert spent[-1] is not None
    assert spent[-1].group(2) is not None
    assert int(spent[-1].group(2)) > 0
    # The run's cost is what the last line says it has come to.
    shown = runner.invoke(app, ["runs", "show", "--db", "r.db", "latest"])
    assert f"${costs[-1]:.4f}" in shown.stdout
