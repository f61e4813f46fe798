"""Tests of app/tuning/."""
