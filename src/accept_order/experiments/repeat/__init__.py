"""`--repeat N` of any experiment registered in kinds.REPEATED: the variants in interleaved rounds, medians
and ranges, how many rounds agree, and what the machine did meanwhile."""
