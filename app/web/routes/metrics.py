"""GET /metrics: Prometheus's text format, from the sampler's latest tick (never the kernel)."""

from fastapi import APIRouter
from fastapi.responses import Response

from app.web.deps import SettingsDep, SnapshotBuilderDep

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response)
def metrics(snapshot_builder: SnapshotBuilderDep, settings: SettingsDep) -> Response:
    """mdboost's md_* series, and node_exporter's node_md_* unless MDBOOST_METRICS_NODE_COMPAT
    is false; see contrib/prometheus for the scrape, alert and dashboard examples."""
    # prometheus_client (32 modules, ~1.2 MiB of RSS) loads with the first scrape, not at start:
    # a box nobody scrapes never pays for it.
    from app.metrics.exposition import CONTENT_TYPE, render

    body = render(snapshot_builder.snapshot, node_compat=settings.metrics_node_compat)
    return Response(body, media_type=CONTENT_TYPE)
