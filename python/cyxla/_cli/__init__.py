"""The commands of `python -m cyxla` (see `cyxla/__main__.py`), one module each."""
