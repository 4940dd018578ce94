"""Task tests' helpers: the per-line errors of a task file, by line."""

from scrapeflow_dagster.engine.tasks.intake import LineError


def errors_by_line(errors: list[LineError]) -> dict[int, str]:
    """Each error's message by its line number."""
    return {e.line: e.message for e in errors}
