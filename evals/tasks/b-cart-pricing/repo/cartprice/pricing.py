"""Price a shopping cart: line items, automatic promotions, coupons, loyalty tiers, shipping and tax.

The engine works in a fixed order, so results are predictable and explainable on the receipt:

1. line subtotals (unit price x quantity);
2. automatic promotions, by priority. Stackable promotions apply one after another, each seeing the
   line amounts left by the ones before. An *exclusive* promotion applies alone; it is chosen only
   when it saves the customer more than all stackable promotions together;
3. coupon promotions, validated against the coupon book (dates, usage limits, minimum spend, region);
4. the loyalty-tier discount, a percentage of what is left of the merchandise;
5. order-level discounts are spread over the lines in proportion to their remaining amounts
   (so tax is computed on what the customer actually pays for each line);
6. shipping, from the region's weight bands, unless a promotion grants free shipping or the
   merchandise total passes the region's free-shipping threshold;
7. tax per line (by the product's tax class) and on shipping (standard rate), either added on top
   or, for tax-inclusive price lists, extracted from the prices.

Every amount that appears on the receipt is rounded to the currency's minor unit; line discounts
are capped at what is left of the line, so a line can never go negative.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from cartprice.money import ZERO, MoneyError, allocate, format_money, percent_of, quantize, to_decimal


class PricingError(ValueError):
    """The cart cannot be priced (unknown region, overweight parcel, inconsistent products)."""


class CouponError(PricingError):
    """A coupon code cannot be used; `reason` says why in words fit for the customer."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(f"coupon {code!r}: {reason}")
        self.code = code
        self.reason = reason


# --- catalogue and cart --------------------------------------------------------------------------


@dataclass(frozen=True)
class Product:
    sku: str
    name: str
    price: Decimal
    category: str = "general"
    tax_class: str = "standard"
    weight_kg: Decimal = ZERO
    shippable: bool = True

    def __post_init__(self) -> None:
        try:
            price = to_decimal(self.price)
            weight = to_decimal(self.weight_kg)
        except MoneyError as exc:
            raise PricingError(f"{self.sku}: {exc}") from None
        if price < 0 or weight < 0:
            raise PricingError(f"{self.sku}: price and weight must not be negative")
        object.__setattr__(self, "price", price)
        object.__setattr__(self, "weight_kg", weight)


@dataclass
class LineItem:
    product: Product
    quantity: int

    @property
    def sku(self) -> str:
        return self.product.sku

    @property
    def subtotal(self) -> Decimal:
        return self.product.price * self.quantity


