"""Tests of app/forecast/."""
