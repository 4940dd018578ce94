"""The scrapeflow engine: crash-safe async executors over tasks. Never imports Dagster."""
