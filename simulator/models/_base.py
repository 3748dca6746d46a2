"""Shared bases and small types for the data models."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from pydantic_core import PydanticCustomError

#: A name that a person types on the command line (persona, tool, variable): no spaces, no surprises.
Slug = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=100)]
#: A tool or variable name as model providers accept them in function calling.
Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_-]*$", max_length=64)]
#: Free text that must say something.
Text = Annotated[str, StringConstraints(min_length=1, pattern=r"\S")]
#: A ``module:attribute`` reference to Python code.
ImportRef = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")]
PositiveSeconds = Annotated[float, Field(gt=0, le=3600)]


class StrictModel(BaseModel):
    """Base for everything a person writes: unknown keys are errors, never silently ignored."""

    # strict: no silent coercion ("3" is not 3, "yes" is not true), so the models accept exactly what the
    # published JSON Schema accepts, and the loader can trust either.
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=False, validate_default=False)


class DataModel(BaseModel):
    """Base for data Simulator produces itself (transcripts, results): strict too, but never hand-written."""

    model_config = ConfigDict(extra="forbid")


def located_error(message: str, *at: str | int) -> PydanticCustomError:
    """A validation error placed at a key inside the model being validated, e.g. ``("tools", 1, "name")``.

    Validators that check several keys raise this, so the loader can point at the exact key that is wrong
    rather than at the whole mapping.
    """
    return PydanticCustomError("located", "{message}", {"message": message, "at": list(at)})
