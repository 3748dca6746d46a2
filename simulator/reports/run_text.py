"""A run for the terminal: its header, a bounded table of its conversations (failures first), and the totals
(pure functions, no I/O)."""

from __future__ import annotations

from simulator.models.run import MODEL_ROLES, RunRecord, StoredResult
from simulator.models.transcript import Usage
from simulator.reports._states import goals_count
from simulator.reports.figures import percent, prompt_cache_text
from simulator.reports.transcript_text import brief_text, not_judged

CASE_COLUMNS = ("case", "persona", "repeat", "outcome", "goals", "turns", "seconds", "why")
#: The terminal table shows at most this many failures and errors (the rest are counted, with a pointer) ...
FAILING_SHOWN = 50
#: ... then at most this many other rows (unsure first, then passes), so a run of any size prints a few screens.
OTHERS_SHOWN = 20
#: Outcomes in the table's order, and which of them are failing (a ``user_error`` is the simulated user's failure,
#: shown apart from the agent's).
FAILING = ("error", "fail")
OTHERS = ("user_error", "unsure", "pass")


def rows_shown(counts: dict[str, int]) -> tuple[int, int]:
    """How many failing rows (errors and failures) and how many other rows (user errors, unsure, then passes)
    the terminal table shows for a run with these outcome ``counts``: every row of a run of at most
    :data:`FAILING_SHOWN` conversations, else at most :data:`FAILING_SHOWN` failing rows and
    :data:`OTHERS_SHOWN` others."""
    failing = sum(counts.get(outcome, 0) for outcome in FAILING)
    others = sum(counts.get(outcome, 0) for outcome in OTHERS)
    if failing + others <= FAILING_SHOWN:
        return failing, others
    return min(failing, FAILING_SHOWN), min(others, OTHERS_SHOWN)


def more_lines(counts: dict[str, int], shown_failing: int, shown: int, report_command: str) -> list[str]:
    """What the bounded table left out, and where the whole run is: ``N more failing: see ...`` when failing
    rows were left out, and ``showing K of N conversations; the whole run: ...`` when any row was.
    ``report_command`` is the command that writes the run's report (without ``-f``)."""
    failing = sum(counts.get(outcome, 0) for outcome in FAILING)
    total = sum(counts.values())
    lines = []
    if failing > shown_failing:
        lines.append(f"{failing - shown_failing} more failing: see {report_command}")
    if total > shown:
        lines.append(f"showing {shown} of {total} conversations; the whole run: {report_command} -f html")
    return lines


def run_header(record: RunRecord) -> list[str]:
    """Who, what and how: id, status, suites, agent version, note, settings that matter, versions."""
    suites = ", ".join(f"{s.suite.name} ({s.path})" for s in record.snapshot)
    settings = record.settings
    lines = [
        f"Run {record.id}: {record.status}, created {record.created:%Y-%m-%d %H:%M:%S} UTC",
        f"  suites: {suites} [hash {record.suite_hash}]",
    ]
    if record.agent_version:
        lines.append(f"  agent version: {record.agent_version}")
    if record.note:
        lines.append(f"  note: {record.note}")
    models = ", ".join(
        f"{role}={model}" for role, model in (("user", settings.user_model), ("judge", settings.judge_model)) if model
    )
    lines.append(
        f"  plan: {len(record.plan)} conversation(s), concurrency {settings.concurrency}, seed {settings.seed}"
        + (f", persona {settings.persona}" if settings.persona else "")
        + (", live tools" if settings.live else ", test-mode tools")
        + (f", {models}" if models else "")
    )
    if record.repeat_of:
        lines.append(f"  repeats run {record.repeat_of}")
    if settings.shard:
        lines.append(f"  shard {settings.shard} of plan {settings.plan_hash} (simulator runs merge joins the shards)")
    if record.replay_of:
        lines.append(f"  replays the recording of run {record.replay_of}")
    return lines


def _why(reasons: list[str], verbose: bool) -> str:
    if verbose:
        return "\n".join(reasons)
    if not reasons:
        return ""
    more = f" (+{len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return brief_text(reasons[0]) + more


def case_rows(results: list[StoredResult], *, verbose: bool = False) -> list[tuple[str, ...]]:
    """One row per conversation, failures and errors first, then user errors, unsure, passes. The "why" column holds
    the first reason whole (the table wraps it) and how many more there are, without the "no judge model"
    advice (:func:`judge_advice` says it once); ``verbose``: every reason as it is stored."""
    order = {"error": 0, "fail": 1, "user_error": 2, "unsure": 3, "pass": 4}
    rows: list[tuple[str, ...]] = []
    for stored in sorted(results, key=lambda r: (order[r.outcome], r.case, r.persona or "", r.repeat)):
        total = len(stored.result.transcript.steps)
        rows.append(
            (
                stored.case,
                stored.persona or "-",
                str(stored.repeat + 1),
                stored.outcome,
                goals_count(stored.result.transcript.steps) if total else "-",
                str(stored.result.transcript.turns),
                f"{stored.duration_s:.1f}",
                _why(stored.result.reasons, verbose),
            )
        )
    return rows


