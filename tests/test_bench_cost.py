"""bench/cost.py and the fake server's size log (bench/_server.py --sizes, bench/_sizes.py): what a prompt cache
could serve, what the server measures, and the BENCH line of a tiny run with stand-in peers."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

_BENCH = Path(__file__).resolve().parent.parent / "bench"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", _BENCH / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def sizes() -> ModuleType:
    return _load("_sizes")


@pytest.fixture(scope="module")
def server_module() -> ModuleType:
    return _load("_server")


# (prompt, earlier prompts of the conversation and role) -> cacheable (characters, tokens); tokens here are
# 4-character chunks (the characters / 4 stand-in), so a prefix counts its whole chunks only.
_PREFIXES = [
    ("abcdefgh", [], (0, 0)),
    ("abcdefgh", ["abcdefgh"], (8, 2)),
    ("abcdefgh", ["abcd"], (4, 1)),
    ("abcdefgh", ["abcdefXY"], (6, 1)),
    ("abcdefgh", ["abXY", "abcdefgXYZ", "abcdeXY"], (7, 1)),
    ("abcd", ["abcdefgh"], (4, 1)),
    ("xbcdefgh", ["abcdefgh"], (0, 0)),
    ("", ["abcd"], (0, 0)),
]


@pytest.mark.parametrize(("prompt", "earlier", "expected"), _PREFIXES)
def test_the_cacheable_prefix_is_the_longest_shared_with_an_earlier_prompt(
    sizes: ModuleType, prompt: str, earlier: list[str], expected: tuple[int, int]
) -> None:
    tokenizer = sizes.Tokenizer(use_tiktoken=False)
    assert tokenizer.name == "chars/4"
    seen = [(text, tokenizer.ids(text)) for text in earlier]
    assert sizes.cacheable(prompt, tokenizer.ids(prompt), seen) == expected


def test_token_prefixes_are_counted_on_token_ids(sizes: ModuleType) -> None:
    assert sizes.cacheable("a b c", [1, 2, 3], [("a b d", [1, 2, 4]), ("a x", [1, 9])]) == (4, 2)


def test_a_prefix_shared_across_conversations_is_the_longest_with_any_earlier_prompt(sizes: ModuleType) -> None:
    ordered: list[tuple[int, ...]] = []
    prompts = [[1, 2, 3, 4], [1, 2, 9], [5, 6], [1, 2, 3, 7, 8], [5, 6, 7], [0], [1, 2, 3, 4, 5]]
    found = [sizes.shared_anywhere(ids, ordered) for ids in prompts]
    assert found == [0, 2, 0, 3, 2, 0, 4]
    # Brute force: the longest common prefix with any earlier prompt.
    for number, ids in enumerate(prompts):
        best = max((sizes.common_prefix(ids, other) for other in prompts[:number]), default=0)
        assert found[number] == best
    assert ordered == sorted(tuple(ids) for ids in prompts)


@pytest.mark.parametrize(
    ("tokens", "cached"),
    [(0, 0), (127, 0), (1023, 0), (1024, 1024), (1151, 1024), (1152, 1152), (1279, 1152), (5000, 4992)],
)
def test_a_provider_caches_from_1024_tokens_in_128_token_blocks(sizes: ModuleType, tokens: int, cached: int) -> None:
    assert sizes.cached_blocks(tokens) == cached


def test_the_prompt_is_role_and_content_of_each_message_and_the_format_apart(sizes: ModuleType) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "function": {"name": "f"}}]},
    ]
    assert sizes.serialise_prompt(messages) == (
        '<system>\nBe brief.\n<user>\nHi there\n<assistant>\n[{"function": {"name": "f"}, "id": "1"}]\n'
    )
    body = {"messages": messages, "response_format": {"type": "json_object"}, "tools": [], "temperature": 0}
    assert sizes.serialise_format(body) == '{"response_format": {"type": "json_object"}}'
    assert sizes.serialise_format({"messages": messages}) == ""
    call = [{"id": "c1", "type": "function", "function": {"name": "verdict", "arguments": "{}"}}]
    assert sizes.completion_text({"role": "assistant", "content": None, "tool_calls": call}) == json.dumps(
        call, sort_keys=True
    )
    assert sizes.completion_text({"role": "assistant", "content": "Hi"}) == "Hi"


@pytest.mark.parametrize(
    ("body", "conversation"),
    [
        ("no marker", None),
        ('{"message": "Where is it? [c3]"} Shipped. [c3]', 3),
        ("quoted [c4] and [c7] [c7]", 7),  # the most frequent
        ("a [r12] timeline marker is no conversation's", None),
    ],
)
def test_a_request_belongs_to_the_conversation_its_body_quotes(
    sizes: ModuleType, body: str, conversation: int | None
) -> None:
    assert sizes.conversation_in(body) == conversation


def test_the_markers_are_taken_out_before_measuring(sizes: ModuleType) -> None:
    assert sizes.unmarked("Hello [c12] there [c12]") == "Hello there"
    assert sizes.unmarked("Shipped. [r4] [c2]") == "Shipped. [r4]"


def _post(url: str, body: dict[str, Any]) -> str:
    request = urllib.request.Request(
        f"{url}/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        content: str = json.loads(reply.read())["choices"][0]["message"]["content"]
    return content


_MOVE = {
    "type": "json_schema",
    "json_schema": {
        "name": "UserMove",
        "schema": {"properties": {"message": {"type": "string"}, "done": {"type": "boolean"}}},
    },
}


def test_the_size_log_measures_each_request_by_conversation_and_role(server_module: ModuleType) -> None:
    instructions = {"role": "system", "content": "You are a customer. " * 20}
    with server_module.FakeServer(sizes=True) as server:
        first = _post(server.base_url, {"model": "peer-user", "messages": [instructions], "response_format": _MOVE})
        said = json.loads(first)["message"]
        assert said.endswith(" [c1]")  # the marker the conversation's later requests quote
        reply = _post(server.base_url, {"model": "peer-agent", "messages": [{"role": "user", "content": said}]})
        assert reply == f"{server_module.AGENT_REPLY} [c1]"
        history = [instructions, {"role": "assistant", "content": said}, {"role": "user", "content": reply}]
        _post(server.base_url, {"model": "peer-user", "messages": history, "response_format": _MOVE})
        _post(server.base_url, {"model": "openai/peer-judge", "messages": [{"role": "user", "content": reply}]})
        _post(server.base_url, {"model": "peer-user", "messages": [instructions]})  # quotes nothing: a new one
        log = server.size_log()
        assert server.size_log()["requests"] == []  # /sizes empties the log
    assert log["tokenizer"] in ("o200k_base", "cl100k_base", "chars/4")
    rows = log["requests"]
    assert [(r["serial"], r["role"], r["schema"], r["conversation"]) for r in rows] == [
        (1, "user", "UserMove", 1), (2, "agent", None, 1), (3, "user", "UserMove", 1), (4, "judge", None, 1),
        (5, "user", None, 2),
    ]  # fmt: skip
    assert all("[c" not in r["prompt"] for r in rows)  # the markers cost nothing
    assert rows[0]["prompt"] == f"<system>\n{instructions['content']}\n"
    assert (rows[0]["prompt_chars"], rows[0]["completion_chars"]) == (len(rows[0]["prompt"]), len(first) - 5)
    assert rows[0]["format_chars"] > 0
    assert rows[4]["format_chars"] == 0
    assert all(r["prompt_tokens"] > 0 and r["completion_tokens"] > 0 for r in rows)
    # The second user turn starts with the first one's prompt; the other conversation's same prompt is not reused.
    assert rows[2]["cacheable_chars"] == rows[0]["prompt_chars"]
    assert 0 < rows[2]["cacheable_tokens"] <= rows[0]["prompt_tokens"]
    assert rows[2]["cacheable_tokens_blocks"] == 0  # under 1,024 tokens
    assert [r["cacheable_chars"] for r in (rows[0], rows[1], rows[3], rows[4])] == [0, 0, 0, 0]


def test_without_sizes_replies_are_not_marked_and_nothing_is_logged(server_module: ModuleType) -> None:
    with server_module.FakeServer() as server:
        said = json.loads(_post(server.base_url, {"model": "peer-user", "messages": [], "response_format": _MOVE}))
        assert "[c" not in said["message"]
        assert server.size_log() == {"tokenizer": None, "tokenize_s": 0.0, "requests": []}


_SETUP = """
import os, sys
peer, venv = sys.argv[1], sys.argv[2]
if peer == "broken":
    print("pip could not reach the registry", file=sys.stderr)
    sys.exit(2)
