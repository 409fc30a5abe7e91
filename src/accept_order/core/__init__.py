"""The bottom floor: what every other part of accept-order stands on, importing nothing of the package above
it (tests/test_floors.py holds it to that).

The frozen specs of a run (spec.py), what is measured (measures.py, histogram.py), errors, exit statuses and
warnings, the base types of a server kind and its modes (kinds.py, without the registry: that is
servers/registry.py, a floor up), and the plumbing every floor shares: processes and signals, CPUs, the
private network namespace, text made inert for a terminal.
"""
