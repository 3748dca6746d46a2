"""What a conversation costs in tokens, and how much of it a provider's prompt cache could serve: Simulator, a bare
loop and the peer tools, side by side on bench/peers.py's workload and one fake server.

The workload: N conversations x T user turns, an LLM user (model ``peer-user``), an agent the fake server answers
(``peer-agent``) and a judge (``peer-judge``), as in ``bench/peers.py`` (its suite and its in-process runner are
imported from there). One fake server (``bench/_server.py --sizes``) answers every system in turn and measures each
request: the prompt (the messages, role and content), the response format and tools apart, the completion, in
characters and tokens (tiktoken's ``o200k_base``, offline; characters / 4 where it does not load), by role.

Rows:

* ``Simulator``: ``simulator.run`` on the generated suite (``--repeat N``, no request cache);
* ``bare loop``: bench/peers.py's bare asyncio + openai SDK loop, the least any tool could send (one short
  instruction, the conversation, one judge question): a floor, not a peer;
* a peer per driver in ``bench/cost_peers/`` (LangWatch Scenario, DeepEval's conversation simulator, openevals'
  multi-turn simulation): ``bench/cost_peers/setup.py PEER VENV`` installs it in a bench-only virtual environment
  under ``--venvs``, then ``VENV/bin/python bench/cost_peers/PEER.py --base-url URL --agent-url URL
  --conversations N --turns T`` runs it against the same server. A peer whose setup or run fails is skipped, with
  the reason in the table and its name in ``skipped=``.

The cacheable share: of the prompt tokens of a role, the part that is a byte-identical prefix of an earlier
request's prompt of the same conversation and role (what OpenAI's automatic prompt caching and Anthropic's cache
breakpoints can serve). Which conversation a request belongs to is read from the requests themselves: the server
ends its replies to the user and agent with a conversation marker that every later request of the conversation
quotes (and that is taken out before measuring), so the figure does not depend on a tool's concurrency or on the
order it sends its requests in, and needs nothing of the tools' drivers. The plain share is an upper bound:
providers cache in blocks (OpenAI: prompts of at least 1,024 tokens, in 128-token steps from there) and only what
an earlier request finished writing; ``_blocks`` counts only prefixes of at least 1,024 tokens, rounded down to
128-token blocks. The response format and tools are left out of the share (identical for a role's every request,
so a provider caches them too when they lead the prompt: the share is lower than what it could be).
``_any``: the prefix shared with an earlier request of the same role in ANY conversation, what a provider's cache
(keyed by the prefix) serves across conversations: with one judge request per conversation, nothing of the
judge's is shared within its conversation, while its instructions are the same for every conversation.

Tokens per conversation: prompt + completion + response format / tools, divided by N (the conversations asked for;
the table shows how many the server saw, and the outcomes). ``judge_requests_per_pass``: the judge's requests over
the conversations that passed, when all passed (with ``--failing``: ``judge_requests_per_fail``).

    python bench/cost.py [--conversations 20] [--turns 6] [--failing] [--peers all|none|scenario,deepeval]
        [--venvs DIR] [--concurrency 4] [--keep DIR]

Ends with one line:
BENCH user_tokens_per_conv=.. judge_tokens_per_conv=.. user_judge_tokens_per_conv=.. judge_requests_per_pass=..
cacheable_share_user=.. cacheable_share_judge=.. cacheable_share=.. cacheable_share_blocks=..
cacheable_share_any=.. cacheable_share_any_blocks=.. peers_min_tokens_per_conv=.. tokens_per_conv_<peer>=..
ratio_to_min_peer=.. skipped=<peer>,..
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _server import FakeServer, child_environment  # bench/_server.py: the shared fake server
from peers import BARE, _suite  # bench/peers.py: the workload

HERE = Path(__file__).resolve().parent
PEER_DIR = HERE / "cost_peers"
DEFAULT_VENVS = Path.home() / ".cache" / "simulator-bench" / "cost-peers"
ROLES = ("user", "agent", "judge")
BILLED = ("user", "judge")  # the evaluator's own bill: the agent's requests are the agent's
# Telemetry and tracing off for the peers, besides what their drivers do: nothing leaves the machine.
# bench/peers.py's in-process run, reporting every outcome (a failing workload's conversations may be user_error).
RUN = """
import json, sys
import simulator
suite, db, conversations, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
outcome = simulator.run([suite], db=db, repeat=conversations, concurrency=concurrency, seed=1, cache=False)
totals = outcome.record.totals
keys = ("passed", "failed", "error", "unsure", "user_error")
counts = {k: getattr(totals, k) for k in keys} if totals else {}
print(json.dumps({"status": outcome.record.status, "outcomes": counts}))
"""
PEER_ENV = {
    "OPENAI_API_KEY": "not-a-real-key",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "SCENARIO_DISABLE_SIMULATION_REPORT_INFO": "true",
}


@dataclass
class Row:
    """One system's run: its requests as the server measured them, or why it was skipped."""

    name: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    outcomes: dict[str, int] = field(default_factory=dict)
    note: str = ""
    skipped: str = ""
    tokenize_s: float = 0.0

    def role(self, role: str, key: str) -> int:
        """The sum of ``key`` over the role's requests."""
        return sum(int(r[key]) for r in self.requests if r["role"] == role)

    def count(self, role: str) -> int:
        """The role's requests."""
        return sum(1 for r in self.requests if r["role"] == role)

    def tokens(self, role: str) -> int:
        """Everything the role's requests are billed for: prompt, response format / tools and completion."""
        return sum(self.role(role, k) for k in ("prompt_tokens", "format_tokens", "completion_tokens"))

    def conversations_seen(self) -> int:
        """The conversations the server told apart (a request quoting none of its conversation starts one)."""
        return len({r["conversation"] for r in self.requests if r["role"] in BILLED})


