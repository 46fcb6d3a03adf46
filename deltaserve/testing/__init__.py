"""Fixtures for tests and benchmarks, outside the serving path: tiny random-weight models, diff fuzzers."""
