"""Ray, in the ``ray`` and ``test`` extras, is asked for only where it publishes wheels: it has no source
distribution, so elsewhere ``pip install '.[test]'`` would fail as a whole. The table is what PyPI held for
Ray 2.40 and later when the marker was written (pip's resolver asked per Python and platform tag)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _ray_in(extra: str) -> Requirement:
    extras = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    [ray] = [Requirement(line) for line in extras[extra] if Requirement(line).name == "ray"]
    return ray


@pytest.mark.parametrize("extra", ["ray", "test"])
@pytest.mark.parametrize(
    ("where", "has_wheel"),
    [
        (("3.11", "CPython", "linux", "x86_64"), True),
        (("3.14", "CPython", "linux", "x86_64"), True),
        (("3.13", "CPython", "linux", "aarch64"), True),
        (("3.14", "CPython", "darwin", "arm64"), True),
        (("3.13", "CPython", "darwin", "x86_64"), True),  # Intel Macs: Ray 2.49 is the last, up to Python 3.13
        (("3.14", "CPython", "darwin", "x86_64"), False),
        (("3.12", "CPython", "win32", "AMD64"), True),
        (("3.12", "CPython", "win32", "ARM64"), False),
        (("3.15", "CPython", "linux", "x86_64"), False),  # no wheel yet
        (("3.11", "CPython", "linux", "armv7l"), False),
        (("3.11", "PyPy", "linux", "x86_64"), False),
        (("3.12", "CPython", "freebsd14", "amd64"), False),
    ],
)
def test_ray_is_asked_for_only_where_it_has_a_wheel(
    extra: str, where: tuple[str, str, str, str], has_wheel: bool
) -> None:
    python, implementation, system, machine = where
    ray = _ray_in(extra)
    assert ray.marker is not None, f"ray in the {extra!r} extra has no environment marker"
    environment = {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "platform_python_implementation": implementation,
        "implementation_name": implementation.lower(),
        "sys_platform": system,
        "platform_machine": machine,
        "extra": extra,
    }
    assert ray.marker.evaluate(environment) is has_wheel


def _names(requirements: list[str]) -> set[str]:
    return {Requirement(line).name for line in requirements}


@pytest.mark.parametrize(
    ("where", "has_openai"), [("dependencies", False), ("bench", True), ("test", True), ("ray", False)]
)
def test_the_openai_sdk_is_asked_for_only_by_the_benchmarks_and_the_tests(where: str, has_openai: bool) -> None:
    # Simulator posts to OpenAI-compatible endpoints over httpx; bench/ times the SDK as a baseline, and the tests
    # check the requests against the SDK's types.
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    requirements = project["dependencies"] if where == "dependencies" else project["optional-dependencies"][where]
    assert ("openai" in _names(requirements)) is has_openai