def share(row: Row, roles: tuple[str, ...], key: str = "cacheable_tokens") -> float:
    """The cacheable part of the roles' prompt tokens (0 when they sent none)."""
    prompt = sum(row.role(role, "prompt_tokens") for role in roles)
    return sum(row.role(role, key) for role in roles) / prompt if prompt else 0.0


def judge_per_verdict(row: Row, conversations: int) -> tuple[str, float | None]:
    """``("pass" | "fail", judge requests per such conversation)`` when every conversation had that outcome
    (``user_error`` is a failure too: the judge found the goal not satisfied, and blamed the simulated user)."""
    failed = row.outcomes.get("failed", 0) + row.outcomes.get("user_error", 0)
    for outcome, count in (("pass", row.outcomes.get("passed", 0)), ("fail", failed)):
        if count == conversations:
            return outcome, row.count("judge") / conversations
    return "", None


def _last_json(text: str) -> dict[str, Any]:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return {}


def _reason(process: subprocess.CompletedProcess[str], what: str) -> str:
    lines = [line.strip() for line in (process.stderr + "\n" + process.stdout).splitlines() if line.strip()]
    return f"{what} exited with {process.returncode}" + (f": {lines[-1][:200]}" if lines else "")


def _measure(row: Row, server: FakeServer, keep: Path | None) -> Row:
    """``row`` with the requests the server measured since the last call."""
    log = server.size_log()
    if keep is not None:
        (keep / f"sizes-{row.name.split()[0].lower()}.json").write_text(json.dumps(log, indent=1), encoding="utf-8")
    if not row.skipped:
        row.requests, row.tokenize_s = log["requests"], float(log["tokenize_s"])
    return row


