"""The demo box: a simulated Synology tree with an SHR reshape, for `mdboost demo` and tests."""

from app.simulator.box import Simulator, run_forever

__all__ = ["Simulator", "run_forever"]
