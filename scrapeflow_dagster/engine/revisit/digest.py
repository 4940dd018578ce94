"""A page's change digest: its title and readable text, whitespace collapsed and noise removed.

Markup never counts (the text is what a reader sees, scripts and styles left out), nor does
noise a page shows on every request: the defaults drop dates and clock times in the common
spellings (ISO 8601, HTTP dates, `29 Nov 2026`, `Nov 29, 2026`, `12:34:56`) and view counters
(`1,234 views`), as Heritrix's content digests skip what a regex names. The patterns are a
setting (`change_ignore`): a site's own noise (a random quote, a "served by" line) is added
there, and anything matching them never reads as a change.
"""

import hashlib
import re
from collections.abc import Sequence
from functools import lru_cache

_MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_DAYS = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,?"
# Dates, clock times and counters pages print afresh on every request (see the module).
DEFAULT_NOISE: tuple[str, ...] = (
    rf"\b{_DAYS}\s+\d{{1,2}}\s+{_MONTHS}\s+\d{{4}}",  # Sun, 29 Nov 2026 (HTTP dates)
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?",
    rf"\b\d{{1,2}}\s+{_MONTHS}\s+\d{{4}}",  # 29 Nov 2026
    rf"\b{_MONTHS}\s+\d{{1,2}},?\s+\d{{4}}",  # Nov 29, 2026
    r"\b\d{1,2}:\d{2}(?::\d{2})?(?:\s*[AaPp][Mm])?(?:\s*(?:UTC|GMT|Z))?",  # 12:34:56 GMT
    r"\b\d[\d,]*\s+(?:views|visits|visitors|hits|reads)\b",  # 1,234 views
)


@lru_cache(maxsize=32)
def noise_pattern(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex matching any of `patterns` (None for none), compiled once per set.

    Raises:
        ValueError: naming the pattern that is not a valid regex.
    """
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(
                f"change_ignore pattern {pattern!r} is not a valid regex: {exc}"
            ) from None
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def normalised(text: str, noise: Sequence[str] = DEFAULT_NOISE) -> str:
    """`text` with noise removed and whitespace collapsed: what two versions are compared by."""
    pattern = noise_pattern(tuple(noise))
    if pattern is not None:
        text = pattern.sub(" ", text)
    return " ".join(text.split())


def text_digest(title: str | None, text: str, noise: Sequence[str] = DEFAULT_NOISE) -> str:
    """The change digest of a page with `title` and readable `text` (32 hex digits)."""
    joined = f"{normalised(title or '', noise)}\n{normalised(text, noise)}"
    return hashlib.blake2b(joined.encode(), digest_size=16).hexdigest()
