"""What a voice reply must not read out: the chat-only formatting finder."""

from __future__ import annotations

import pytest

from simulator.judges.spoken import chat_only_formatting


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Your refund of 23,60 euros is on its way.", []),
        ("It is **refunded** now.", [("bold", "**refunded**")]),
        ("See [our policy](https://example.com/p) for more.", [("link", "[our policy](https://example.com/p)")]),
        ("Go to https://example.com/refund today", [("url", "https://example.com/refund")]),
        ("or www.example.de.", [("url", "www.example.de")]),
        (
            "# Your options\n- refund\n- voucher",
            [("heading", "# Your options"), ("bullet", "- refund"), ("bullet", "- voucher")],
        ),
        ("Type `BLOCK` to confirm.", [("code", "`BLOCK`")]),
        ("| plan | price |", [("table", "| plan | price |")]),
        ("Done! 🎉 Have a nice day 👍🏽", [("emoji", "🎉"), ("emoji", "👍🏽")]),
        ("Thanks ☀️", [("emoji", "☀️")]),
        # spoken text that only looks like formatting stays clean
        ("Two times three is 6 - and 4 * 2 is 8.", []),
        ("Press star, then hash.", []),
        ("Ihre Karte ist gesperrt – danke für Ihre Geduld.", []),
    ],
)
def test_chat_only_formatting_is_found_and_spoken_text_is_not(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(f.kind, f.text) for f in chat_only_formatting(text)] == expected


def test_a_finding_describes_itself_for_the_report() -> None:
    (finding,) = chat_only_formatting("It is **done**.")
    assert finding.describe() == 'markdown bold "**done**"'
