"""deltaserve tools."""
