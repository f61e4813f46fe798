"""The present: the sampler's tick and the per-array view that requests read."""
