"""Command-line interface (``cta``)."""
