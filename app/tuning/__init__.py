"""Tuning kernel knobs: presets, plans, apply and revert, policy, schedules, auto-tune."""
