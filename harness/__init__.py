"""deltaserve harness."""
