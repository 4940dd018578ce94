"""A batch of a test's tasks: `(key, url)` rows in the order added, each key also kept in the
group of what the site will answer it (pages, 404s, captcha pages, ...)."""


class TaskBatch:
    """Rows in order, grouped by the test's own sets (subclasses declare them)."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str]] = []

    def add(self, group: set[str], key: str, url: str) -> None:
        """Add the task `key` for `url` to the rows and to `group`."""
        group.add(key)
        self.rows.append((key, url))

    @property
    def keys(self) -> list[str]:
        """The keys, in the order added."""
        return [key for key, _ in self.rows]

    @property
    def urls(self) -> dict[str, str]:
        """key -> URL."""
        return dict(self.rows)
