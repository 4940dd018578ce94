"""What the UI's partition health query answers, through Dagster's GraphQL schema in-process."""

import dagster as dg

from scrapeflow_dagster.dagster_cli import DEFINITIONS_MODULE

# The query behind the asset page's partition bar (materialized / failed / in progress).
PARTITION_HEALTH = """
query PartitionHealth($assetKey: AssetKeyInput!) {
  assetNodeOrError(assetKey: $assetKey) {
    ... on AssetNode {
      assetPartitionStatuses {
        ... on DefaultPartitionStatuses {
          materializedPartitions materializingPartitions failedPartitions
        }
      }
    }
  }
}
"""


def ui_partition_health(
    instance: dg.DagsterInstance, asset: str, *, module: str = DEFINITIONS_MODULE
) -> dict[str, set[str]]:
    """The UI's partition health of `asset` in `instance`, over the code location `module`
    (default: the shipped one): materialized, materializing and failed partition keys."""
    from dagster._core.remote_origin import InProcessCodeLocationOrigin
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
    from dagster._core.workspace.context import WorkspaceProcessContext
    from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
    from dagster_graphql.test.utils import execute_dagster_graphql

    origin = InProcessCodeLocationOrigin(LoadableTargetOrigin(module_name=module))
    with WorkspaceProcessContext(instance, InProcessWorkspaceLoadTarget(origin)) as context:
        result = execute_dagster_graphql(
            context.create_request_context(), PARTITION_HEALTH, {"assetKey": {"path": [asset]}}
        )
    assert not result.errors, result.errors
    statuses = result.data["assetNodeOrError"]["assetPartitionStatuses"]
    return {name: set(keys) for name, keys in statuses.items()}
