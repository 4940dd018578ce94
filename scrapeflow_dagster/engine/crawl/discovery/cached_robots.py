"""robots.txt at discovery: the copies the runs cached, never fetched (`CachedRobots`)."""

from pathlib import Path

from scrapeflow_dagster.engine.polite.robots import RobotsRules, cached_rules
from scrapeflow_dagster.engine.settings import ScrapeSettings
from scrapeflow_dagster.engine.tasks.keys import LinkIdentity


class CachedRobots:
    """robots.txt as the runs cached it, read once per origin for one discovery."""

    def __init__(self, status_dir: Path, settings: ScrapeSettings) -> None:
        self._status_dir = status_dir
        self._user_agent = settings.user_agent
        self._polite = settings.polite
        self._rules: dict[str, RobotsRules | None] = {}

    def disallows(self, link: LinkIdentity) -> bool:
        """Whether a fresh cached robots.txt disallows `link` (never when none is cached or
        robots.txt is not respected: the run decides then)."""
        if not self._polite.respect_robots_txt:
            return False
        origin = link.origin
        if origin not in self._rules:
            self._rules[origin] = cached_rules(
                self._status_dir, origin, max_age_seconds=self._polite.robots_max_age_seconds
            )
        rules = self._rules[origin]
        return rules is not None and not rules.allows(link.url, self._user_agent)
