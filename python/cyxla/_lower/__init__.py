"""What turns JAX functions into programs: lowering (plain, batched and with host
callbacks) and the key of a lowered program. It imports JAX when imported and sits above the
rest of the package; nothing outside it imports it, but the package's lazy `lower`,
`lower_batched` and `cache_key` and the tools (`_bench`, `_cli`)."""
