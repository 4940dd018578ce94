"""The Celery app a `scrapeflow worker` runs (`celery -A scrapeflow_dagster.scaleout.celery_app`):
dagster-celery's tasks on an app configured from the same environment as the run side
(`SCRAPEFLOW_CELERY_BROKER`, `SCRAPEFLOW_CELERY_BACKEND`, the visibility timeout)."""

import os

from dagster_celery.make_app import make_app
from dagster_celery.tasks import create_execute_job_task, create_resume_job_task, create_task

from scrapeflow_dagster.scaleout.celery import (
    CELERY_BACKEND_ENV,
    CELERY_BROKER_ENV,
    celery_settings,
    visibility_timeout_seconds,
)

_broker = os.environ.get(CELERY_BROKER_ENV)
if not _broker:
    raise RuntimeError(f"{CELERY_BROKER_ENV} is not set: the worker needs the broker's URL")

app = make_app(
    {
        "broker": _broker,
        "backend": os.environ.get(CELERY_BACKEND_ENV) or _broker,
        "include": [],
        "config_source": celery_settings(visibility_timeout=visibility_timeout_seconds()),
    }
)
execute_plan = create_task(app)
execute_job = create_execute_job_task(app)
resume_job = create_resume_job_task(app)
