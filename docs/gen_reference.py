"""Write the generated reference pages (the command line and the file formats) into ``docs/reference/``.

``python docs/gen_reference.py`` rewrites them; ``python docs/gen_reference.py --check`` only compares and exits 1
naming each page that differs from the code (the test suite runs the same comparison).
"""

from __future__ import annotations

import sys
from pathlib import Path

from simulator.cli._reference import cli_reference
from simulator.schemas._reference import SCHEMA_PAGES, schema_reference

REFERENCE = Path(__file__).resolve().parent / "reference"


def pages() -> dict[Path, str]:
    """Every generated page: its path and its text."""
    generated = {REFERENCE / "cli.md": cli_reference()}
    for schema_file, (page, _) in SCHEMA_PAGES.items():
        generated[REFERENCE / f"{page}.md"] = schema_reference(schema_file)
    return generated


def main(argv: list[str]) -> int:
    """Rewrite the pages, or with ``--check`` report the ones that differ."""
    stale = [path for path, text in pages().items() if not path.exists() or path.read_text("utf-8") != text]
    if "--check" in argv:
        for path in stale:
            print(f"{path}: differs from the code; run: python docs/gen_reference.py")
        return 1 if stale else 0
    REFERENCE.mkdir(exist_ok=True)
    for path, text in pages().items():
        path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
