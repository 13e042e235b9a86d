"""The benchmark scripts, each run as `python benchmarks/<name>.py` (see `make bench`)."""
