"""Parse semantic versions and check them against range specs such as ">=1.2,<2"."""

import functools
import operator
import re

_VERSION = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")
_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<)?\s*(\S+)\s*$")
_OPS = {">=": operator.ge, "<=": operator.lt, ">": operator.gt, "<": operator.lt,
        "==": operator.eq, "!=": operator.ne}


@functools.total_ordering
class Version:
    """A semantic version; missing minor/patch parts read as 0 ("1.2" == "1.2.0")."""

    def __init__(self, text):
        match = _VERSION.match(text.strip())
        if not match:
            raise ValueError(f"not a semantic version: {text!r}")
        major, minor, patch, pre = match.groups()
        self.release = (int(major), int(minor or 0), int(patch or 0))
        self.prerelease = tuple(pre.split(".")) if pre else ()

    def _key(self):
        # A release sorts after all of its prereleases; numeric identifiers sort before alphanumeric ones.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.prerelease)
        return self.release, not self.prerelease, pre

    def __eq__(self, other):
        return self._key() == other._key()

    def __lt__(self, other):
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def __str__(self):
        text = ".".join(map(str, self.release))
        return f"{text}-{'.'.join(self.prerelease)}" if self.prerelease else text

    def __repr__(self):
        return f"Version({str(self)!r})"


def parse_spec(spec):
    """Split "a,b" into (operator, Version) clauses; a bare version means "==" ."""
    clauses = []
    for part in spec.split(","):
        match = _CLAUSE.match(part)
        if not match:
            raise ValueError(f"bad version clause {part!r} in {spec!r}")
        clauses.append((_OPS[match.group(1) or "=="], Version(match.group(2))))
    return clauses


def satisfies(version, spec):
    """True when `version` meets every clause of `spec`."""
    candidate = Version(version) if isinstance(version, str) else version
    return all(op(candidate, target) for op, target in parse_spec(spec))


def max_satisfying(versions, spec):
    """The highest of `versions` that satisfies `spec`, or None."""
    matching = [Version(v) for v in versions if satisfies(v, spec)]
    return str(max(matching)) if matching else None