class Cart:
    """The customer's selection. Lines are kept in the order they were first added."""

    MAX_QUANTITY = 999

    def __init__(self, currency: str = "EUR", region: str = "DE", *, customer_tier: str | None = None,
                 first_order: bool = False) -> None:
        self.currency = currency.upper()
        self.region = region.upper()
        self.customer_tier = customer_tier
        self.first_order = first_order
        self._lines: dict[str, LineItem] = {}
        self.coupon_codes: list[str] = []

    def add(self, product: Product, quantity: int = 1) -> LineItem:
        """Add units of `product`; adding a SKU already in the cart raises its quantity."""
        self._check_quantity(quantity, allow_zero=False)
        line = self._lines.get(product.sku)
        if line is None:
            line = self._lines[product.sku] = LineItem(product, 0)
        elif line.product != product:
            raise PricingError(f"{product.sku}: a different product with this SKU is already in the cart")
        if line.quantity + quantity > self.MAX_QUANTITY:
            raise PricingError(f"{product.sku}: at most {self.MAX_QUANTITY} units per line")
        line.quantity += quantity
        return line

    def set_quantity(self, sku: str, quantity: int) -> None:
        """Change a line's quantity; 0 removes the line."""
        self._check_quantity(quantity, allow_zero=True)
        if quantity > self.MAX_QUANTITY:
            raise PricingError(f"{sku}: at most {self.MAX_QUANTITY} units per line")
        line = self.line(sku)
        if quantity == 0:
            del self._lines[sku]
        else:
            line.quantity = quantity

    def remove(self, sku: str) -> None:
        self.line(sku)
        del self._lines[sku]

    def line(self, sku: str) -> LineItem:
        try:
            return self._lines[sku]
        except KeyError:
            raise PricingError(f"{sku!r} is not in the cart") from None

    @staticmethod
    def _check_quantity(quantity: int, allow_zero: bool) -> None:
        if isinstance(quantity, bool) or not isinstance(quantity, int):
            raise PricingError(f"quantity must be a whole number, got {quantity!r}")
        if quantity < 0 or (quantity == 0 and not allow_zero):
            raise PricingError(f"quantity must be positive, got {quantity}")

    @property
    def lines(self) -> list[LineItem]:
        return list(self._lines.values())

    @property
    def is_empty(self) -> bool:
        return not self._lines

    @property
    def item_count(self) -> int:
        return sum(line.quantity for line in self._lines.values())

    @property
    def subtotal(self) -> Decimal:
        return sum((line.subtotal for line in self._lines.values()), ZERO)

    @property
    def shipping_weight(self) -> Decimal:
        return sum((l.product.weight_kg * l.quantity for l in self._lines.values() if l.product.shippable), ZERO)

    @property
    def needs_shipping(self) -> bool:
        return any(line.product.shippable for line in self._lines.values())

    def apply_coupon(self, code: str) -> None:
        normalized = code.strip().upper()
        if not normalized:
            raise CouponError(code, "empty code")
        if normalized not in self.coupon_codes:
            self.coupon_codes.append(normalized)

    def remove_coupon(self, code: str) -> None:
        normalized = code.strip().upper()
        if normalized in self.coupon_codes:
            self.coupon_codes.remove(normalized)


# --- catalogue -----------------------------------------------------------------------------------


class Catalog:
    """Products by SKU, with optional price lists in other currencies.

    A product's own `price` is in the catalogue's base currency; `set_price` adds the price a
    product sells for in another currency (set by merchandising, not converted at a daily rate).
    """

    def __init__(self, products: Iterable[Product] = (), *, base_currency: str = "EUR") -> None:
        self.base_currency = base_currency.upper()
        self._products: dict[str, Product] = {}
        self._prices: dict[tuple[str, str], Decimal] = {}
        for product in products:
            self.add(product)

    def add(self, product: Product) -> None:
        if product.sku in self._products:
            raise PricingError(f"duplicate SKU {product.sku!r}")
        self._products[product.sku] = product

    def __contains__(self, sku: object) -> bool:
        return sku in self._products

    def __len__(self) -> int:
        return len(self._products)

    def get(self, sku: str) -> Product:
        try:
            return self._products[sku]
        except KeyError:
            raise PricingError(f"unknown SKU {sku!r}") from None

    def search(self, text: str) -> list[Product]:
        """Products whose name, SKU or category contains `text` (case-insensitive), by name."""
        needle = text.strip().lower()
        found = [
            p for p in self._products.values()
            if needle in p.name.lower() or needle in p.sku.lower() or needle == p.category.lower()
        ]
        return sorted(found, key=lambda p: p.name.lower())

    def by_category(self, category: str) -> list[Product]:
        return [p for p in self._products.values() if p.category == category]

    def set_price(self, sku: str, currency: str, price: Decimal | int | str) -> None:
        self.get(sku)
        amount = to_decimal(price)
        if amount < 0:
            raise PricingError(f"{sku}: price must not be negative")
        self._prices[(sku, currency.upper())] = amount

    def price_in(self, sku: str, currency: str) -> Decimal:
        currency = currency.upper()
        if currency == self.base_currency:
            return self.get(sku).price
        try:
            return self._prices[(sku, currency)]
        except KeyError:
            raise PricingError(f"{sku} has no {currency} price") from None

    def product_for(self, sku: str, currency: str) -> Product:
        """The product priced in `currency`, ready to put into a cart of that currency."""
        product = self.get(sku)
        price = self.price_in(sku, currency)
        return product if price == product.price else replace(product, price=price)

    @classmethod
    def from_records(cls, records: Iterable[dict[str, Any]], *, base_currency: str = "EUR") -> Catalog:
        """Build a catalogue from plain dicts (e.g. rows of a JSON feed); `prices` maps currency -> price."""
        catalog = cls(base_currency=base_currency)
        for index, record in enumerate(records):
            missing = {"sku", "name", "price"} - record.keys()
            if missing:
                raise PricingError(f"record {index}: missing {sorted(missing)}")
            fields = {k: record[k] for k in ("category", "tax_class", "weight_kg", "shippable") if k in record}
            catalog.add(Product(str(record["sku"]), str(record["name"]), record["price"], **fields))
            for currency, price in record.get("prices", {}).items():
                catalog.set_price(str(record["sku"]), currency, price)
        return catalog


