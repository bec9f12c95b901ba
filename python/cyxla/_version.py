"""The version of cyxla."""

__version__ = "0.1.0"
