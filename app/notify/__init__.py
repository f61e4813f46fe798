"""Notifications: events from each tick, an outbox in SQLite, senders per receiver."""
