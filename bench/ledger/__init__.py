"""The cost ledger's parts (`python -m bench.cost_ledger`): `runs` runs a configuration as a user
does, `trace` counts its file system calls from strace, `sitecustomize` counts inside its Python
processes, `report` turns two sizes into per-task figures, tables and the budget check."""
