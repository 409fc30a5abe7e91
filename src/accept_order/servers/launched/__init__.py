"""Real servers the tool launches from a generated config: what they share (base.py), and one module per
server kind, each with its modes, its config and its `ServerKind`."""
