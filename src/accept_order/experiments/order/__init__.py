"""Who serves in order: `run` (one sequential run), `compare` (one per mode) and `serve` (connections by
hand, tallied when it stops)."""
