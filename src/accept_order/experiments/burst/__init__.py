"""Seed 004's table: N clients connect at once; the time until every one was served, per server and mode."""
