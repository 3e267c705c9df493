"""TheWorldShop's activity for the demo: orders with their versions, payments, shipments and the
clickstream around them, all drawn from the same simulated lifecycle of each order.

An order is re-exported on every status change (placed -> paid -> shipped -> delivered, or
cancelled, or returned), with the payment attempts and carrier updates that caused each change
at the same instants. Records time-stamped after the window closes are not exported yet.
"""

from __future__ import annotations

import itertools
import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from medallion_assets.demo.world import (
    CENT,
    COUNTRIES,
    Days,
    DemoSettings,
    History,
    Record,
    at,
)

Line = tuple[Record, int]  # (product, quantity) of one order line
Purchase = tuple[Record, Record, list[Line]]  # (order, customer, its lines)

TAX = {"US": "0.07", "CA": "0.13", "JP": "0.10", "AU": "0.10", "CH": "0.081", "AE": "0.05"}
EU_VAT = "0.20"  # the rest of Europe; elsewhere 10%
EUROPE = {"GB", "IE", "FR", "DE", "ES", "IT", "NL", "BE", "AT", "SE", "DK", "NO", "FI", "PL", "PT"}
CARRIERS = {"US": ("UPS", "FedEx", "USPS"), "GB": ("Royal Mail", "DPD", "DHL")}
# Service level: (days promised after payment, actual transit days low..high).
SERVICE = {"standard": (5, (2, 6)), "express": (2, (1, 3)), "economy": (8, (4, 10))}
SITE = "https://www.theworldshop.example"
DEVICES = {
    "web": ("desktop", "desktop", "mobile"),
    "ios": ("mobile", "mobile", "tablet"),
    "android": ("mobile", "mobile", "tablet"),
}
BROWSE_SESSIONS_PER_ORDER = 0.5
DUPLICATE_EVENT_RATE = 0.005


@dataclass(frozen=True)
class Activity:
    orders: Days
    payments: Days
    shipments: Days
    user_events: Days


def minutes(rng: random.Random, low: float, high: float) -> timedelta:
    return timedelta(seconds=rng.randint(int(low * 60), int(high * 60)))


def by_day(s: DemoSettings, records: list[Record], clock: str) -> Days:
    """Records bucketed by the day of ``clock`` and sorted by it; later ones are dropped."""
    days: Days = [[] for _ in range(s.days)]
    for record in sorted(records, key=lambda r: r[clock]):
        if s.day_start(0) <= record[clock] < s.end:
            days[s.day_of(record[clock])].append(record)
    return days


