"""A stand-in for your own agent: a tiny OpenAI-compatible chat-completions server, standard library only.

It answers ``POST /v1/chat/completions`` with keyword rules, like a shop's support agent: asked about an order, it
asks for the order number; given one, it says the order has shipped. ``--v2`` is a changed agent that forgets to
repeat the order number, so that ``simulator compare`` has a regression to show. Try the README's walkthrough
with it, then point ``base_url`` at your own agent instead:

    python examples/agent_server.py [--port 8000] [--v2]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ORDER_ID = re.compile(r"\bORD-\d+\b", re.IGNORECASE)


def reply(messages: list[dict[str, Any]], *, v2: bool) -> str:
    """The agent's answer to the conversation so far (it keeps no state: it reads the whole history each turn)."""
    said = " ".join(str(message.get("content") or "") for message in messages if message.get("role") == "user")
    last = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "").lower()
    order = ORDER_ID.search(said)
    if order and ("ord-" in last or "order" in last):
        return (
            "It has shipped and arrives on Friday."
            if v2
            else f"Order {order[0].upper()} has shipped: it arrives on Friday."
        )
    if "order" in last or "parcel" in last:
        return "I can check that. What is your order number?"
    if "thank" in last or "bye" in last:
        return "You're welcome. Goodbye!"
    return "Hello! How can I help you?"


class Handler(BaseHTTPRequestHandler):
    """``POST /v1/chat/completions`` in the OpenAI shape; everything else is 404."""

    v2 = False

    def do_POST(self) -> None:
        """Answer one chat-completions request."""
        if self.path.rstrip("/") != "/v1/chat/completions":
            self.send_error(404)
            return
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        text = reply(body.get("messages") or [], v2=self.v2)
        payload = {
            "id": f"chatcmpl-{time.time_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or "agent",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the walkthrough's terminal is for Simulator's output."""


def main() -> None:
    """Serve until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--v2", action="store_true", help="the changed agent: forgets to repeat the order number")
    args = parser.parse_args()
    Handler.v2 = args.v2
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"agent on http://{args.host}:{server.server_port}/v1 ({'v2' if args.v2 else 'v1'})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
