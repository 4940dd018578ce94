"""How extracted text is scored against marked pages.

Segments (the dataset's README, as trafilatura's evaluation scores them): per page, a `with`
segment found in the text is a true positive, one missing a false negative; a `without` segment
found is a false positive. Precision, recall and F1 are over all pages' counts pooled. Both sides
have their white space collapsed first, so that a segment spanning a line break an extractor put
in (or took out) still counts: no extractor is judged on its line breaks.

Shingles (the issue's metric, that of the public article-extraction benchmarks): the text and
the hand-made main text cut into lower-cased word 4-grams; per page, precision and recall of
the text's shingles (as multisets) against the main text's; F1 of each page, then their mean.
Only pages whose whole main text is known (our own set) have it.
"""

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


def squeeze(text: str) -> str:
    """`text` with every run of white space one space (non-breaking ones too)."""
    return _SPACE.sub(" ", text).strip()


@dataclass
class Counts:
    """Segment counts pooled over pages."""

    true_positives: int = 0
    false_negatives: int = 0
    false_positives: int = 0

    def add(self, text: str, with_: Sequence[str], without: Sequence[str]) -> None:
        """Count one page's extracted `text` against its segments."""
        flat = squeeze(text)
        for segment in with_:
            if squeeze(segment) in flat:
                self.true_positives += 1
            else:
                self.false_negatives += 1
        self.false_positives += sum(squeeze(segment) in flat for segment in without)

    @property
    def precision(self) -> float:
        found = self.true_positives + self.false_positives
        return self.true_positives / found if found else 0.0

    @property
    def recall(self) -> float:
        wanted = self.true_positives + self.false_negatives
        return self.true_positives / wanted if wanted else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


def _shingles(text: str) -> Counter[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    if len(words) < 4:  # a short text is one shingle of what it has
        return Counter([tuple(words)]) if words else Counter()
    return Counter(tuple(words[i : i + 4]) for i in range(len(words) - 3))


def shingle_scores(text: str, main: str) -> tuple[float, float, float]:
    """Precision, recall and F1 of `text`'s word 4-grams against the main text `main`'s."""
    got, wanted = _shingles(text), _shingles(main)
    if not got and not wanted:
        return 1.0, 1.0, 1.0
    common = sum((got & wanted).values())
    precision = common / sum(got.values()) if got else 0.0
    recall = common / sum(wanted.values()) if wanted else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1
