"""--kv-cache-dir / --kv-cache-max-gb, shared by the commands that run an engine (serve, fix, eval agent)."""

from __future__ import annotations

import argparse
from pathlib import Path

from deltaserve.cli import default
from deltaserve.engine import EngineConfig


def add_kv_cache_options(group) -> None:
    group.add_argument("--kv-cache-dir", type=Path, default=default(EngineConfig, "kv_cache_dir"),
                       metavar="DIR",
                       help="keep full KV blocks under DIR/kv/<model fingerprint>/ so later runs and "
                            "restarts reuse the prefix cache (default: off)")
    group.add_argument("--kv-cache-max-gb", type=float, default=default(EngineConfig, "kv_cache_max_gb"),
                       metavar="GB",
                       help="size bound of that directory, least recently used blocks go first "
                            "(default: %(default)s)")


def kv_cache_kwargs(args: argparse.Namespace) -> dict:
    """The disk-tier settings for EngineConfig; none when --kv-cache-dir is not given."""
    if args.kv_cache_dir is None:
        return {}
    return {"kv_cache_dir": str(args.kv_cache_dir), "kv_cache_max_gb": args.kv_cache_max_gb}
