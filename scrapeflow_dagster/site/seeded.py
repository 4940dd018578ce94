"""Deterministic hashing from the site's seed: the same seed gives the same links and faults."""

_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def seeded_hash(*values: int) -> int:
    """A 64-bit hash of `values`, the same on every run and platform (unlike `hash`).

    Args:
        values: integers to mix, e.g. a purpose tag, the seed and a page number.

    Returns:
        An integer in [0, 2**64).
    """
    h = 0
    for value in values:
        h = _splitmix64(h ^ (value & _MASK64))
    return h