def cart_to_dict(cart: Cart) -> dict[str, Any]:
    """A JSON-ready snapshot of `cart` (SKUs and quantities, not prices: prices are looked up again on load)."""
    return {
        "currency": cart.currency,
        "region": cart.region,
        "customer_tier": cart.customer_tier,
        "first_order": cart.first_order,
        "lines": [{"sku": line.sku, "quantity": line.quantity} for line in cart.lines],
        "coupons": list(cart.coupon_codes),
    }


def cart_from_dict(data: dict[str, Any], catalog: Catalog) -> Cart:
    """Rebuild a saved cart with current catalogue prices; every unknown SKU is reported at once."""
    cart = Cart(data.get("currency", catalog.base_currency), data.get("region", "DE"),
                customer_tier=data.get("customer_tier"), first_order=bool(data.get("first_order", False)))
    unknown = [line["sku"] for line in data.get("lines", []) if line["sku"] not in catalog]
    if unknown:
        raise PricingError(f"saved cart refers to unknown SKUs: {', '.join(unknown)}")
    for line in data.get("lines", []):
        cart.add(catalog.product_for(line["sku"], cart.currency), int(line["quantity"]))
    for code in data.get("coupons", []):
        cart.apply_coupon(code)
    return cart


# --- pricing context and promotions ----------------------------------------------------------------


@dataclass(frozen=True)
class Adjustment:
    """Money taken off: on one line (`sku` set) or on the whole order (`sku` None)."""

    source: str
    label: str
    amount: Decimal
    sku: str | None = None


class PricingContext:
    """The state promotions work on: line amounts left after earlier discounts."""

    def __init__(self, cart: Cart, now: dt.datetime) -> None:
        self.cart = cart
        self.currency = cart.currency
        self.now = now
        self.line_discounts: dict[str, Decimal] = {line.sku: ZERO for line in cart.lines}
        self.order_discounts = ZERO
        self.adjustments: list[Adjustment] = []
        self.free_shipping = False

    def round(self, amount: Decimal) -> Decimal:
        return quantize(amount)

    def remaining(self, sku: str) -> Decimal:
        line = self.cart.line(sku)
        return self.round(line.subtotal) - self.line_discounts[sku]

    @property
    def merchandise_total(self) -> Decimal:
        """What is left of the merchandise after all discounts so far."""
        return sum((self.remaining(line.sku) for line in self.cart.lines), ZERO) - self.order_discounts

    def matching_lines(self, skus: frozenset[str] | None, categories: frozenset[str] | None) -> list[LineItem]:
        """Lines selected by SKU or category; with neither given, every line."""
        if skus is None and categories is None:
            return self.cart.lines
        return [
            line for line in self.cart.lines
            if (skus is not None and line.sku in skus) or (categories is not None and line.product.category in categories)
        ]

    def add(self, adjustment: Adjustment) -> Adjustment | None:
        """Record `adjustment`, capped so no line and no order total goes below zero."""
        amount = self.round(adjustment.amount)
        if adjustment.sku is not None:
            amount = min(amount, self.remaining(adjustment.sku))
        else:
            amount = min(amount, self.merchandise_total)
        if amount <= 0:
            return None
        capped = Adjustment(adjustment.source, adjustment.label, amount, adjustment.sku)
        if capped.sku is not None:
            self.line_discounts[capped.sku] += amount
        else:
            self.order_discounts += amount
        self.adjustments.append(capped)
        return capped

    @property
    def total_discount(self) -> Decimal:
        return sum((a.amount for a in self.adjustments), ZERO)


