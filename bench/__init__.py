"""Benchmarks: `python -m bench NAME [args]` runs bench/NAME.py's main(argv)."""
