"""Notifications (issue 16): events from each tick, an outbox in SQLite, senders per receiver."""
