"""Model requests per conversation by role, and the wall time of scoring, on bench/peers.py's workload (6 user turns,
LLM user, agent, judge) through the real runner (``run_case`` + ``score_case``), with the fake provider.

Three variants, each in its own subprocess so they import their own code:

* ``before``: the code at ``--before`` (default ``/work/main``, put first on ``PYTHONPATH``);
* ``after``: this checkout: one judge request per conversation for the goal question, the hallucination
  question of every agent turn and the simulated user's invented-fact question (``conversation_review``);
* ``separate``: this checkout with the suite's ``judging: {batch: false}`` (the goal question, and one
  hallucination request per turn, at once; the user's question on its own after a failure it could have caused).

Every fake model call waits ``--latency`` seconds (asyncio sleep), so scoring wall time ÷ latency counts the
judge round trips one after another a conversation waits for (ideal: 1). Conversations run one at a time.
With ``--failing`` the judge finds the user's goal not satisfied, so every conversation fails (and the judge's
answer about the simulated user is used); the BENCH line then starts with ``failing=1``.

    python bench/judge_calls.py [--conversations N] [--latency S] [--before PATH] [--failing]

Ends with one line: BENCH requests_before=.. requests_after=.. judge_before=.. judge_after=.. judge_separate=..
scoring_latencies_before=.. scoring_latencies_after=.. scoring_latencies_separate=..
judge_chars_ratio_after_to_before=.. (characters of judge prompts per conversation)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TURNS = 6
HERE = Path(__file__).resolve().parent.parent


def _suite(root: Path, batch: bool) -> Path:
    (root / ".git").mkdir(exist_ok=True)
    judging = "" if batch else "judging:\n  batch: false\n"
    suite = root / "suite.yaml"
    suite.write_text(
        "name: bench\nagent:\n  type: litellm\n  model: fake/agent\n  instructions: You answer order questions.\n"
        f"{judging}cases:\n  - kind: scenario\n    name: order\n    goal: Find out where order ORD-1 is.\n"
        f"    max_turns: {TURNS}\n",
        encoding="utf-8",
    )
    return suite


def _child(batch: bool, latency: float, conversations: int, failing: bool) -> dict[str, Any]:
    from _server import marked_turns  # bench/_server.py: reads the turns a judge request marks

    from simulator.llm import FakeScript, LLMClient, Role
    from simulator.loading import load_suite
    from simulator.models.run import RunSettings
    from simulator.runner import find_case, model_roles, run_case, score_case

    def slow(answer: Any) -> Any:
        async def reply(messages: list[dict[str, Any]]) -> Any:
            await asyncio.sleep(latency)
            return answer(messages[0]["content"]) if callable(answer) else answer

        return reply

    def judge(prompt: str) -> Any:
        # Every agent turn supported, no user turn invented: the goal question alone decides the outcome.
        # Turns to judge are marked with "judge": true in JSON events, or (the code at --before may predate it)
        # wrapped in <agent_turn number="N"> / <user_turn number="N">.
        marked = marked_turns(prompt)
        numbers = marked["turns"] or [int(n) for n in re.findall(r'<agent_turn number="(\d+)">', prompt)]
        asked = marked["user_turns"] or [int(n) for n in re.findall(r'<user_turn number="(\d+)">', prompt)]
        users = [{"turn": n, "invented": False, "fact": "", "reason": "ok"} for n in asked]
        # A pass quotes the agent's words: the agent says the same every turn.
        goal = {"satisfied": not failing, "reason": "ok", "quote": "" if failing else "Your order ORD-1 has shipped."}
        if prompt.startswith("You judge one finished conversation"):  # the goal and the turns in one request
            # Both shapes of the review's reply in one (each ignores the other's keys): the code at --before may
            # ask for a verdict object per turn, this checkout asks for bare verdicts with "claims" and
            # "invented" apart (none here).
            turns = [{"turn": n, "verdict": "supported", "claim": "", "reason": "ok"} for n in numbers]
            return {"goal": goal, "turns": turns, "user_turns": users, "claims": [], "invented": []}
        if numbers:
            turns = [{"turn": n, "verdict": "supported", "claim": "", "reason": "ok"} for n in numbers]
            return {"turns": turns, "user_turns": users}
        if users:
            return {"turns": users}
        if prompt.startswith("You check one turn"):
            return {"verdict": "supported", "claim": "", "reason": "ok"}
        return goal

    script = FakeScript()
    times = conversations * 20
    script.enqueue("user", slow({"message": "Where is ORD-1?", "done": False, "reason": "asking"}), times=times)
    script.enqueue("agent", slow("Your order ORD-1 has shipped."), times=times)
    script.enqueue("judge", slow(judge), times=times)
    with tempfile.TemporaryDirectory() as tmp:
        loaded = load_suite(_suite(Path(tmp), batch))
    options = RunSettings(user_model="fake/user", judge_model="fake/judge", cache=False)
    llm = LLMClient(model_roles(loaded, options), fake_script=script)
    case = find_case(loaded, "order")
    scoring: list[float] = []

    async def go() -> None:
        for _ in range(conversations):
            transcript = await run_case(loaded, case, persona=None, llm=llm, options=options)
            started = time.perf_counter()
            result = await score_case(loaded, case, transcript, llm=llm, options=options)
            scoring.append(time.perf_counter() - started)
            assert sum(s.metric == "hallucination" for s in result.scores) == TURNS, result.scores
            assert (result.outcome == "pass") != failing, result.reasons

    asyncio.run(go())
    by_role = {role.value: sum(r.role == role for r in script.requests) / conversations for role in Role}
    judge_chars = sum(len(str(m.get("content"))) for r in script.requests if r.role == Role.JUDGE for m in r.messages)
    return {
        "by_role": by_role,
        "scoring_latencies": statistics.median(scoring) / latency,
        "judge_chars": judge_chars / conversations,
    }


def _run(variant: str, args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ, LITELLM_OFFLINE_MODE="true")
    if variant == "before":
        env["PYTHONPATH"] = str(Path(args.before).resolve())
    command = [sys.executable, __file__, "--child", variant, "--latency", str(args.latency)]
    command += ["--conversations", str(args.conversations)] + (["--failing"] if args.failing else [])
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{variant} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    """Measure the three variants and print requests per conversation by role and scoring round trips."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--conversations", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--before", default="/work/main")
    parser.add_argument("--child", choices=["before", "after", "separate"])
    parser.add_argument("--failing", action="store_true", help="The judge finds no goal satisfied: all fail.")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child != "separate", args.latency, args.conversations, args.failing)))
        return
    results = {variant: _run(variant, args) for variant in ("before", "after", "separate")}
    for variant, result in results.items():
        roles = ", ".join(f"{role} {count:g}" for role, count in result["by_role"].items())
        total = sum(result["by_role"].values())
        print(
            f"{variant:9} requests/conversation {total:g} ({roles}); "
            f"scoring wall = {result['scoring_latencies']:.2f} x latency; "
            f"judge prompt chars/conversation {result['judge_chars']:.0f}"
        )
    fields = {
        **({"failing": 1} if args.failing else {}),
        "requests_before": sum(results["before"]["by_role"].values()),
        "requests_after": sum(results["after"]["by_role"].values()),
        "judge_before": results["before"]["by_role"]["judge"],
        "judge_after": results["after"]["by_role"]["judge"],
        "judge_separate": results["separate"]["by_role"]["judge"],
        "scoring_latencies_before": round(results["before"]["scoring_latencies"], 2),
        "scoring_latencies_after": round(results["after"]["scoring_latencies"], 2),
        "scoring_latencies_separate": round(results["separate"]["scoring_latencies"], 2),
        "judge_chars_ratio_after_to_before": round(
            results["after"]["judge_chars"] / results["before"]["judge_chars"], 2
        ),
    }
    print("BENCH " + " ".join(f"{key}={value:g}" for key, value in fields.items()))


if __name__ == "__main__":
    main()
