"""mdboost's tests; PROJECT_ROOT is the checkout they run in."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
