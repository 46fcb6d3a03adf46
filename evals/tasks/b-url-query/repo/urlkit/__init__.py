from urlkit.query import (
    add_params,
    build_query,
    join_path,
    normalize_url,
    parse_query,
    remove_params,
    with_query,
)

__all__ = ["add_params", "build_query", "join_path", "normalize_url", "parse_query", "remove_params", "with_query"]