def run_simulator(server: FakeServer, conversations: int, turns: int, concurrency: int, where: Path) -> Row:
    """Simulator on bench/peers.py's suite, in its own process."""
    suite = _suite(where, server.base_url, turns, None)
    command = [sys.executable, "-c", RUN, str(suite), str(where / "cost.db"), str(conversations), str(concurrency)]
    done = subprocess.run(command, capture_output=True, text=True, env=child_environment(), cwd=where, check=False)
    report = _last_json(done.stdout)
    if done.returncode not in (0, 1) or not report:
        raise SystemExit(f"Simulator's run failed: {_reason(done, 'simulator.run')}\n{done.stderr[-3000:]}")
    return Row("Simulator", outcomes=report.get("outcomes", {}), note=f"status {report.get('status')}")


def run_bare(server: FakeServer, conversations: int, turns: int, concurrency: int, where: Path) -> Row:
    """bench/peers.py's bare loop: the floor."""
    command = [sys.executable, "-c", BARE, server.base_url, str(conversations), str(turns), str(concurrency)]
    done = subprocess.run(command, capture_output=True, text=True, env=child_environment(), cwd=where, check=False)
    if done.returncode != 0:
        return Row("bare loop", skipped=_reason(done, "the bare loop"))
    return Row("bare loop", note="floor")


def peer_names(peer_dir: Path) -> list[str]:
    """The peers with a driver in ``peer_dir`` (every ``NAME.py`` but ``setup.py`` and private modules)."""
    return sorted(p.stem for p in peer_dir.glob("*.py") if p.stem != "setup" and not p.stem.startswith("_"))


def run_peer(
    peer: str, server: FakeServer, *, peer_dir: Path, venvs: Path, conversations: int, turns: int, where: Path
) -> Row:
    """Install one peer in its own virtual environment (``setup.py``), then run its driver against the server."""
    env = {**child_environment(), **PEER_ENV}
    venv = venvs / peer
    setup = [sys.executable, str(peer_dir / "setup.py"), peer, str(venv)]
    done = subprocess.run(setup, capture_output=True, text=True, env=env, cwd=where, check=False, timeout=3600)
    if done.returncode != 0:
        return Row(peer, skipped=_reason(done, "setup"))
    python = venv / "bin" / "python"
    command = [
        str(python), str(peer_dir / f"{peer}.py"), "--base-url", server.base_url, "--agent-url", server.base_url,
        "--conversations", str(conversations), "--turns", str(turns),
    ]  # fmt: skip
    server.size_log()  # nothing from the install counts
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=where, check=False, timeout=3600)
    except subprocess.TimeoutExpired:
        return Row(peer, skipped="the driver ran for more than an hour")
    (where / f"{peer}.out").write_text(done.stdout + "\n--- stderr ---\n" + done.stderr, encoding="utf-8")
    report = _last_json(done.stdout)
    if done.returncode != 0 or not report:
        return Row(peer, skipped=_reason(done, "the driver"))
    errors = report.get("errors") or []
    note = f"{report.get('version', '?')}, user turns {report.get('user_turns_done', '?')} of {conversations * turns}"
    return Row(peer, note=note + (f", {len(errors)} errors" if errors else ""))


def _pct(value: float) -> str:
    return f"{value * 100:.0f}%"


