import datetime as dt
from decimal import Decimal as D

import pytest
from conftest import NOW

from cartprice import (
    AmountOffOrder,
    BundlePrice,
    BuyXGetY,
    Cart,
    Catalog,
    Coupon,
    CouponBook,
    CouponError,
    FreeShipping,
    GiftCardLedger,
    PercentOff,
    PricingEngine,
    PricingError,
    Product,
    SpendTiers,
    TaxTable,
)
from cartprice.pricing import cart_from_dict, cart_to_dict


def engine(tax, shipping, **kwargs):
    return PricingEngine(tax=tax, shipping=shipping, clock=lambda: NOW, **kwargs)


def cart_with(*items, **kwargs):
    cart = Cart(**kwargs)
    for product, quantity in items:
        cart.add(product, quantity)
    return cart


def test_cart_lines_merge_and_validate(mug, tea):
    cart = cart_with((mug, 1), (tea, 1))
    cart.add(mug, 2)
    assert [(l.sku, l.quantity) for l in cart.lines] == [("MUG", 3), ("TEA", 1)]
    cart.set_quantity("TEA", 0)
    assert cart.item_count == 3
    with pytest.raises(PricingError):
        cart.add(Product("MUG", "Other mug", "1.00"))
    with pytest.raises(PricingError):
        cart.add(mug, 0)
    with pytest.raises(PricingError):
        cart.set_quantity("NOPE", 1)


def test_plain_cart(tax, shipping, mug, tea):
    receipt = engine(tax, shipping).price(cart_with((mug, 2), (tea, 1)))
    assert receipt.subtotal == D("31.00")
    assert receipt.shipping == D("4.90")
    assert [l.tax for l in receipt.lines] == [D("4.75"), D("0.42")]
    assert receipt.tax_total == D("6.10")
    assert receipt.total == D("42.00")


def test_percent_off_category(tax, shipping, mug, tea):
    promo = PercentOff("kitchen10", "10% off kitchen", 10, categories=["kitchen"])
    receipt = engine(tax, shipping, promotions=[promo]).price(cart_with((mug, 2), (tea, 1)))
    assert receipt.discount_total == D("2.50")
    assert receipt.lines[0].tax == D("4.28")  # 22.50 * 19% = 4.275, rounded half up
    assert receipt.total == D("39.03")


def test_buy_two_get_one_mix_and_match(tax, shipping, tea):
    cheap = Product("TEA2", "Black tea", "4.00", category="food", tax_class="reduced")
    promo = BuyXGetY("3for2", "3 for 2 on food", 2, 1, categories=["food"])
    receipt = engine(tax, shipping, promotions=[promo]).price(cart_with((tea, 2), (cheap, 1)))
    assert receipt.savings_by_source() == {"3for2": D("4.00")}
    receipt = engine(tax, shipping, promotions=[promo]).price(cart_with((tea, 7)))
    assert receipt.discount_total == D("12.00")


def test_bundle_price_splits_saving(tax, shipping, mug, tea):
    promo = BundlePrice("set", "Mug + tea set", ["MUG", "TEA"], "15.00")
    receipt = engine(tax, shipping, promotions=[promo]).price(cart_with((mug, 2), (tea, 1)))
    assert [(a.sku, a.amount) for a in receipt.adjustments] == [("MUG", D("2.36")), ("TEA", D("1.14"))]


def test_order_discount_is_spread_before_tax(tax, shipping, mug, tea):
    promo = AmountOffOrder("five", "5 off", 5, min_subtotal=20)
    receipt = engine(tax, shipping, promotions=[promo]).price(cart_with((mug, 2), (tea, 1)))
    assert [l.net for l in receipt.lines] == [D("20.97"), D("5.03")]
    assert receipt.tax_total == D("5.26")
    assert receipt.total == D("36.16")


def test_exclusive_promotion_only_when_better(tax, shipping, mug, tea):
    stack = [PercentOff("kitchen10", "10% kitchen", 10, categories=["kitchen"]),
             PercentOff("food10", "10% food", 10, categories=["food"])]
    weak = AmountOffOrder("flat2", "2 off", 2, exclusive=True)
    strong = AmountOffOrder("flat5", "5 off", 5, exclusive=True)
    cart = cart_with((mug, 2), (tea, 1))
    assert engine(tax, shipping, promotions=[*stack, weak]).price(cart).savings_by_source() == {
        "kitchen10": D("2.50"), "food10": D("0.60")}
    assert engine(tax, shipping, promotions=[*stack, strong]).price(cart).savings_by_source() == {"flat5": D("5.00")}


def test_discounts_never_exceed_the_line(tax, shipping, tea):
    promos = [PercentOff("half", "half", 50, skus=["TEA"], priority=1), AmountOffOrder("big", "20 off", 20)]
    receipt = engine(tax, shipping, promotions=promos).price(cart_with((tea, 1)))
    assert receipt.discount_total == D("6.00")
    assert receipt.lines[0].net == D("0.00") and receipt.lines[0].tax == D("0.00")


def test_spend_tiers_and_free_shipping(tax, shipping, mug, ebook):
    promos = [SpendTiers("tiers", "Spend more", [(50, 5), (100, 10)]), FreeShipping("ship", "Free shipping", min_subtotal=40)]
    receipt = engine(tax, shipping, promotions=promos).price(cart_with((mug, 4), (ebook, 1)))
    assert receipt.adjustments[0].label == "Spend more (5%)"
    assert receipt.discount_total == D("3.00")  # 5% of 59.99 = 2.9995
    assert receipt.shipping == D("0.00")


