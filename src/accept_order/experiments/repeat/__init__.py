"""`--repeat N` of run, compare, herd, latency and sweep: the variants in interleaved rounds, medians and
ranges, how many rounds agree, and what the machine did meanwhile."""
