"""Record the checked-in cassette ``v1-order_status_needs_the_order_number-questions-apart.json.gz`` again.

A replay answers a judge request only when its text is the recorded one, so a change to the judge's prompts (or
to the simulated user's system prompt) leaves this cassette's requests unanswered. Run from the repository root::

    LITELLM_OFFLINE_MODE=true python tests/data/cassettes/record.py

It runs the demo simulation ``order_status_needs_the_order_number`` with ``--record``, a fake user model that
invents its order number at turn 2 (``ORD-77777``) and a fake judge that finds nothing met and flags that
turn, and writes the conversation's cassette over the file. The judge's questions are asked apart, as before
the user's invented-fact question rode in the hallucination request: the suite replaces the ``user_fidelity``
prompt with its own built-in text (a suite that replaces it asks it on its own), so every request is word for
word the one the built-in prompts ask. ``tests/test_cassettes.py`` replays it with the demo suite unchanged.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
CASE = "order_status_needs_the_order_number"
TARGET = Path(__file__).resolve().parent / f"v1-{CASE}-questions-apart.json.gz"


def judge(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Nothing the agent did is met; the user invented its order number at turn 2."""
    prompt = str(messages[0]["content"])
    if prompt.startswith("You check one success criterion"):
        return {"verdict": "not_met", "reason": "no order status given", "quote": ""}
    if prompt.startswith("You check the turns"):
        return {"turns": [{"turn": n, "verdict": "no_claim", "claim": "", "reason": "asks only"} for n in (1, 2)]}
    if prompt.startswith("You decide whether a conversation"):
        return {"satisfied": False, "reason": "the user got no status", "quote": ""}
    if prompt.startswith("You check one expectation"):
        return {"verdict": "not_met", "reason": "no", "quote": ""}
    if prompt.startswith("A language model played a customer"):
        return {"turns": [{"turn": 2, "invented": True, "fact": "ORD-77777", "reason": "the brief gives ORD-10042"}]}
    raise AssertionError(f"an unexpected judge question: {prompt[:80]!r}")


def main() -> None:
    """Record the conversation in a copy of the demo and write its cassette to :data:`TARGET`."""
    sys.path.insert(0, str(ROOT))
    import simulator
    from simulator.cassettes import decode
    from simulator.judges.llm_judges import builtin_prompt
    from simulator.llm import FakeScript
    from simulator.store import RunStore

    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        (work / ".git").mkdir()
        shutil.copytree(ROOT / "suites" / "demo", work / "suites" / "demo")
        shutil.copytree(ROOT / "personas", work / "personas")
        (work / "user_fidelity.md").write_text(builtin_prompt("user_fidelity"), encoding="utf-8")
        suite = work / "suites" / "demo" / "simulations.yaml"
        with suite.open("a", encoding="utf-8") as file:
            file.write("\njudge_prompts:\n  user_fidelity: ../../user_fidelity.md\n")
        os.chdir(work)
        said = "My order number is ORD-77777, I ordered it last week."
        invented = {"message": said, "done": False, "reason": "asking"}
        script = FakeScript().enqueue("user", invented, times=9).enqueue("judge", judge, times=60)
        with script.active():
            outcome = simulator.run(
                "suites/demo/simulations.yaml", cases=[CASE], user_model="fake/user", judge_model="fake/judge",
                db=work / "runs.db", seed=0, record=True,
            )  # fmt: skip
        with RunStore(work / "runs.db") as store:
            [key] = store.cassette_keys(outcome.id)
            cassette = decode(store.cassette(outcome.id, key) or b"", where=key)
    data = json.dumps(cassette.model_dump(mode="json"), ensure_ascii=False)
    TARGET.write_bytes(gzip.compress(data.encode("utf-8"), mtime=0))
    asked = len(cassette.of("judge", "model"))
    print(f"wrote {TARGET.relative_to(ROOT)}: run {outcome.id}, {asked} judge requests")


if __name__ == "__main__":
    main()
