"""graphkit: graphs and the classic algorithms on them."""

from graphkit.graph import *  # noqa: F401,F403
from graphkit.graph import Graph, GraphError, NegativeCycle, NoPath, NodeNotFound, NotADAG, Path

__all__ = ["Graph", "GraphError", "NegativeCycle", "NoPath", "NodeNotFound", "NotADAG", "Path"]
