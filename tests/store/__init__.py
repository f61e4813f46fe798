"""Tests of app/store/."""
