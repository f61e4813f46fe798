"""SQLite: connect and migrate, history queries, and the sample rollup."""
