"""The thundering herd: how many workers one connection wakes, in every mode."""
