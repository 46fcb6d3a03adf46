from .semver import Version, max_satisfying, parse_spec, satisfies

__all__ = ["Version", "max_satisfying", "parse_spec", "satisfies"]
