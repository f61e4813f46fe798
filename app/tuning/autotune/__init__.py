"""Auto-tune: measure stripe cache and read-ahead on the running sync and keep the best."""
