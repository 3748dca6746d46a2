"""What the driver ships to its Ray workers, checked without Ray: every suite's snapshot reads back in a worker as
it was written, and a worker that could not start says why."""

from __future__ import annotations

from pathlib import Path

import pytest

import simulator
from simulator.models.run import SuiteSnapshot
from simulator.runner._plan import restore
from simulator.runner._ray import death_cause, shipped

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "folder", ["suites/demo", "suites/examples", "tests/acceptance/data/lieferservice"], ids=lambda f: f
)
def test_every_suite_reads_back_in_a_worker(folder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The agents' keys only have to be set; nothing is called. The German acceptance suite has a tool fake with
    # `error` and no `result`: dumped with its defaults it read back as both, and every worker failed to start.
    names = ("SHOP_AGENT_API_KEY", "EVAL_SOURCE", "SHOP_TENANT_ID", "STUB_MODEL_KEY", "LIEFER_KEY", "OPENAI_API_KEY")
    for name in names:
        monkeypatch.setenv(name, "not-a-real-key")
    planned = simulator.plan([str(ROOT / folder)], user_model="fake/user")  # one example simulates a tool
    assert planned.snapshots
    for snapshot in planned.snapshots:
        back = SuiteSnapshot.model_validate(shipped(snapshot))
        assert back.suite == snapshot.suite
        assert Path(back.path).is_absolute()
        restore(back)


def test_a_worker_that_could_not_start_says_the_error_it_raised() -> None:
    said = (
        "The actor died because of an error raised in its creation task, \x1b[36mray::ConversationWorker.__init__()"
        "\x1b[39m (pid=2881, ip=127.0.0.1, actor_id=b38e, repr=<ConversationWorker object at 0x7f>)\n"
        '           ^^^^^^^^^^^^\n  File "/w/simulator/runner/_ray.py", line 230, in __init__\n'
        "ValueError: a tool fake has either `result` or `error`, not both"
    )
    assert death_cause(RuntimeError(said)) == (
        "The actor died because of an error raised in its creation task, ray::ConversationWorker.__init__(): "
        "ValueError: a tool fake has either `result` or `error`, not both"
    )


def test_a_worker_that_died_running_says_the_first_line() -> None:
    said = "The actor died unexpectedly before finishing this task.\n\tclass_name: ConversationWorker"
    assert death_cause(RuntimeError(said)) == "The actor died unexpectedly before finishing this task."
    assert death_cause(RuntimeError("")) == "RuntimeError"
