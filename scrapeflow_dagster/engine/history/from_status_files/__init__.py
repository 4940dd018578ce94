"""DuckDB made to agree with the status files (the truth): all of them, or those a killed run's
Ledger left unrecorded.

Modules:
    rebuild: `rebuild_from_status_dir`, and a status file's rows (`parse_status_file`) written
        to a spool file and applied where DuckDB disagrees.
    repair: the rows a killed run lost, recorded again from the status files it wrote.

May import: `history.database`, `history.recording`, `history.markers`, `engine.state` (the
status format has its one owner there), `engine.errors`, duckdb.
"""