def test_free_shipping_threshold_and_weight_bands(tax, shipping, mug, ebook):
    assert engine(tax, shipping).price(cart_with((mug, 8))).shipping == D("0.00")  # 100.00 reaches free_over
    assert engine(tax, shipping).price(cart_with((mug, 6))).shipping == D("9.90")  # 2.4 kg
    assert engine(tax, shipping).price(cart_with((ebook, 1))).shipping == D("0.00")  # nothing to ship
    with pytest.raises(PricingError):
        engine(tax, shipping).price(cart_with((mug, 30), region="JP"))  # 12 kg, JP ships up to 5 kg


def test_coupons(tax, shipping, mug, tea):
    book = CouponBook([
        Coupon("welcome5", AmountOffOrder("c-welcome", "Welcome", 5), first_order_only=True, max_uses=1),
        Coupon("SPRING", PercentOff("c-spring", "Spring", 20), valid_until=dt.datetime(2024, 4, 30)),
        Coupon("BIG", AmountOffOrder("c-big", "Big spender", 10), min_subtotal=D("100")),
    ])
    pricing = engine(tax, shipping, coupons=book)
    cart = cart_with((mug, 2), (tea, 1), first_order=True)
    cart.apply_coupon(" Welcome5 ")
    assert pricing.checkout(cart).discount_total == D("5.00")
    with pytest.raises(CouponError, match="used up"):
        pricing.price(cart)
    for code, reason in [("SPRING", "expired"), ("BIG", "minimum spend of €100.00"), ("NOPE", "unknown")]:
        cart.coupon_codes = [code]
        with pytest.raises(CouponError, match=reason):
            pricing.price(cart)


def test_tier_discount_and_inclusive_tax(shipping, mug):
    tax = TaxTable({("DE", "standard"): 19}, prices_include_tax=True)
    pricing = PricingEngine(tax=tax, shipping=shipping, tier_discounts={"gold": 10}, clock=lambda: NOW)
    receipt = pricing.price(cart_with((mug, 2), customer_tier="gold"))
    assert receipt.discount_total == D("2.50")
    assert receipt.lines[0].tax == D("3.59")  # 22.50 contains 22.50 - 22.50 / 1.19 = 3.5924 tax
    assert receipt.total == D("27.40")  # 22.50 + 4.90 shipping, tax already included


def test_yen_cart_has_no_fractional_yen(tax, shipping):
    teapot = Product("TEAPOT", "Tetsubin", 4990, category="kitchen", weight_kg="1.2")
    matcha = Product("MATCHA", "Matcha", 1280, category="food", tax_class="reduced", weight_kg="0.1")
    promo = PercentOff("k15", "15% off kitchen", 15, categories=["kitchen"])
    receipt = engine(tax, shipping, promotions=[promo]).price(cart_with((teapot, 1), (matcha, 2), currency="JPY", region="JP"))
    assert receipt.discount_total == D("749")
    assert [line.tax for line in receipt.lines] == [D("424"), D("205")]
    assert receipt.total == D("8310")
    assert receipt.to_text().splitlines()[-1].endswith("¥8,310")


def test_receipt_text(tax, shipping, mug):
    promo = PercentOff("kitchen10", "10% off kitchen", 10, categories=["kitchen"])
    text = engine(tax, shipping, promotions=[promo]).price(cart_with((mug, 2))).to_text(width=30)
    assert text.splitlines() == [
        "2 x Mug                 €25.00",
        "  10% off kitchen       -€2.50",
        "-" * 30,
        "Subtotal                €22.50",
        "Shipping                 €4.90",
        "Tax                      €5.21",
        "TOTAL                   €32.61",
    ]


def test_catalog_price_lists_and_saved_carts(tax, shipping):
    catalog = Catalog.from_records([
        {"sku": "MUG", "name": "Mug", "price": "12.50", "category": "kitchen", "weight_kg": "0.4", "prices": {"JPY": 1900}},
        {"sku": "TEA", "name": "Green tea", "price": "6.00", "category": "food", "tax_class": "reduced"},
    ])
    assert [p.sku for p in catalog.search("tea")] == ["TEA"]
    assert catalog.product_for("MUG", "jpy").price == D("1900")
    with pytest.raises(PricingError, match="no JPY price"):
        catalog.price_in("TEA", "JPY")
    cart = Cart("JPY", "JP")
    cart.add(catalog.product_for("MUG", "JPY"), 2)
    cart.apply_coupon("hello")
    restored = cart_from_dict(cart_to_dict(cart), catalog)
    assert cart_to_dict(restored) == cart_to_dict(cart)
    with pytest.raises(PricingError, match="unknown SKUs: GONE"):
        cart_from_dict({"lines": [{"sku": "GONE", "quantity": 1}]}, catalog)


def test_gift_cards_settle_in_order(tax, shipping, mug, tea):
    receipt = engine(tax, shipping).price(cart_with((mug, 2), (tea, 1)))  # 42.00
    ledger = GiftCardLedger()
    ledger.issue("GC-1", "30", "EUR")
    ledger.issue("GC-2", "50", "EUR")
    ledger.issue("GC-OLD", "10", "EUR", expires=dt.date(2024, 1, 1))
    with pytest.raises(PricingError, match="expired"):
        ledger.settle(receipt, ["GC-1", "GC-OLD"], dt.date(2024, 5, 10))
    assert ledger.get("GC-1").balance == D("30.00")
    payments, due = ledger.settle(receipt, ["GC-1", "GC-2"], dt.date(2024, 5, 10))
    assert [(p.reference, p.amount) for p in payments] == [("GC-1", D("30.00")), ("GC-2", D("12.00"))]
    assert due == D("0.00") and ledger.get("GC-2").balance == D("38.00")
