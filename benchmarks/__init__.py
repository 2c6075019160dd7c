"""Benchmarks of the CTA engine: quality, speed and index scale (``cta bench``).

:mod:`benchmarks.harness` is the entry point; it writes ``benchmarks/results/*.json`` and
``benchmarks/results/SUMMARY.md``. The other scripts of this folder are run on their own.
"""