def _frozen(values: Iterable[str] | None) -> frozenset[str] | None:
    return None if values is None else frozenset(values)


class Promotion:
    """Base class. Subclasses implement `compute`, returning uncapped adjustments."""

    def __init__(self, promo_id: str, label: str, *, priority: int = 100, exclusive: bool = False) -> None:
        self.id = promo_id
        self.label = label
        self.priority = priority
        self.exclusive = exclusive

    def compute(self, ctx: PricingContext) -> list[Adjustment]:
        raise NotImplementedError

    def grants_free_shipping(self, ctx: PricingContext) -> bool:
        return False

    def apply(self, ctx: PricingContext) -> list[Adjustment]:
        """Compute and record this promotion's adjustments on `ctx`; returns those recorded."""
        applied = [ctx.add(adjustment) for adjustment in self.compute(ctx)]
        if self.grants_free_shipping(ctx):
            ctx.free_shipping = True
        return [a for a in applied if a is not None]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.id!r})"


class PercentOff(Promotion):
    """`percent` off matching lines that have at least `min_quantity` units."""

    def __init__(self, promo_id: str, label: str, percent: Decimal | int | str, *, skus: Iterable[str] | None = None,
                 categories: Iterable[str] | None = None, min_quantity: int = 1, **kwargs) -> None:
        super().__init__(promo_id, label, **kwargs)
        self.percent = to_decimal(percent)
        if not 0 < self.percent <= 100:
            raise PricingError(f"{promo_id}: percent must be in (0, 100]")
        self.skus = _frozen(skus)
        self.categories = _frozen(categories)
        self.min_quantity = min_quantity

    def compute(self, ctx: PricingContext) -> list[Adjustment]:
        return [
            Adjustment(self.id, self.label, percent_of(ctx.remaining(line.sku), self.percent), line.sku)
            for line in ctx.matching_lines(self.skus, self.categories)
            if line.quantity >= self.min_quantity
        ]


class AmountOffOrder(Promotion):
    """A fixed amount off the order once the merchandise total reaches `min_subtotal`."""

    def __init__(self, promo_id: str, label: str, amount: Decimal | int | str, *,
                 min_subtotal: Decimal | int | str = 0, **kwargs) -> None:
        super().__init__(promo_id, label, **kwargs)
        self.amount = to_decimal(amount)
        self.min_subtotal = to_decimal(min_subtotal)

    def compute(self, ctx: PricingContext) -> list[Adjustment]:
        if ctx.merchandise_total < self.min_subtotal:
            return []
        return [Adjustment(self.id, self.label, self.amount)]


class BuyXGetY(Promotion):
    """Buy `buy` matching units, get `get` more at `percent` off (100 = free); the cheapest units are discounted.

    Units from different matching lines are pooled ("mix and match"): all units are sorted by price,
    most expensive first, and grouped in sets of buy+get; the last `get` units of each full set are
    the discounted ones.
    """

    def __init__(self, promo_id: str, label: str, buy: int, get: int, *, skus: Iterable[str] | None = None,
                 categories: Iterable[str] | None = None, percent: Decimal | int | str = 100, **kwargs) -> None:
        super().__init__(promo_id, label, **kwargs)
        if buy < 1 or get < 1:
            raise PricingError(f"{promo_id}: buy and get must be at least 1")
        self.buy, self.get = buy, get
        self.skus = _frozen(skus)
        self.categories = _frozen(categories)
        self.percent = to_decimal(percent)

    def compute(self, ctx: PricingContext) -> list[Adjustment]:
        units: list[tuple[Decimal, str]] = []
        for line in ctx.matching_lines(self.skus, self.categories):
            unit_price = ctx.remaining(line.sku) / line.quantity
            units.extend((unit_price, line.sku) for _ in range(line.quantity))
        units.sort(key=lambda unit: unit[0], reverse=True)
        group = self.buy + self.get
        discount: dict[str, Decimal] = {}
        for start in range(0, len(units) - group + 1, group):
            for price, sku in units[start + self.buy:start + group]:
                discount[sku] = discount.get(sku, ZERO) + percent_of(price, self.percent)
        return [Adjustment(self.id, self.label, amount, sku) for sku, amount in discount.items()]


