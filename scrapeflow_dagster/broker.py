"""Which Celery broker (if any) the runs of a Dagster home use: a property of the home, not of
the folder a command runs in.

`scrapeflow home init --postgres URL --celery-broker URL` records the broker in the home
(`<DAGSTER_HOME>/scrapeflow.json`); every run against that home, started from any folder, sends
its steps to that broker, and a run against another home never does. `SCRAPEFLOW_CELERY_BROKER`
in the environment still names a broker (workers, deployments that set it explicitly), but
Celery is refused, naming the home, when the home keeps runs and events where workers on other
machines cannot reach them (SQLite).

Plain file reads, no Dagster: the `scrapeflow` commands decide on an executor before `dagster`
starts. Beside `instance` (the home's dagster.yaml), under every other floor of the Dagster
layer; imports nothing of scrapeflow's.
"""

import json
import os
from pathlib import Path

CELERY_BROKER_ENV = "SCRAPEFLOW_CELERY_BROKER"
HOME_RECORD = "scrapeflow.json"
_BROKER_KEY = "celery_broker"


def missing_extra(extra: str, *modules: str) -> str | None:
    """A message naming the `pip install` to run when a module of the optional backend `extra`
    is not installed, None when all of `modules` are."""
    import importlib.util

    def absent(name: str) -> bool:
        try:
            return importlib.util.find_spec(name) is None
        except ImportError:  # a finder that refuses the module
            return True

    missing = [name for name in modules if absent(name)]
    if not missing:
        return None
    return (
        f"{', '.join(missing)} not installed: the {extra} backend is an extra, "
        f"`pip install 'scrapeflow-dagster[{extra}]'`"
    )


class CeleryHomeError(ValueError):
    """Celery asked for on a Dagster home whose storage workers cannot share."""


def dagster_home() -> Path | None:
    """The Dagster home of this process (`$DAGSTER_HOME`), None when unset."""
    value = os.environ.get("DAGSTER_HOME")
    return Path(value) if value else None


def recorded_broker(home: Path) -> str | None:
    """The broker `home` records, None when it records none (or cannot be read)."""
    try:
        data = json.loads((home / HOME_RECORD).read_text())
    except (OSError, ValueError):
        return None
    broker = data.get(_BROKER_KEY) if isinstance(data, dict) else None
    return broker if isinstance(broker, str) and broker else None


def record_broker(home: Path, broker: str | None) -> Path:
    """Record `broker` in `home` (None: forget it); the file is readable by its owner only, as
    the URL may hold the broker's password. Returns the file."""
    path = home / HOME_RECORD
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    if broker:
        data[_BROKER_KEY] = broker
    else:
        data.pop(_BROKER_KEY, None)
    path.write_text(json.dumps(data, indent=2) + "\n")
    path.chmod(0o600)
    return path


def shared_storage(home: Path) -> bool:
    """Whether `home`'s dagster.yaml keeps runs and events in Postgres (shared by workers)."""
    try:
        text = (home / "dagster.yaml").read_text()
    except OSError:
        return False
    return "postgres" in text.lower()


def configured_broker() -> str | None:
    """The broker runs of this process use: `$SCRAPEFLOW_CELERY_BROKER`, else the one the
    Dagster home records; None for runs on this machine.

    Raises:
        CeleryHomeError: naming the home when a broker is set but the home's runs and events
            live in SQLite: workers elsewhere could not see them. (Without `$DAGSTER_HOME`, as
            in a worker that gets its instance with each step, nothing is checked here.)
    """
    home = dagster_home()
    broker = os.environ.get(CELERY_BROKER_ENV) or (recorded_broker(home) if home else None)
    if not broker:
        return None
    if home is not None and not shared_storage(home):
        raise CeleryHomeError(
            f"{CELERY_BROKER_ENV} names a Celery broker, but the Dagster home {home} keeps "
            "runs and events "
            "in SQLite, which workers on other machines cannot reach: use a Postgres home "
            "(`scrapeflow home init --postgres URL --celery-broker URL`) or unset "
            f"{CELERY_BROKER_ENV} (is it in a .env file of this folder?)"
        )
    return broker
