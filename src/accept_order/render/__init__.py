"""Widgets every report shares (rich tables, fixed-width text, per-worker columns, the kernel's evidence)
and the pictures' frame (plots.py). Which report or picture a saved result gets, its experiment says
(experiments/documents.py)."""