class BundlePrice(Promotion):
    """Every complete set of `skus` (one unit each) costs `price` together.

    The saving of each set is split over its SKUs in proportion to their unit prices.
    """

    def __init__(self, promo_id: str, label: str, skus: Iterable[str], price: Decimal | int | str, **kwargs) -> None:
        super().__init__(promo_id, label, **kwargs)
        self.bundle = tuple(dict.fromkeys(skus))
        if len(self.bundle) < 2:
            raise PricingError(f"{promo_id}: a bundle needs at least two SKUs")
        self.price = to_decimal(price)

    def compute(self, ctx: PricingContext) -> list[Adjustment]:
        lines = {line.sku: line for line in ctx.cart.lines}
        if not all(sku in lines for sku in self.bundle):
            return []
        sets = min(lines[sku].quantity for sku in self.bundle)
        unit_prices = [ctx.remaining(sku) / lines[sku].quantity for sku in self.bundle]
        saving_per_set = sum(unit_prices, ZERO) - self.price
        if saving_per_set <= 0:
            return []
        shares = allocate(ctx.round(saving_per_set * sets), unit_prices, ctx.currency)
        return [Adjustment(self.id, self.label, share, sku) for sku, share in zip(self.bundle, shares) if share > 0]


class SpendTiers(Promotion):
    """A percentage off the order that grows with spend: [(50, 5), (100, 10)] = 5% from 50, 10% from 100."""

    def __init__(self, promo_id: str, label: str, tiers: Iterable[tuple[Decimal | int | str, Decimal | int | str]],
                 **kwargs) -> None:
        super().__init__(promo_id, label, **kwargs)
        self.tiers = sorted((to_decimal(threshold), to_decimal(percent)) for threshold, percent in tiers)
        if not self.tiers:
            raise PricingError(f"{promo_id}: at least one tier is needed")

    def compute(self, ctx: PricingContext) -> list[Adjustment]:
        total = ctx.merchandise_total
        reached = [percent for threshold, percent in self.tiers if total >= threshold]
        if not reached:
            return []
        percent = reached[-1]
        return [Adjustment(self.id, f"{self.label} ({percent}%)", percent_of(total, percent))]


class FreeShipping(Promotion):
    """Free shipping from `min_subtotal` on, optionally only for some regions."""

    def __init__(self, promo_id: str, label: str, *, min_subtotal: Decimal | int | str = 0,
                 regions: Iterable[str] | None = None, **kwargs) -> None:
        super().__init__(promo_id, label, **kwargs)
        self.min_subtotal = to_decimal(min_subtotal)
        self.regions = None if regions is None else frozenset(r.upper() for r in regions)

    def compute(self, ctx: PricingContext) -> list[Adjustment]:
        return []

    def grants_free_shipping(self, ctx: PricingContext) -> bool:
        in_region = self.regions is None or ctx.cart.region in self.regions
        return in_region and ctx.merchandise_total >= self.min_subtotal


# --- coupons -------------------------------------------------------------------------------------


@dataclass
class Coupon:
    code: str
    promotion: Promotion
    valid_from: dt.datetime | None = None
    valid_until: dt.datetime | None = None
    max_uses: int | None = None
    uses: int = 0
    min_subtotal: Decimal = ZERO
    first_order_only: bool = False
    regions: frozenset[str] | None = None

    def __post_init__(self) -> None:
        self.code = self.code.strip().upper()
        self.min_subtotal = to_decimal(self.min_subtotal)