os.makedirs(os.path.join(venv, "bin"), exist_ok=True)
python = os.path.join(venv, "bin", "python")
with open(python, "w") as out:
    out.write(f"#!/bin/sh\\nexec {sys.executable} \\"$@\\"\\n")
os.chmod(python, 0o755)
"""

# A peer that sends a conversation's whole history each user turn, and one judge request.
_DRIVER = """
import argparse, json, urllib.request
parser = argparse.ArgumentParser()
for flag in ("--base-url", "--agent-url"):
    parser.add_argument(flag)
parser.add_argument("--conversations", type=int)
parser.add_argument("--turns", type=int)
args = parser.parse_args()

def ask(model, messages):
    body = json.dumps({"model": model, "messages": messages}).encode()
    request = urllib.request.Request(args.base_url + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as reply:
        return json.loads(reply.read())["choices"][0]["message"]["content"]

for _ in range(args.conversations):
    history = []
    for _ in range(args.turns):
        said = ask("peer-user", [{"role": "system", "content": "You are a customer."}] + history)
        history.append({"role": "user", "content": said})
        history.append({"role": "assistant", "content": ask("peer-agent", history)})
    ask("peer-judge", [{"role": "user", "content": json.dumps(history)}])
print(json.dumps({"peer": "standin", "version": "0", "conversations": args.conversations, "turns": args.turns,
                  "user_turns_done": args.turns, "errors": []}))
"""


def test_a_tiny_run_ends_with_the_bench_line(tmp_path: Path) -> None:
    peers = tmp_path / "peers"
    peers.mkdir()
    (peers / "setup.py").write_text(textwrap.dedent(_SETUP), encoding="utf-8")
    (peers / "standin.py").write_text(textwrap.dedent(_DRIVER), encoding="utf-8")
    (peers / "broken.py").write_text("raise SystemExit('never run')\n", encoding="utf-8")
    command = [
        sys.executable, str(_BENCH / "cost.py"), "--conversations", "2", "--turns", "2",
        "--peer-dir", str(peers), "--venvs", str(tmp_path / "venvs"), "--keep", str(tmp_path / "keep"),
    ]  # fmt: skip
    env = {**os.environ, "LITELLM_OFFLINE_MODE": "true"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert any("broken" in line and "pip could not reach the registry" in line for line in lines)
    assert lines[-1].startswith("BENCH ")
    fields = dict(field.split("=", 1) for field in lines[-1].split()[1:])
    for name in (
        "user_tokens_per_conv", "judge_tokens_per_conv", "user_judge_tokens_per_conv", "judge_requests_per_pass",
        "cacheable_share_user", "cacheable_share_judge", "cacheable_share", "cacheable_share_blocks",
        "peers_min_tokens_per_conv", "tokens_per_conv_standin", "ratio_to_min_peer", "tokens_per_conv_bare",
    ):  # fmt: skip
        float(fields[name])
    assert fields["skipped"] == "broken"
    assert fields["peers_min_tokens_per_conv"] == fields["tokens_per_conv_standin"]
    assert int(fields["user_judge_tokens_per_conv"]) > 0
    assert 0 < float(fields["cacheable_share_user"]) < 1
    # The stand-in's later user turns repeat its earlier prompt: it caches, its one judge request does not.
    standin = json.loads((tmp_path / "keep" / "sizes-standin.json").read_text(encoding="utf-8"))["requests"]
    assert [r["role"] for r in standin].count("judge") == 2
    assert {r["conversation"] for r in standin if r["role"] == "judge"} == {
        r["conversation"] for r in standin if r["role"] == "user"
    }
    assert all(r["cacheable_chars"] > 0 for r in standin if r["role"] == "user" and "<user>" in r["prompt"])
