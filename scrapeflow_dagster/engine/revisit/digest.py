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

_MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]{0,6}\.?"
_DAYS = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]{0,6},?"
# Dates, clock times and counters pages print afresh on every request (see the module). Each
# holds an ASCII digit and spans fewer than `_NEAR` characters: they are looked for only near
# digits.
DEFAULT_NOISE: tuple[str, ...] = (
    rf"\b{_DAYS}\s{{1,3}}[0-9]{{1,2}}\s{{1,3}}{_MONTHS}\s{{1,3}}[0-9]{{4}}",  # Sun, 29 Nov 2026
    r"\b[0-9]{4}-[0-9]{2}-[0-9]{2}"  # 2026-11-29, and a time after it: T10:00:00.123+01:00
    r"(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?",
    rf"\b[0-9]{{1,2}}\s{{1,3}}{_MONTHS}\s{{1,3}}[0-9]{{4}}",  # 29 Nov 2026
    rf"\b{_MONTHS}\s{{1,3}}[0-9]{{1,2}},?\s{{1,3}}[0-9]{{4}}",  # Nov 29, 2026
    r"\b[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?(?:\s{0,3}[AaPp][Mm])?(?:\s{0,3}(?:UTC|GMT|Z))?",  # 12:34
    r"\b[0-9][0-9,]{0,20}\s{1,3}(?:views|visits|visitors|hits|reads)\b",  # 1,234 views
)
# Python's regexes cost ~15 ns per character and pattern: 0.8 ms for a 20 KB page's text. The
# defaults need a digit, so they run only over the text within this many characters of one
# (the text as extracted: a date spread over more whitespace than that is not recognised).
_NEAR = 128
# What the digest leaves out: ASCII whitespace (deleting it is ten times cheaper than collapsing
# runs of it, and a change of spacing alone is no change).
_WHITESPACE = b" \t\n\r\x0b\x0c"


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
    """`text` with noise removed and whitespace collapsed: what the lines of two versions are
    compared by (`diff`)."""
    text = " ".join(text.split())
    defaults = tuple(p for p in noise if p in DEFAULT_NOISE)
    others = tuple(p for p in noise if p not in DEFAULT_NOISE)
    near_digits = noise_pattern(defaults)
    if near_digits is not None:
        text = _sub_near_digits(near_digits, text)
    everywhere = noise_pattern(others)
    if everywhere is not None:
        text = everywhere.sub(" ", text)
    return " ".join(text.split())


def _digit_positions(text: str) -> list[int]:
    """Where `text` has an ASCII digit (what the defaults match: `[0-9]`, not other scripts'
    digits), in order. `str.find` per digit scans at C speed; a regex scan of a 20 KB text
    took 0.27 ms, as long as the rest of the digest."""
    positions: list[int] = []
    for digit in "0123456789":
        at = text.find(digit)
        while at >= 0:
            positions.append(at)
            at = text.find(digit, at + 1)
    positions.sort()
    return positions


def _sub_near_digits(pattern: re.Pattern[str], text: str) -> str:
    """`text` with the matches of `pattern` (each holding a digit, shorter than `_NEAR`) cut
    out: only the stretches around digits are searched, each cut at whitespace and collapsed
    first, so that a match reads there as it reads in the whole text collapsed. A stretch
    without a match is kept as it was (whitespace and all)."""
    parts: list[str] = []
    done = 0  # text[:done] is in `parts`
    start = end = -1
    for at in _digit_positions(text):
        lo, hi = max(0, at - _NEAR), min(len(text), at + 1 + _NEAR)
        if start >= 0 and lo <= end:
            end = max(end, hi)
            continue
        if start >= 0:
            done = _flush(pattern, text, parts, done, start, end)
        start, end = lo, hi
    if start >= 0:
        done = _flush(pattern, text, parts, done, start, end)
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def _flush(
    pattern: re.Pattern[str], text: str, parts: list[str], done: int, start: int, end: int
) -> int:
    """Append `text[done:end']` to `parts`, the stretch `start .. end` widened to whitespace
    (`end'`) and searched; return `end'`."""
    while start > done and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    parts.append(text[done:start])
    stretch = text[start:end]
    collapsed = " ".join(stretch.split())
    cut = pattern.sub(" ", collapsed)
    parts.append(stretch if cut == collapsed else cut)
    return end


def without_noise(text: str, noise: Sequence[str] = DEFAULT_NOISE) -> str:
    """`text` with its noise cut out (see the module); its whitespace not collapsed, except
    around what was cut. `" ".join(without_noise(t).split()) == normalised(t)`."""
    if any(p not in DEFAULT_NOISE for p in noise):
        return normalised(text, noise)  # a user's patterns see the whole text, collapsed
    pattern = noise_pattern(tuple(noise))
    return text if pattern is None else _sub_near_digits(pattern, text)


def text_digest(title: str | None, text: str, noise: Sequence[str] = DEFAULT_NOISE) -> str:
    """The change digest of a page with `title` and readable `text` (32 hex digits): of both
    without noise or whitespace."""
    hasher = hashlib.blake2b(digest_size=16)
    for part in (title or "", text):
        hasher.update(without_noise(part, noise).encode().translate(None, _WHITESPACE))
        hasher.update(b"\x00")
    return hasher.hexdigest()


# What a change digest is of: the page's title and whole readable text (the default), or its
# title and main content (`engine.content`: a page's menus, "related" and "most read" boxes
# left out, which on some sites differ on every request; docs/refresh.md has the figures).
DIGEST_BASES = ("text", "main_content")
# A main-content digest is marked, so that a digest of the other basis (kept from before the
# setting changed) is never taken for a change.
_MAIN_CONTENT_MARK = "main:"


def main_content_digest(title: str | None, text: str, noise: Sequence[str] = DEFAULT_NOISE) -> str:
    """The change digest of a page with `title` whose main content is `text`: `text_digest`
    of both, marked as such (`main:` and 32 hex digits)."""
    return _MAIN_CONTENT_MARK + text_digest(title, text, noise)


def digest_basis(digest: str) -> str:
    """What `digest` is of: `main_content` (`main_content_digest`) or `text` (`text_digest`)."""
    return "main_content" if digest.startswith(_MAIN_CONTENT_MARK) else "text"
