"""`python -m cyxla bench`'s parts: the programs, the paths a call can take, the interleaved
rounds that time them, and the report (table, JSON, plot)."""
