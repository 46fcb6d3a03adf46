"""deltaserve engine."""
