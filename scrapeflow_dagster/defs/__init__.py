"""The Dagster adapters: partitions, resources, executor assets, sensors and schedules."""
