"""Tests of app/kernel/."""
