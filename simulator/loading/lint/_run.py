"""Running the rules over the suites that load: :func:`lint_paths`, :func:`lint_suite`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from simulator.errors import ConfigError, InputError
from simulator.loading._load import LoadedSuite, validate_paths
from simulator.loading._paths import display_path
from simulator.loading._schema import did_you_mean
from simulator.loading._yaml import format_path, parse_yaml, read_text

# isort: off
# The rules register when their modules are imported, in the order they are listed and run.
from simulator.loading.lint import _fact_rules  # noqa: F401
from simulator.loading.lint import _goal_rules  # noqa: F401
from simulator.loading.lint import _check_rules  # noqa: F401
from simulator.loading.lint import _world_rules  # noqa: F401

# isort: on
from simulator.loading.lint._rule import RULES, SEVERITIES, Finding, Rule, SuiteView, _place


@dataclass
class LintReport:
    """What ``lint`` found: the files read, the suites linted, validation errors and findings."""

    files: list[Path] = field(default_factory=list)
    suites: list[LoadedSuite] = field(default_factory=list)
    errors: list[ConfigError] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Findings per severity."""
        return {severity: sum(f.severity == severity for f in self.findings) for severity in SEVERITIES}

    def exit_code(self, *, strict: bool = False) -> int:
        """2 for invalid files, 1 for an error finding (or a warning with ``strict``), else 0."""
        if self.errors:
            return 2
        failing = ("error", "warning") if strict else ("error",)
        return 1 if any(f.severity in failing for f in self.findings) else 0


def suite_view(loaded: LoadedSuite) -> SuiteView | None:
    """The view the rules read of a loaded suite (None if its file no longer parses)."""
    text, _ = read_text(loaded.path)
    located = parse_yaml(text, str(loaded.path))[0] if text is not None else None
    if located is None:
        return None
    return SuiteView(loaded, located, display_path(str(loaded.path)), text or "")


def lint_suite(loaded: LoadedSuite, rules: Iterable[Rule] | None = None) -> list[Finding]:
    """Run ``rules`` (default: all) over one loaded suite; findings sorted by place."""
    view = suite_view(loaded)
    if view is None:
        return []
    findings: list[Finding] = []
    for entry in RULES.values() if rules is None else rules:
        for hit in entry.check(view):
            line, column = _place(view, hit.path)
            findings.append(
                Finding(entry.id, entry.severity, view.file, line, column, format_path(hit.path), hit.message, hit.fix)
            )
    return sorted(set(findings), key=Finding.sort_key)


def lint_paths(paths: Iterable[str | Path], *, ignore: Iterable[str] = ()) -> LintReport:
    """Validate the files under ``paths`` (as ``validate`` does) and lint every suite that loaded with every
    rule but those in ``ignore`` (rule ids; an unknown one is an :class:`InputError`)."""
    skipped = set(ignore)
    unknown = sorted(skipped - set(RULES))
    if unknown:
        hint = did_you_mean(unknown[0], list(RULES))
        raise InputError(f"no lint rule {unknown[0]!r}{hint}; the rules are {', '.join(RULES)}")
    rules = [entry for entry in RULES.values() if entry.id not in skipped]
    validation = validate_paths(paths)
    report = LintReport(files=validation.files, suites=validation.suites, errors=validation.errors)
    for loaded in validation.suites:
        report.findings.extend(lint_suite(loaded, rules))
    return report