def print_table(rows: list[Row], conversations: int, turns: int, tokenizer: str, failing: bool) -> None:
    """Per system: tokens per conversation by role, requests, cacheable shares, characters."""
    kind = "failing" if failing else "passing"
    print(f"\n{conversations} conversations x {turns} user turns ({kind}), tokens per conversation ({tokenizer}):")
    header = (
        f"{'system':<12}{'user':>8}{'(p/c/f)':>18}{'judge':>8}{'(p/c/f)':>18}{'u+j':>8}{'req u/a/j':>14}"
        f"{'judge/verdict':>14}{'cache user':>12}{'judge':>10}{'all':>10}{'any':>10}  conv seen, notes"
    )
    print(header)
    print("-" * len(header))
    per = float(conversations)
    for row in rows:
        if row.skipped:
            print(f"{row.name:<12}  skipped: {row.skipped}")
            continue

        def split(role: str, r: Row = row) -> str:
            parts = (r.role(role, k) / per for k in ("prompt_tokens", "completion_tokens", "format_tokens"))
            return "/".join(f"{v:.0f}" for v in parts)

        def cached(roles: tuple[str, ...], r: Row = row) -> str:
            return f"{_pct(share(r, roles))}/{_pct(share(r, roles, 'cacheable_tokens_blocks'))}"

        def anywhere(r: Row = row) -> str:
            plain, blocks = share(r, BILLED, "cacheable_any_tokens"), share(r, BILLED, "cacheable_any_tokens_blocks")
            return f"{_pct(plain)}/{_pct(blocks)}"

        requests = "/".join(f"{row.count(role) / per:g}" for role in ROLES)
        verdict, judged = judge_per_verdict(row, conversations)
        judge_column = f"{judged:g} ({verdict})" if judged is not None else f"{row.count('judge') / per:g} (conv)"
        outcomes = ", ".join(f"{k} {v}" for k, v in row.outcomes.items() if v)
        notes = ", ".join(filter(None, [row.note, outcomes]))
        print(
            f"{row.name:<12}{row.tokens('user') / per:>8.0f}{split('user'):>18}{row.tokens('judge') / per:>8.0f}"
            f"{split('judge'):>18}{(row.tokens('user') + row.tokens('judge')) / per:>8.0f}{requests:>14}"
            f"{judge_column:>14}{cached(('user',)):>12}{cached(('judge',)):>10}{cached(BILLED):>10}{anywhere():>10}"
            f"  {row.conversations_seen()}, {notes}"
        )
    print(
        "p/c/f: prompt, completion, response format + tools. cache: the cacheable share of the prompt tokens, "
        "plain / counting only prefixes of 1,024+ tokens in 128-token blocks; within the conversation for user, "
        "judge and all, and across conversations (any) for all."
    )
    print(f"characters per conversation (prompt/completion), {'user':>6} and judge:")
    for row in rows:
        if not row.skipped:
            chars = [
                "/".join(f"{row.role(role, k) / per:.0f}" for k in ("prompt_chars", "completion_chars"))
                for role in BILLED
            ]
            print(f"  {row.name:<12}{chars[0]:>16}{chars[1]:>16}")
    spent = sum(row.tokenize_s for row in rows)
    print(f"measuring took {spent:.2f} s in the server's worker thread, after the replies were sent")


