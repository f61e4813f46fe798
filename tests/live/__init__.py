"""Tests of app/live/."""
