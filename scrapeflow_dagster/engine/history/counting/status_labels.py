"""The label `scrapeflow status` counts a step under, from a status file or from DuckDB alike.

A status file says `SUCCESS` or `ERROR <Class>::<message>`; DuckDB keeps the class and the
message apart (the message redacted, `spool_lines.step_line`). The label is built from those
two parts on both sides, so a task counts under the same label whichever of them is read:
`ERROR <Class>::<message>` without credentials and without trailing white space, cut to
`LABEL_CHARS` characters (whole messages: `scrapeflow tasks show KEY`).
"""

from collections.abc import Mapping
from typing import Any

from scrapeflow_dagster.engine.redact import redact
from scrapeflow_dagster.engine.state import schema

LABEL_CHARS = 48
_CUT_TO = LABEL_CHARS - 3  # and "..."

# What Python's `str.rstrip()` removes, for DuckDB's `rtrim` to remove the same.
WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


def cut_label(label: str) -> str:
    """`label` as shown: cut to `LABEL_CHARS` characters, the last three `...`."""
    return label if len(label) <= LABEL_CHARS else label[:_CUT_TO] + "..."


def error_label(error_class: str | None, message: str | None) -> str:
    """The whole label of a failure from its parts (as `schema.error_parts` splits them)."""
    head = f"{schema.ERROR_PREFIX} {error_class}::" if error_class else f"{schema.ERROR_PREFIX} "
    return (head + (message or "")).rstrip(WHITESPACE)


def file_label(status: Mapping[str, Any], executor: str) -> str:
    """The label of `executor`'s last outcome in a status file (one `executor_names` lists)."""
    if status[schema.fields_of(executor).status] == schema.SUCCESS:
        return schema.SUCCESS
    error_class, message = schema.error_parts(status, executor)
    # Redacted as DuckDB's copy is (a file of an older version may hold a credential).
    return cut_label(error_label(error_class, redact(message) if message else message))


def value_label(value: str) -> str:
    """The label of a status string as `status_summary` lists it (`SUCCESS`, `ERROR ...`)."""
    return file_label({schema.fields_of("step").status: value}, "step")


# The label of a `current_state` row, built in SQL as `error_label` builds it, to one character
# past the cut (`finish_label` cuts): grouping whole messages would group per task. `?` is
# `WHITESPACE`. DuckDB's `left` and `length` count code points, as Python does.
LABEL_PREFIX_SQL = f"""
CASE WHEN status = '{schema.SUCCESS}' THEN status
ELSE left(
    rtrim(
        '{schema.ERROR_PREFIX} '
        || CASE WHEN error_class <> '' THEN error_class || '::' ELSE '' END
        || coalesce(message, ''),
        ?
    ),
    {LABEL_CHARS + 1}
) END
"""


def finish_label(prefix: str) -> str:
    """The label shown for a `LABEL_PREFIX_SQL` value."""
    return cut_label(prefix)
