from tinyhttp.client import DEFAULT_HEADERS, Client, HTTPError, Response
from tinyhttp.request import Request

__all__ = ["DEFAULT_HEADERS", "Client", "HTTPError", "Request", "Response"]
