from pager.paginate import Page, page_count, page_window, paginate

__all__ = ["Page", "page_count", "page_window", "paginate"]
