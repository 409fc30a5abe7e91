"""This version of accept-order, as the package says it (`accept_order.__version__`) and as a result file
records it when the package was never installed (run from a source tree)."""

VERSION = "0.2.0"