class CouponBook:
    """Known coupon codes and how often each has been redeemed."""

    def __init__(self, coupons: Iterable[Coupon] = ()) -> None:
        self._coupons: dict[str, Coupon] = {}
        for coupon in coupons:
            self.add(coupon)

    def add(self, coupon: Coupon) -> None:
        if coupon.code in self._coupons:
            raise PricingError(f"duplicate coupon code {coupon.code!r}")
        self._coupons[coupon.code] = coupon

    def get(self, code: str) -> Coupon:
        try:
            return self._coupons[code.strip().upper()]
        except KeyError:
            raise CouponError(code, "unknown code") from None

    def check(self, code: str, ctx: PricingContext) -> Coupon:
        """The coupon for `code` if `ctx`'s cart may use it now; CouponError otherwise."""
        coupon = self.get(code)
        if coupon.valid_from is not None and ctx.now < coupon.valid_from:
            raise CouponError(code, f"not valid before {coupon.valid_from:%Y-%m-%d}")
        if coupon.valid_until is not None and ctx.now > coupon.valid_until:
            raise CouponError(code, f"expired on {coupon.valid_until:%Y-%m-%d}")
        if coupon.max_uses is not None and coupon.uses >= coupon.max_uses:
            raise CouponError(code, "has been used up")
        if coupon.first_order_only and not ctx.cart.first_order:
            raise CouponError(code, "only valid on a first order")
        if coupon.regions is not None and ctx.cart.region not in coupon.regions:
            raise CouponError(code, f"not valid in {ctx.cart.region}")
        if ctx.merchandise_total < coupon.min_subtotal:
            needed = format_money(coupon.min_subtotal, ctx.currency)
            raise CouponError(code, f"needs a minimum spend of {needed}")
        return coupon

    def redeem(self, codes: Iterable[str]) -> None:
        for code in codes:
            self.get(code).uses += 1


# --- tax and shipping ----------------------------------------------------------------------------


class TaxTable:
    """Tax rates in percent by (region, tax class). A class missing for a region falls back to 'standard'."""

    def __init__(self, rates: dict[tuple[str, str], Decimal | int | str], *, prices_include_tax: bool = False) -> None:
        self.rates = {(region.upper(), tax_class): to_decimal(rate) for (region, tax_class), rate in rates.items()}
        self.prices_include_tax = prices_include_tax

    def rate(self, region: str, tax_class: str = "standard") -> Decimal:
        region = region.upper()
        if (region, tax_class) in self.rates:
            return self.rates[(region, tax_class)]
        if (region, "standard") in self.rates:
            return self.rates[(region, "standard")]
        raise PricingError(f"no tax rates for region {region!r}")

    def tax_on(self, amount: Decimal, rate: Decimal) -> Decimal:
        """The tax contained in (inclusive prices) or due on (exclusive prices) `amount`; unrounded."""
        if self.prices_include_tax:
            return amount - amount / (1 + rate / 100)
        return amount * rate / 100


class ShippingTable:
    """Weight bands per region: [(max_kg, price), ...] sorted by weight; plus optional free-shipping thresholds."""

    def __init__(self, bands: dict[str, list[tuple[Decimal | int | str, Decimal | int | str]]],
                 free_over: dict[str, Decimal | int | str] | None = None) -> None:
        self.bands = {
            region.upper(): sorted((to_decimal(kg), to_decimal(price)) for kg, price in region_bands)
            for region, region_bands in bands.items()
        }
        self.free_over = {region.upper(): to_decimal(v) for region, v in (free_over or {}).items()}

    def cost(self, region: str, weight_kg: Decimal, merchandise_total: Decimal) -> Decimal:
        region = region.upper()
        if region not in self.bands:
            raise PricingError(f"we do not ship to {region!r}")
        threshold = self.free_over.get(region)
        if threshold is not None and merchandise_total >= threshold:
            return ZERO
        for max_kg, price in self.bands[region]:
            if weight_kg <= max_kg:
                return price
        raise PricingError(f"parcel of {weight_kg} kg is too heavy for {region}")


# --- receipt -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReceiptLine:
    sku: str
    name: str
    quantity: int
    unit_price: Decimal
    subtotal: Decimal
    discount: Decimal
    tax: Decimal

    @property
    def net(self) -> Decimal:
        return self.subtotal - self.discount


