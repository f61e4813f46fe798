"""Forecasting when a run finishes: the model, the per-array and pool service, and replays."""
