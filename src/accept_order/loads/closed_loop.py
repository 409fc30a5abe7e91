"""The load generator's module before 0.3 (loads/generator.py), for older callers of the Python API."""

from ..core.load_summary import TimedTotals as RequestTotals
from .generator import LoadGenerator, LoadResult, driver_warnings, run_load

__all__ = ["LoadGenerator", "LoadResult", "RequestTotals", "driver_warnings", "run_load"]
