"""The atlas: every installed server in each of its modes, measured the same way, in one table."""
