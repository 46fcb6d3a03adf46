from keyset.cursor import InvalidCursor, decode_cursor, encode_cursor
from keyset.paginate import Page, iter_pages, paginate

__all__ = ["InvalidCursor", "Page", "decode_cursor", "encode_cursor", "iter_pages", "paginate"]
