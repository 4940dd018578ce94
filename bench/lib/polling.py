"""A thread that polls while a measured command runs."""

import threading
from typing import Self


class Poller:
    """A daemon thread running `_run` between `__enter__` and `__exit__` (which stops it via
    `_stop` and joins it)."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        raise NotImplementedError
