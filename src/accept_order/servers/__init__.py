"""What serves: server kinds as registered types (kinds.py, registry.py), the `Target` interface they make
(target.py), the built-in workers (pool.py, worker.py, modes/), launched real servers (launched/), and
servers found rather than started (attached.py, remote.py)."""
