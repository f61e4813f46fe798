"""The Prometheus export (GET /metrics): the present as the sampler's latest tick left it."""
