"""Tests of app/simulator/."""