@dataclass
class Receipt:
    currency: str
    lines: list[ReceiptLine]
    adjustments: list[Adjustment]
    subtotal: Decimal
    discount_total: Decimal
    shipping: Decimal
    shipping_tax: Decimal
    tax_total: Decimal
    total: Decimal
    coupons: list[str] = field(default_factory=list)
    prices_include_tax: bool = False

    def savings_by_source(self) -> dict[str, Decimal]:
        out: dict[str, Decimal] = {}
        for adjustment in self.adjustments:
            out[adjustment.source] = out.get(adjustment.source, ZERO) + adjustment.amount
        return out

    def to_text(self, width: int = 48) -> str:
        """A plain-text receipt, amounts right-aligned."""
        money = lambda amount: format_money(amount, self.currency)  # noqa: E731

        def row(label: str, amount: Decimal) -> str:
            text = money(amount)
            return f"{label[: width - len(text) - 1]:<{width - len(text)}}{text}"

        out = []
        for line in self.lines:
            out.append(row(f"{line.quantity} x {line.name}", line.subtotal))
        for adjustment in self.adjustments:
            out.append(row(f"  {adjustment.label}", -adjustment.amount))
        out.append("-" * width)
        out.append(row("Subtotal", self.subtotal - self.discount_total))
        out.append(row("Shipping", self.shipping))
        out.append(row("Tax (included)" if self.prices_include_tax else "Tax", self.tax_total))
        out.append(row("TOTAL", self.total))
        return "\n".join(out)


# --- the engine ----------------------------------------------------------------------------------


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


class PricingEngine:
    def __init__(
        self,
        *,
        tax: TaxTable,
        shipping: ShippingTable | None = None,
        promotions: Iterable[Promotion] = (),
        coupons: CouponBook | None = None,
        tier_discounts: dict[str, Decimal | int | str] | None = None,
        clock: Callable[[], dt.datetime] = _utcnow,
    ) -> None:
        self.tax = tax
        self.shipping = shipping
        self.promotions = sorted(promotions, key=lambda p: (p.priority, p.id))
        self.coupons = coupons or CouponBook()
        self.tier_discounts = {tier: to_decimal(p) for tier, p in (tier_discounts or {}).items()}
        self.clock = clock

    def _automatic_promotions(self, cart: Cart, now: dt.datetime) -> PricingContext:
        """Apply stackable promotions in order, then see whether one exclusive promotion beats them."""
        ctx = PricingContext(cart, now)
        for promotion in self.promotions:
            if not promotion.exclusive:
                promotion.apply(ctx)
        for promotion in self.promotions:
            if promotion.exclusive:
                alone = PricingContext(cart, now)
                promotion.apply(alone)
                if alone.total_discount > ctx.total_discount:
                    ctx = alone
        return ctx

    def _apply_coupons(self, ctx: PricingContext) -> list[str]:
        """Validate and apply the cart's coupons; an exclusive coupon cannot be combined with another."""
        coupons = [self.coupons.check(code, ctx) for code in ctx.cart.coupon_codes]
        if len(coupons) > 1 and any(c.promotion.exclusive for c in coupons):
            exclusive = next(c for c in coupons if c.promotion.exclusive)
            raise CouponError(exclusive.code, "cannot be combined with other coupons")
        for coupon in coupons:
            coupon.promotion.apply(ctx)
        return [coupon.code for coupon in coupons]

    def _apply_tier(self, ctx: PricingContext) -> None:
        tier = ctx.cart.customer_tier
        percent = self.tier_discounts.get(tier) if tier else None
        if percent:
            ctx.add(Adjustment(f"tier:{tier}", f"{tier.title()} member {percent}%", percent_of(ctx.merchandise_total, percent)))

    def _line_nets(self, ctx: PricingContext) -> dict[str, Decimal]:
        """What each line finally costs: its remaining amount minus its share of order-level discounts."""
        lines = ctx.cart.lines
        remaining = [ctx.remaining(line.sku) for line in lines]
        shares = allocate(ctx.order_discounts, remaining, ctx.currency)
        return {line.sku: rem - share for line, rem, share in zip(lines, remaining, shares)}

    def _shipping_cost(self, ctx: PricingContext) -> Decimal:
        if self.shipping is None or not ctx.cart.needs_shipping or ctx.free_shipping:
            return ZERO
        return self.shipping.cost(ctx.cart.region, ctx.cart.shipping_weight, ctx.merchandise_total)

    def price(self, cart: Cart) -> Receipt:
        """Price `cart` without changing anything (coupons are checked, not redeemed)."""
        if cart.is_empty:
            raise PricingError("cannot price an empty cart")
        ctx = self._automatic_promotions(cart, self.clock())
        coupon_codes = self._apply_coupons(ctx)
        self._apply_tier(ctx)
        nets = self._line_nets(ctx)
        region = cart.region
        lines = []
        for line in cart.lines:
            rate = self.tax.rate(region, line.product.tax_class)
            tax = ctx.round(self.tax.tax_on(nets[line.sku], rate))
            subtotal = ctx.round(line.subtotal)
            lines.append(ReceiptLine(line.sku, line.product.name, line.quantity, line.product.price, subtotal,
                                     subtotal - nets[line.sku], tax))
        shipping = ctx.round(self._shipping_cost(ctx))
        shipping_tax = ctx.round(self.tax.tax_on(shipping, self.tax.rate(region)))
        subtotal = sum((line.subtotal for line in lines), ZERO)
        discount_total = ctx.total_discount
        tax_total = sum((line.tax for line in lines), ZERO) + shipping_tax
        total = subtotal - discount_total + shipping
        if not self.tax.prices_include_tax:
            total += tax_total
        return Receipt(
            currency=cart.currency,
            lines=lines,
            adjustments=list(ctx.adjustments),
            subtotal=subtotal,
            discount_total=discount_total,
            shipping=shipping,
            shipping_tax=shipping_tax,
            tax_total=tax_total,
            total=total,
            coupons=coupon_codes,
            prices_include_tax=self.tax.prices_include_tax,
        )

    def checkout(self, cart: Cart) -> Receipt:
        """Price `cart` and redeem its coupons (each use counts against the coupon's limit)."""
        receipt = self.price(cart)
        self.coupons.redeem(receipt.coupons)
        return receipt


