"""Tuning kernel knobs: catalogue, presets, plans, apply and revert, journal, policy, effects."""
