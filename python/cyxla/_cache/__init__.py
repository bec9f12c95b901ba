"""The disk cache: `store` (where it lives, the entry format, who may write), `keys` (what
decides whether an entry is still right), and the two kinds of entry, `executables`
(compiled by the plugin) and `programs` (lowered, `store_lowered` and `load_lowered`)."""