# --- gift cards ----------------------------------------------------------------------------------


@dataclass
class GiftCard:
    number: str
    balance: Decimal
    currency: str
    expires: dt.date | None = None


@dataclass(frozen=True)
class Payment:
    method: str
    amount: Decimal
    reference: str | None = None


class GiftCardLedger:
    """Issued gift cards and their balances."""

    def __init__(self) -> None:
        self._cards: dict[str, GiftCard] = {}

    def issue(self, number: str, amount: Decimal | int | str, currency: str, expires: dt.date | None = None) -> GiftCard:
        if number in self._cards:
            raise PricingError(f"gift card {number} already exists")
        value = to_decimal(amount)
        if value <= 0:
            raise PricingError("a gift card needs a positive value")
        card = self._cards[number] = GiftCard(number, value, currency.upper(), expires)
        return card

    def get(self, number: str) -> GiftCard:
        try:
            return self._cards[number]
        except KeyError:
            raise PricingError(f"unknown gift card {number}") from None

    def settle(self, receipt: Receipt, numbers: Iterable[str], today: dt.date) -> tuple[list[Payment], Decimal]:
        """Pay `receipt` with gift cards, in the order given; returns the payments and what is still due.

        All cards are checked before any balance changes, so a bad card leaves every balance untouched.
        """
        cards = []
        for number in dict.fromkeys(numbers):
            card = self.get(number)
            if card.currency != receipt.currency:
                raise PricingError(f"gift card {number} is in {card.currency}, the order in {receipt.currency}")
            if card.expires is not None and today > card.expires:
                raise PricingError(f"gift card {number} expired on {card.expires:%Y-%m-%d}")
            if card.balance <= 0:
                raise PricingError(f"gift card {number} is empty")
            cards.append(card)
        due = receipt.total
        payments = []
        for card in cards:
            if due <= 0:
                break
            amount = min(card.balance, due)
            card.balance -= amount
            due -= amount
            payments.append(Payment("gift_card", amount, card.number))
        return payments, due
