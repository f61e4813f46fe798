"""mdboost: watch, forecast and safely speed up Linux md RAID rebuilds and reshapes."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
