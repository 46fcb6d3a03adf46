"""deltaserve evals."""
