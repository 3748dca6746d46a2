"""Reports: pure functions from transcripts and run records to text formats."""

from simulator.reports._reviews import judged_verdict
from simulator.reports.transcript_text import Line, goals, result_lines, transcript_lines

__all__ = ["Line", "goals", "judged_verdict", "result_lines", "transcript_lines"]