def simulate(
    s: DemoSettings,
    people: list[History],
    catalog: list[History],
    rates: dict[tuple[int, str], Decimal],
) -> Activity:
    rng = s.rng("orders")
    first = [p.versions[0] for p in people]
    loyalty = list(itertools.accumulate(rng.paretovariate(1.5) for _ in first))
    active = [p.versions[0] for p in catalog if p.versions[0]["is_active"] is not False]
    popularity = list(itertools.accumulate(1 / (rank + 1) ** 0.8 for rank in range(len(active))))
    per_day = [s.rows // s.days + (day < s.rows % s.days) for day in range(s.days)]
    stamps = sorted(
        at(rng, s.day_start(day), 86400 - 60)
        for day, count in enumerate(per_day)
        for _ in range(count)
    )
    orders, payments, shipments = [], [], []
    purchases: list[Purchase] = []
    for number, placed in enumerate(stamps):
        customer = rng.choices(first, cum_weights=loyalty)[0]
        lines = _lines(rng, active, popularity)
        rate = rates[s.day_of(placed), COUNTRIES[home_country(customer)][0]]
        order = _order(rng, 1_000_001 + number, customer, placed, lines, rate)
        versions, pays, ships = _lifecycle(rng, order, customer)
        orders += versions
        payments += pays
        shipments += ships
        purchases.append((order, customer, lines))
    events = _clickstream(s, s.rng("user_events"), purchases, first, active)
    return Activity(
        by_day(s, orders, "updated_at"),
        by_day(s, payments, "updated_at"),
        by_day(s, shipments, "status_ts"),
        events,
    )


def home_country(customer: Record) -> str:
    """The ISO country of a customer, whatever they typed.

    >>> home_country({"country_code": "uk"}), home_country({"country_code": "de"})
    ('GB', 'DE')
    """
    return str(customer["country_code"]).upper().replace("UK", "GB")


def _lines(rng: random.Random, active: list[Record], popularity: list[float]) -> list[Line]:
    wanted = min(len(active), rng.choices((1, 2, 3, 4), (55, 25, 12, 8))[0])
    picked: dict[int, Record] = {}
    while len(picked) < wanted:
        product = rng.choices(active, cum_weights=popularity)[0]
        picked[product["product_id"]] = product
    return [(p, rng.choices((1, 2, 3), (75, 18, 7))[0]) for p in picked.values()]


def _local(usd: Decimal, rate: Decimal, currency: str) -> Decimal:
    amount = usd / rate
    if currency in ("JPY", "KRW"):  # no minor unit: whole yen and won
        amount = amount.quantize(Decimal(1))
    return amount.quantize(CENT)


def _order(
    rng: random.Random,
    order_id: int,
    customer: Record,
    placed: datetime,
    lines: list[Line],
    rate: Decimal,
) -> Record:
    home = home_country(customer)
    currency = COUNTRIES[home][0]
    roll = rng.random()  # digital goods have no shipping address; a few gifts go abroad
    ship = None if roll < 0.03 else rng.choice(list(COUNTRIES)) if roll < 0.05 else home
    items = [
        {
            "product_id": p["product_id"],
            "quantity": quantity,
            "unit_price": _local(p["list_price_usd"], rate, currency),
        }
        for p, quantity in lines
    ]
    subtotal = sum((i["quantity"] * i["unit_price"] for i in items), Decimal("0.00"))
    free = subtotal * rate >= 75
    shipping = (
        None
        if ship is None
        else Decimal("0.00")
        if free
        else _local(Decimal("5.99"), rate, currency)
    )
    country = ship or home
    tax_rate = Decimal(TAX.get(country, EU_VAT if country in EUROPE else "0.10"))
    tax = None if rng.random() < 0.02 else (subtotal * tax_rate).quantize(CENT)
    promo = rng.choice(("WELCOME10", "WINTER15", " newyear26", "FREESHIP "))
    return {
        "order_id": order_id,
        "customer_id": customer["customer_id"],
        "order_ts": placed,
        "status": "placed",
        "channel": None
        if rng.random() < 0.02
        else rng.choices(("web", "ios", "android"), (55, 25, 18))[0],
        "currency": currency,
        "subtotal_amount": subtotal,
        "shipping_amount": shipping,
        "tax_amount": tax,
        "total_amount": subtotal + (shipping or 0) + (tax or 0),
        "promo_code": promo if rng.random() < 0.12 else None,
        "ship_to_country": ship,
        "items": items,
        "updated_at": placed + timedelta(seconds=rng.randint(1, 15)),
    }


def _lifecycle(rng: random.Random, order: Record, customer: Record) -> tuple[list[Record], ...]:
    """(order versions, payment records, shipment records) of one order."""
    versions, payments = [order], []

    def becomes(status: str, moment: datetime) -> None:
        versions.append({**order, "status": status, "updated_at": moment})

    method = rng.choices(("card", "paypal", "klarna", "apple_pay"), (60, 20, 10, 10))[0]
    # Attempts stay on the order's day, so the day's FX rate converts every payment.
    last_second = order["order_ts"].replace(hour=23, minute=59, second=59)
    clock = order["updated_at"] + minutes(rng, 0.2, 2)
    unpaid = rng.random() < 0.04
    for _ in range(rng.randint(1, 2) if unpaid else int(rng.random() < 0.07)):
        declined = [("declined", clock + timedelta(seconds=2))]
        payments += _payment(rng, order, customer, method, min(clock, last_second), declined)
        clock += minutes(rng, 1, 5)
    if unpaid:
        becomes("cancelled", clock + minutes(rng, 10, 60))
        return versions, payments, []
    paid = clock + minutes(rng, 0.5, 10)
    steps = [("authorized", clock + timedelta(seconds=2)), ("captured", paid)]
    becomes("paid", paid)
    shipments: list[Record] = []
    if rng.random() < 0.03:  # cancelled after payment: refunded
        becomes("cancelled", paid + minutes(rng, 60, 480))
        steps.append(("refunded", versions[-1]["updated_at"] + minutes(rng, 1, 30)))
    elif order["ship_to_country"] is None:  # digital goods are delivered at once
        becomes("delivered", paid + minutes(rng, 1, 10))
    else:
        shipments, changes = _shipment(rng, order, paid)
        for status, moment in changes:
            becomes(status, moment)
        if changes[-1][0] == "returned":
            steps.append(("refunded", changes[-1][1] + minutes(rng, 60, 240)))
    if steps[-1][0] == "captured" and rng.random() < 0.005:
        steps.append(("chargeback", paid + minutes(rng, 1440, 2880)))
    payments += _payment(rng, order, customer, method, min(clock, last_second), steps)
    return versions, payments, shipments


def _payment(
    rng: random.Random,
    order: Record,
    customer: Record,
    method: str,
    attempt: datetime,
    steps: list[tuple[str, datetime]],
) -> list[Record]:
    """One payment attempt, one record per status it went through."""
    card = method in ("card", "apple_pay")
    declined = steps[0][0] == "declined"
    abroad = rng.random() < 0.07
    base = {
        "payment_id": f"pay_{rng.getrandbits(64):016x}",
        "order_id": order["order_id"],
        "attempt_ts": attempt,
        "method": method,
        "amount": order["total_amount"],
        "currency": order["currency"],
        "card_bin": f"{rng.choice('45')}{rng.randrange(100000):05d}" if card else None,
        "card_country": (rng.choice(list(COUNTRIES)) if abroad else home_country(customer))
        if card
        else None,
        "processor_risk_score": round(
            rng.uniform(40, 99) if declined else rng.betavariate(1.3, 9) * 100, 2
        ),
        "decline_code": rng.choice(("insufficient_funds", "do_not_honor", "expired_card"))
        if declined
        else None,
    }
    return [{**base, "status": status, "updated_at": moment} for status, moment in steps]


def _shipment(
    rng: random.Random, order: Record, paid: datetime
) -> tuple[list[Record], list[tuple[str, datetime]]]:
    """Carrier updates of the order's shipment and the order status changes they cause."""
    level = rng.choices(list(SERVICE), (70, 20, 10))[0]
    promise, (low, high) = SERVICE[level]
    country = order["ship_to_country"]
    label = paid + minutes(rng, 60, 720)
    shipped = label + minutes(rng, 120, 1440)
    delivered = shipped + timedelta(days=rng.randint(low, high), seconds=rng.randint(0, 36000))
    base = {
        "shipment_id": f"SHP-{order['order_id']}",
        "order_id": order["order_id"],
        "carrier": rng.choice(CARRIERS.get(country, ("DHL", "UPS", "FedEx", "DPD"))),
        "service_level": level,
        "tracking_number": "".join(rng.choices("ABCDEFGHJKLMNPRSTUVWXYZ0123456789", k=14)),
        "shipped_ts": None,
        "delivered_ts": None,
        "promised_delivery_date": (paid + timedelta(days=promise)).date(),
        "destination_country": country,
    }
    moving = {**base, "shipped_ts": shipped}
    records = [
        {**base, "status": "label_created", "status_ts": label},
        {**moving, "status": "in_transit", "status_ts": shipped},
    ]
    if rng.random() < 0.05:  # held at customs or a missed delivery: one day late
        stuck = shipped + timedelta(seconds=(delivered - shipped).total_seconds() // 2)
        records.append({**moving, "status": "exception", "status_ts": stuck})
        delivered += timedelta(days=1)
    done = {**moving, "delivered_ts": delivered}
    records.append({**done, "status": "delivered", "status_ts": delivered})
    changes = [("shipped", shipped), ("delivered", delivered)]
    if rng.random() < 0.05:
        returned = delivered + minutes(rng, 1440, 4320)
        records.append({**done, "status": "returned", "status_ts": returned})
        changes.append(("returned", returned))
    return records, changes


def _clickstream(
    s: DemoSettings,
    rng: random.Random,
    purchases: list[Purchase],
    people: list[Record],
    active: list[Record],
) -> Days:
    """Sessions ending in each purchase, browsing sessions, and a few redelivered events."""
    events: list[Record] = []
    per_day = [0] * s.days
    for order, customer, lines in purchases:
        events += _purchase_session(rng, order, customer, lines, active)
        per_day[s.day_of(order["order_ts"])] += 1
    for day, count in enumerate(per_day):
        for _ in range(round(count * BROWSE_SESSIONS_PER_ORDER)):
            who = rng.choice(people) if rng.random() < 0.55 else None
            events += _browse_session(rng, at(rng, s.day_start(day), 86400), who, active)
    days = by_day(s, events, "event_ts")
    for rows in days:  # delivered at least once: a few events arrive twice, a bit later
        for i in sorted(
            rng.sample(range(len(rows)), round(len(rows) * DUPLICATE_EVENT_RATE)), reverse=True
        ):
            rows.insert(rng.randint(i + 1, len(rows)), dict(rows[i]))
    return days


def _context(rng: random.Random, customer: Record | None, channel: str | None) -> Record:
    devices = DEVICES.get(channel or "", ("desktop", "mobile"))
    home = home_country(customer) if customer else rng.choice(list(COUNTRIES))
    roll = rng.random()  # geo-IP: mostly home, sometimes travelling, sometimes unknown
    geo = home if roll < 0.92 else None if roll < 0.95 else rng.choice(list(COUNTRIES))
    return {
        "session_id": f"s_{rng.getrandbits(80):020x}",
        "customer_id": customer["customer_id"] if customer else None,
        "device_type": None if rng.random() < 0.02 else rng.choice(devices),
        "ip_address": ".".join(str(rng.randint(1, 254)) for _ in range(4)),
        "country_code": geo,
    }


def _event(
    rng: random.Random, context: Record, kind: str, moment: datetime, product: Record | None = None
) -> Record:
    path = {
        "purchase": "/checkout/confirmation",
        "checkout_start": "/checkout",
        "login": "/account/login",
        "login_failed": "/account/login",
        "search": "/search?q=" + rng.choice(("hoodie", "headphones", "gift", "lamp")),
        "page_view": rng.choice(("/", "/deals", "/new", "/help/shipping")),
    }
    url = f"/p/{product['sku'].lower()}" if product else path.get(kind, "/")
    return {
        "event_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "event_ts": moment,
        "event_type": kind,
        **context,
        "product_id": product["product_id"] if product else None,
        "page_url": SITE + url,
    }


def _purchase_session(
    rng: random.Random, order: Record, customer: Record, lines: list[Line], active: list[Record]
) -> list[Record]:
    """The session that ended in ``order``, built backwards from the purchase."""
    context = _context(rng, customer, order["channel"])
    steps: list[tuple[str, Record | None]] = [("purchase", None), ("checkout_start", None)]
    for bought, _ in lines:
        steps += [("add_to_cart", bought), ("product_view", bought)]
    steps += [("product_view", rng.choice(active)) for _ in range(rng.randint(0, 3))]
    steps += [("search", None)] * rng.randint(0, 2)
    if rng.random() < 0.6:
        steps += [("login", None)] + [("login_failed", None)] * (rng.random() < 0.05)
    steps.append(("page_view", None))
    moment, events = order["order_ts"], []
    for kind, product in steps:
        events.append(_event(rng, context, kind, moment, product))
        moment -= timedelta(seconds=rng.randint(15, 180))
    return events


def _browse_session(
    rng: random.Random, start: datetime, customer: Record | None, active: list[Record]
) -> list[Record]:
    context = _context(rng, customer, rng.choice(("web", "ios", "android")))
    if customer and rng.random() < 0.004:  # credential stuffing against one account
        kinds = ["login_failed"] * rng.randint(5, 15)
    else:
        kinds = ["page_view"] + ["login"] * (customer is not None and rng.random() < 0.5)
        kinds += rng.choices(
            ("product_view", "search", "page_view", "add_to_cart"),
            (45, 20, 25, 10),
            k=rng.randint(0, 10),
        )
    events, moment = [], start
    for kind in kinds:
        product = rng.choice(active) if kind in ("product_view", "add_to_cart") else None
        events.append(_event(rng, context, kind, moment, product))
        moment += timedelta(seconds=rng.randint(10, 240))
    return events
