"""Extraction without code: named CSS/XPath fields (a selector set, `selectors`) taken from each
parsed page (`fields`), kept per task (`store`: the sets of a data folder).

May import: `engine.state`. Never Dagster.
"""

from scrapeflow_dagster.engine.extract.fields import Extraction, extract
from scrapeflow_dagster.engine.extract.selectors import (
    Field,
    SelectorSet,
    SelectorSetError,
    parse_selector_set,
    read_selector_set,
)
from scrapeflow_dagster.engine.extract.store import (
    EXTRACT_PARAM,
    install_selector_set,
    load_selector_set,
    selectors_dir,
)

__all__ = [
    "EXTRACT_PARAM",
    "Extraction",
    "Field",
    "SelectorSet",
    "SelectorSetError",
    "extract",
    "install_selector_set",
    "load_selector_set",
    "parse_selector_set",
    "read_selector_set",
    "selectors_dir",
]
