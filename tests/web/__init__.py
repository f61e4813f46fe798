"""Tests of app/web/."""
