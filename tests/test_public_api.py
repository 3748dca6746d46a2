"""The public API is exactly what ``simulator.__all__`` says, sorted, and every name is documented."""

from __future__ import annotations

import inspect

import simulator


def test_all_is_sorted_and_complete() -> None:
    assert simulator.__all__ == sorted(simulator.__all__)
    # Submodules become attributes once imported anywhere; only non-module names are API.
    public = {
        name
        for name, value in vars(simulator).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert public <= set(simulator.__all__)


def test_every_exported_name_exists_and_has_a_docstring() -> None:
    for name in simulator.__all__:
        member = getattr(simulator, name)
        if name == "__version__":
            assert isinstance(member, str)
            continue
        if inspect.isclass(member) or inspect.isfunction(member):
            assert inspect.getdoc(member), f"{name} has no docstring"


def test_error_tree() -> None:
    for error in (
        simulator.ConfigError,
        simulator.ConfigErrors,
        simulator.AgentError,
        simulator.ModelError,
        simulator.JudgeError,
        simulator.StoreError,
    ):
        assert issubclass(error, simulator.SimulatorError)
