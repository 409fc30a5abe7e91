"""The load generator's module before 0.3 (loads/generator.py), for older callers of the Python API."""

from .generator import LoadGenerator, LoadResult, driver_warnings, run_load
from .summary import TimedTotals as RequestTotals

__all__ = ["LoadGenerator", "LoadResult", "RequestTotals", "driver_warnings", "run_load"]
