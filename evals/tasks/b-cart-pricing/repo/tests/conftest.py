import datetime as dt

import pytest

from cartprice import Product, ShippingTable, TaxTable

NOW = dt.datetime(2024, 5, 10, 12, 0)


@pytest.fixture
def tax():
    return TaxTable({("DE", "standard"): 19, ("DE", "reduced"): 7, ("JP", "standard"): 10, ("JP", "reduced"): 8})


@pytest.fixture
def shipping():
    return ShippingTable({"DE": [(2, "4.90"), (10, "9.90")], "JP": [(5, 800)]}, free_over={"DE": 100})


@pytest.fixture
def mug():
    return Product("MUG", "Mug", "12.50", category="kitchen", weight_kg="0.4")


@pytest.fixture
def tea():
    return Product("TEA", "Green tea", "6.00", category="food", tax_class="reduced", weight_kg="0.1")


@pytest.fixture
def ebook():
    return Product("EBOOK", "Cookbook (ebook)", "9.99", category="books", tax_class="reduced", shippable=False)