def totals_lines(record: RunRecord) -> list[str]:
    """Correctness, the outcome breakdown, tokens and cost per role, and the duration."""
    totals = record.totals
    if totals is None:
        return ["no results yet"]
    correctness = percent(totals.correctness)
    user_errors = f", {totals.user_error} user error (left out of correctness)" if totals.user_error else ""
    lines = [
        f"Correctness {correctness}: {totals.passed} passed, {totals.failed} failed, {totals.error} error, "
        f"{totals.unsure} unsure{user_errors} of {totals.total} (of {len(record.plan)} planned)",
    ]
    for role in MODEL_ROLES:
        used = totals.usage.get(role)
        if used is None or not used.calls:
            continue
        lines.append(f"  {role}: {usage_text(used)}")
    lines.append(f"Duration {totals.duration_s:.1f} s")
    return lines


def usage_text(used: Usage) -> str:
    """One role's usage in words: its answers, how many came from the request cache (never sent) and their
    would-be cost, the requests sent, the tokens, what was spent and, when the provider's prompt cache served any
    prompt tokens, what it did, e.g. ``14 answers (14 from the request cache, would-be $0.0021), 0 requests sent,
    120 prompt + 30 completion tokens, $0.0000`` or ``..., $0.0031; provider prompt cache: 96 of 120 prompt tokens
    read (80.0%), saved $0.0009``."""
    answers = f"{used.calls} answer{'s' if used.calls != 1 else ''}"
    if used.cached_calls:
        would_be = "unknown" if used.cached_cost is None else f"${used.cached_cost:.4f}"
        answers += f" ({used.cached_calls} from the request cache, would-be {would_be})"
    sent = f"{used.requests} request{'s' if used.requests != 1 else ''} sent"
    tokens = f"{used.prompt_tokens} prompt + {used.completion_tokens} completion tokens"
    cost = "cost unknown" if used.cost is None else f"${used.cost:.4f}"
    prompt_cache = prompt_cache_text(used)
    cached = f"; provider prompt cache: {prompt_cache}" if prompt_cache else ""
    return f"{answers}, {sent}, {tokens}, {cost}{cached}"


def repeat_lines(record: RunRecord) -> list[str]:
    """Pass^k and flakiness per case (from the run summary) when cases ran more than once."""
    lines = []
    cases = record.totals.cases if record.totals is not None else []
    for case in sorted(cases, key=lambda c: (c.case, c.persona or "-", c.suite)):
        stats = case.stats
        if stats.k < 2:
            continue
        low, high = stats.wilson or (0.0, 0.0)
        lines.append(
            f"  {case.case} ({case.persona or '-'}): {stats.passes}/{stats.k} passed, pass^k {stats.pass_hat_k:g}, "
            f"pass@k {stats.pass_at_k:g}, 95% interval {low:.2f}-{high:.2f}: {stats.label}"
        )
    return (["Repeats:", *lines]) if lines else []


def fault_lines(record: RunRecord) -> list[str]:
    """Outcome by injected fault (from the run summary): per tool and fault entry, the conversations it answered a
    call in, and their outcomes."""
    faults = record.totals.faults if record.totals is not None else []
    lines = [
        f"  {fault.tool} — {fault.fault}: {fault.total} conversation{'s' if fault.total != 1 else ''} "
        f"({fault.calls} call{'s' if fault.calls != 1 else ''}): {fault.passed} passed, {fault.failed} failed, "
        f"{fault.error} error, {fault.unsure} unsure"
        + (f", {fault.user_error} user error" if fault.user_error else "")
        + f"; correctness {percent(fault.correctness)}"
        for fault in faults
    ]
    return ["Outcome by injected fault:", *lines] if lines else []


def judge_advice(results: list[StoredResult]) -> str | None:
    """The "no judge model" advice, once for the whole run, when some check was not judged for want of one."""
    return judge_advice_for(sum(1 for stored in results if not_judged(stored.result)))


def judge_advice_for(count: int) -> str | None:
    """The "no judge model" advice for ``count`` conversations with a check not judged for want of one (counted
    in the store: ``RunStore.count_mentioning(run, NO_JUDGE_ADVICE)``); None when there are none."""
    if not count:
        return None
    return (
        f"Not judged in {count} conversation(s): no judge model is configured. Set models.judge in the suite or "
        "pass --judge-model (any litellm model) to judge those checks."
    )
