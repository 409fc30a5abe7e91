"""`--repeat N` of run, compare, herd, latency, sweep, burst, ramp and reload: the variants in interleaved
rounds, medians and ranges, how many rounds agree, and what the machine did meanwhile."""