def bench_line(rows: list[Row], conversations: int, turns: int, tokenizer: str, failing: bool) -> str:
    """The one ``BENCH`` line (see the module docstring)."""
    simulator, peers = rows[0], [row for row in rows[1:] if row.name != "bare loop"]
    per = float(conversations)
    user, judge = simulator.tokens("user") / per, simulator.tokens("judge") / per
    verdict, judged = judge_per_verdict(simulator, conversations)
    chars = sum(simulator.role(role, k) for role in BILLED for k in ("prompt_chars", "completion_chars"))
    fields = [f"conversations={conversations}", f"turns={turns}", f"tokenizer={tokenizer}"]
    fields += ["failing=1"] if failing else []
    fields += [
        f"user_tokens_per_conv={user:.0f}",
        f"judge_tokens_per_conv={judge:.0f}",
        f"user_judge_tokens_per_conv={user + judge:.0f}",
        f"judge_requests_per_{verdict or 'conv'}={judged if judged is not None else simulator.count('judge') / per:g}",
        f"requests_per_conv={len(simulator.requests) / per:g}",
        f"cacheable_share_user={share(simulator, ('user',)):.3f}",
        f"cacheable_share_judge={share(simulator, ('judge',)):.3f}",
        f"cacheable_share={share(simulator, BILLED):.3f}",
        f"cacheable_share_blocks_user={share(simulator, ('user',), 'cacheable_tokens_blocks'):.3f}",
        f"cacheable_share_blocks_judge={share(simulator, ('judge',), 'cacheable_tokens_blocks'):.3f}",
        f"cacheable_share_blocks={share(simulator, BILLED, 'cacheable_tokens_blocks'):.3f}",
        f"cacheable_share_any={share(simulator, BILLED, 'cacheable_any_tokens'):.3f}",
        f"cacheable_share_any_blocks={share(simulator, BILLED, 'cacheable_any_tokens_blocks'):.3f}",
        f"user_judge_chars_per_conv={chars / per:.0f}",
    ]
    ran = {row.name: (row.tokens("user") + row.tokens("judge")) / per for row in peers if not row.skipped}
    if ran:
        lowest = min(ran.values())
        fields += [f"peers_min_tokens_per_conv={lowest:.0f}", f"ratio_to_min_peer={(user + judge) / lowest:.3f}"]
    fields += [f"tokens_per_conv_{name}={value:.0f}" for name, value in ran.items()]
    bare = next((row for row in rows if row.name == "bare loop" and not row.skipped), None)
    if bare is not None:
        fields.append(f"tokens_per_conv_bare={(bare.tokens('user') + bare.tokens('judge')) / per:.0f}")
    skipped = [row.name for row in peers if row.skipped]
    fields += [f"skipped={','.join(skipped)}"] if skipped else []
    return "BENCH " + " ".join(fields)


def _peers(choice: str, peer_dir: Path) -> list[str]:
    found = peer_names(peer_dir) if peer_dir.is_dir() else []
    if choice == "all":
        return found
    if choice == "none":
        return []
    asked = [name.strip() for name in choice.split(",") if name.strip()]
    unknown = [name for name in asked if name not in found]
    if unknown:
        raise SystemExit(
            f"--peers: no driver for {', '.join(unknown)} in {peer_dir} (there: {', '.join(found) or 'none'})"
        )
    return asked


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--failing", action="store_true", help="The judge finds no goal satisfied: all fail.")
    parser.add_argument("--peers", default="all", help="all, none or a comma-separated list of peer drivers.")
    parser.add_argument("--venvs", type=Path, default=DEFAULT_VENVS, help="Where the peers' environments go.")
    parser.add_argument("--concurrency", type=int, default=4, help="Simulator's and the bare loop's.")
    parser.add_argument("--keep", type=Path, default=None, help="Keep the suite, store, outputs and size logs.")
    parser.add_argument("--peer-dir", type=Path, default=PEER_DIR, help=argparse.SUPPRESS)  # the tests' stand-ins
    args = parser.parse_args(argv)
    if args.conversations < 1 or args.turns < 1:
        parser.error("--conversations and --turns must be at least 1")
    peers = _peers(args.peers, args.peer_dir)
    with tempfile.TemporaryDirectory() as tmp, FakeServer(sizes=True, satisfied=not args.failing) as server:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        n, t = args.conversations, args.turns
        rows = [_measure(run_simulator(server, n, t, args.concurrency, where), server, args.keep)]
        rows.append(_measure(run_bare(server, n, t, args.concurrency, where), server, args.keep))
        for peer in peers:
            print(f"peer {peer}: installing and running ...", flush=True)
            row = run_peer(
                peer, server, peer_dir=args.peer_dir, venvs=args.venvs, conversations=n, turns=t, where=where
            )
            rows.append(_measure(row, server, args.keep))
        tokenizer = str(server.size_log()["tokenizer"])
    if not peers:
        print(f"no peers run ({'--peers none' if args.peers == 'none' else f'no drivers in {args.peer_dir}'})")
    print_table(rows, args.conversations, args.turns, tokenizer, args.failing)
    print(f"\n{bench_line(rows, args.conversations, args.turns, tokenizer, args.failing)}")


if __name__ == "__main__":
    main()
