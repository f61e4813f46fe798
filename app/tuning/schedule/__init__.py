"""Schedules: a preset in a daily window on the box's wall clock."""
