"""TheWorldShop's reference data for the demo: customers, products, FX rates and the vendor's
address verdicts, day by day.

Every source is a list with one list of records per day of the window. Customers and products
are full daily snapshots (the latest version of each row as of that day's end), so silver's
"latest version wins" logic has real versions to pick from.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

Record = dict[str, Any]
Days = list[list[Record]]
CENT = Decimal("0.01")

# ISO code: (currency, share of customers, phone prefix, postal pattern (# digit, A letter),
# cities). Exactly the ISO list of the iso_country_codes rule set in validation.yaml.
COUNTRIES: dict[str, tuple[str, float, str, str, tuple[str, ...]]] = {
    "US": ("USD", 30, "+1", "#####", ("New York", "Chicago", "Austin", "Seattle")),
    "GB": ("GBP", 12, "+44", "A## #AA", ("London", "Manchester", "Leeds", "Bristol")),
    "DE": ("EUR", 9, "+49", "#####", ("Berlin", "Hamburg", "Munich")),
    "FR": ("EUR", 7, "+33", "#####", ("Paris", "Lyon", "Marseille")),
    "CA": ("CAD", 5, "+1", "A#A #A#", ("Toronto", "Vancouver", "Montreal")),
    "AU": ("AUD", 4, "+61", "####", ("Sydney", "Melbourne")),
    "NL": ("EUR", 3, "+31", "#### AA", ("Amsterdam", "Rotterdam")),
    "ES": ("EUR", 3, "+34", "#####", ("Madrid", "Barcelona")),
    "IT": ("EUR", 3, "+39", "#####", ("Rome", "Milan")),
    "JP": ("JPY", 3, "+81", "###-####", ("Tokyo", "Osaka")),
    "MX": ("MXN", 2, "+52", "#####", ("Mexico City", "Guadalajara")),
    "BR": ("BRL", 2, "+55", "#####-###", ("Sao Paulo", "Rio de Janeiro")),
    "PL": ("PLN", 2, "+48", "##-###", ("Warsaw", "Krakow")),
    "IN": ("INR", 2, "+91", "######", ("Mumbai", "Bangalore")),
    "SE": ("SEK", 2, "+46", "### ##", ("Stockholm", "Gothenburg")),
    "IE": ("EUR", 2, "+353", "A## A#A#", ("Dublin", "Cork")),
    "BE": ("EUR", 2, "+32", "####", ("Brussels", "Antwerp")),
    "AT": ("EUR", 1.5, "+43", "####", ("Vienna", "Graz")),
    "CH": ("CHF", 1.5, "+41", "####", ("Zurich", "Geneva")),
    "DK": ("DKK", 1, "+45", "####", ("Copenhagen", "Aarhus")),
    "NO": ("NOK", 1, "+47", "####", ("Oslo", "Bergen")),
    "FI": ("EUR", 1, "+358", "#####", ("Helsinki", "Espoo")),
    "PT": ("EUR", 1, "+351", "####-###", ("Lisbon", "Porto")),
    "AE": ("AED", 1, "+971", "", ("Dubai", "Abu Dhabi")),
    "ZA": ("ZAR", 1, "+27", "####", ("Cape Town", "Johannesburg")),
    "NZ": ("NZD", 1, "+64", "####", ("Auckland", "Wellington")),
    "SG": ("SGD", 1, "+65", "######", ("Singapore",)),
    "KR": ("KRW", 1, "+82", "#####", ("Seoul", "Busan")),
    "HK": ("HKD", 1, "+852", "", ("Hong Kong",)),
}
# fmt: off
USD_PER_UNIT = {  # where each currency's random walk starts
    "USD": 1.0, "EUR": 1.08, "GBP": 1.27, "CAD": 0.74, "AUD": 0.66, "JPY": 0.0068, "MXN": 0.058,
    "BRL": 0.2, "PLN": 0.25, "INR": 0.012, "SEK": 0.095, "CHF": 1.12, "DKK": 0.145, "NOK": 0.094,
    "AED": 0.2723, "ZAR": 0.054, "NZD": 0.61, "SGD": 0.74, "KRW": 0.00075, "HKD": 0.128,
}
FIRST = ("Olivia", "Liam", "Emma", "Noah", "Amelia", "Oliver", "Sofia", "Lucas", "Mia", "Leon",
         "Hannah", "Mateo", "Chloe", "Hugo", "Yuki", "Aarav", "Freya", "Luca", "Ines", "Jonas")
LAST = ("Smith", "Jones", "Garcia", "Mueller", "Martin", "Rossi", "Tanaka", "Silva", "Kowalski",
        "Jansen", "Dubois", "Nielsen", "Patel", "Kim", "Murphy", "Lopez", "Berg", "Walsh")
STREETS = ("High Street", "Main Street", "Station Road", "Church Lane", "Park Avenue",
           "Mill Road", "Queen Street", "Oak Avenue", "River Walk", "Market Square")
# fmt: on
DOMAINS = ("example.com", "mail.example.org", "inbox.example.net", "post.example.co")
# Category: (product nouns, USD price range, weight range in grams).
CATEGORIES = {
    "Apparel": (("T-Shirt", "Hoodie", "Jacket", "Scarf"), (12, 140), (150, 900)),
    "Footwear": (("Sneaker", "Boot", "Sandal"), (35, 220), (400, 1500)),
    "Electronics": (("Headphones", "Charger", "Speaker", "Smartwatch"), (15, 480), (50, 900)),
    "Home": (("Mug", "Lamp", "Cushion", "Blanket"), (8, 160), (200, 4000)),
    "Beauty": (("Serum", "Lip Balm", "Shampoo"), (5, 70), (50, 500)),
    "Sports": (("Yoga Mat", "Water Bottle", "Backpack"), (10, 120), (150, 2500)),
}
ADJECTIVES = ("Classic", "Urban", "Everyday", "Pro", "Eco", "Travel", "Soft", "Bold")


@dataclass(frozen=True)
class DemoSettings:
    """What to generate: ``rows`` orders over ``days`` days from ``start``, from ``seed``."""

    rows: int = 5000
    seed: int = 42
    days: int = 3
    start: date = date(2026, 1, 1)
    # Share of the vendor's GB rows written 'UK', which the ISO check on
    # silver.addresses_validated blocks (0: a clean feed; `demo-data --with-vendor-errors`)
    vendor_uk_rate: float = 0.0

    def __post_init__(self) -> None:
        if self.rows < 1 or self.days < 1:
            raise ValueError("rows and days must be at least 1")

    @property
    def customers(self) -> int:
        return max(20, self.rows // 5)

    @property
    def products(self) -> int:
        return max(10, self.rows // 25)

    def day_start(self, day: int) -> datetime:
        return datetime(self.start.year, self.start.month, self.start.day, tzinfo=UTC) + (
            timedelta(days=day)
        )

    @property
    def end(self) -> datetime:
        """The instant the window closes: nothing later has been exported yet."""
        return self.day_start(self.days)

    def day_of(self, moment: datetime) -> int:
        return (moment - self.day_start(0)).days

    def rng(self, purpose: str) -> random.Random:
        # One stream per purpose: changing how one source is drawn leaves the others unchanged.
        return random.Random(f"theworldshop:{self.seed}:{purpose}")


@dataclass
class History:
    """The versions of one customer or product, oldest first."""

    versions: list[Record] = field(default_factory=list)

    def as_of(self, moment: datetime) -> Record:
        return [v for v in self.versions if v["updated_at"] < moment][-1]

    def add(self, moment: datetime, **changes: Any) -> None:
        self.versions.append({**self.versions[-1], **changes, "updated_at": moment})


def at(rng: random.Random, start: datetime, seconds: float) -> datetime:
    """A whole-second instant uniformly within ``seconds`` after ``start``."""
    return start + timedelta(seconds=rng.randrange(max(1, int(seconds))))


def pattern(rng: random.Random, template: str) -> str | None:
    pick = {"#": "0123456789", "A": "ABCDEFGHJKLMNPRSTUVWXY"}
    return "".join(rng.choice(pick[c]) if c in pick else c for c in template) or None


def customers(s: DemoSettings) -> list[History]:
    rng = s.rng("customers")
    codes, weights = list(COUNTRIES), [c[1] for c in COUNTRIES.values()]
    people = []
    for index in range(s.customers):
        # The first customer lives in GB, so even a tiny demo has the vendor's 'UK' mistake.
        country = "GB" if index == 0 else rng.choices(codes, weights)[0]
        _, _, prefix, postal, cities = COUNTRIES[country]
        first, last = rng.choice(FIRST), rng.choice(LAST)
        signup = at(rng, s.day_start(-3 * 365), 3 * 365 * 86400 - 86400)
        typed = "UK" if country == "GB" and rng.random() < 0.3 else country
        people.append(
            History(
                [
                    {
                        "customer_id": 100001 + index,
                        "email": f"{first}.{last}{index}@{rng.choice(DOMAINS)}".lower(),
                        "phone": None if rng.random() < 0.1 else _phone(rng, prefix),
                        "first_name": first,
                        "last_name": last,
                        **_address(rng, postal, cities),
                        "country_code": typed.lower() if rng.random() < 0.03 else typed,
                        "signup_ts": signup,
                        "marketing_opt_in": None if rng.random() < 0.05 else rng.random() < 0.4,
                        "updated_at": at(rng, signup, (s.day_start(0) - signup).total_seconds()),
                    }
                ]
            )
        )
    for day in range(1, s.days):  # a few customers move, change phone or opt in each day
        for person in rng.sample(people, k=max(1, len(people) // 40)):
            country = person.versions[0]["country_code"].upper().replace("UK", "GB")
            _, _, prefix, postal, cities = COUNTRIES[country]
            change = rng.choice(
                (
                    _address(rng, postal, cities),
                    {"phone": _phone(rng, prefix)},
                    {"marketing_opt_in": True},
                )
            )
            person.add(at(rng, s.day_start(day), 86400), **change)
    return people


def _phone(rng: random.Random, prefix: str) -> str:
    digits = "".join(rng.choice("0123456789") for _ in range(10))
    return rng.choice(
        (
            f"{prefix} {digits[:3]} {digits[3:6]} {digits[6:]}",
            f"({digits[:3]}) {digits[3:6]}-{digits[6:]}",
            f"{prefix}{digits}",
        )
    )


def _address(rng: random.Random, postal: str, cities: tuple[str, ...]) -> Record:
    line2 = rng.choice(("Apt", "Flat", "Floor", "Unit")) + f" {rng.randint(1, 40)}"
    return {
        "address_line1": f"{rng.randint(1, 250)} {rng.choice(STREETS)}",
        "address_line2": line2 if rng.random() < 0.25 else None,
        "city": rng.choice(cities),
        "postal_code": pattern(rng, postal),
    }


def products(s: DemoSettings) -> list[History]:
    rng = s.rng("products")
    items = []
    for index in range(s.products):
        category = rng.choice(list(CATEGORIES))
        nouns, (low, high), (light, heavy) = CATEGORIES[category]
        price = Decimal(rng.randint(low, high)) - Decimal("0.01")
        items.append(
            History(
                [
                    {
                        "product_id": 5001 + index,
                        "sku": f"TWS-{category[:3].upper()}-{index + 1:05d}",
                        "product_name": f"{rng.choice(ADJECTIVES)} {rng.choice(nouns)}",
                        "category": None if rng.random() < 0.03 else category,
                        "unit_cost_usd": (price * Decimal(rng.uniform(0.35, 0.7))).quantize(CENT),
                        "list_price_usd": price,
                        "is_active": None if rng.random() < 0.02 else rng.random() < 0.95,
                        "weight_grams": rng.randint(light, heavy),
                        "updated_at": at(rng, s.day_start(-400), 399 * 86400),
                    }
                ]
            )
        )
    for day in range(1, s.days):  # the PIM reprices a few products each day
        for item in rng.sample(items, k=max(1, len(items) // 50)):
            price = (item.versions[-1]["list_price_usd"] * Decimal("0.9")).quantize(CENT)
            item.add(at(rng, s.day_start(day), 86400), list_price_usd=price)
    return items


def snapshots(s: DemoSettings, histories: list[History]) -> Days:
    """The full export of each day: every row as it stood at the end of that day."""
    return [[h.as_of(s.day_start(day + 1)) for h in histories] for day in range(s.days)]


def fx_rates(s: DemoSettings) -> dict[tuple[int, str], Decimal]:
    """USD per unit for every currency and day: a small random walk from a base rate."""
    rng = s.rng("fx")
    rates = {}
    for currency, base in USD_PER_UNIT.items():
        level = base
        for day in range(s.days):
            level = level if currency == "USD" else level * math.exp(rng.gauss(0, 0.004))
            rates[day, currency] = Decimal(level).quantize(Decimal("0.00000001"))
    return rates


def fx_records(s: DemoSettings, rates: dict[tuple[int, str], Decimal]) -> Days:
    # Treasury publishes the next day's reference rates the evening before.
    return [
        [
            {
                "rate_date": s.day_start(day).date(),
                "currency": currency,
                "usd_per_unit": rate,
                "provider": "treasury-ref",
                "published_at": s.day_start(day) - timedelta(hours=2),
            }
            for (d, currency), rate in rates.items()
            if d == day
        ]
        for day in range(s.days)
    ]


def address_feed(s: DemoSettings, people: list[History]) -> Days:
    """The vendor's verdicts: about 75% of customers on day one, then each day the customers who
    moved and about 4% re-checked.

    The vendor writes 'UK' for about ``s.vendor_uk_rate`` of GB rows (at least one latest row
    unless the rate is 0), which silver.addresses_validated's ISO country check must catch.
    """
    rng = s.rng("address_feed")
    days: Days = []
    for day in range(s.days):
        start, rows = s.day_start(day), []
        for index, person in enumerate(people):
            moved = [v for v in person.versions[1:] if s.day_of(v["updated_at"]) == day]
            if not (moved or rng.random() < (0.75 if day == 0 else 0.04) or index == day == 0):
                continue
            since = moved[-1]["updated_at"] if moved else start
            checked = at(rng, since, (s.day_start(day + 1) - since).total_seconds())
            rows.append(_verdict(rng, person.as_of(checked + timedelta(seconds=1)), checked))
        rows.sort(key=lambda r: r["validated_at"])
        days.append(rows)
    gb = [r for rows in days for r in rows if r["country_code"] == "GB"]
    for row in gb:
        if rng.random() < s.vendor_uk_rate:
            row["country_code"] = "UK"
    if gb and s.vendor_uk_rate > 0 and not any(r["country_code"] == "UK" for r in gb):
        gb[-1]["country_code"] = "UK"  # the last GB row is its customer's latest verdict
    return days


def _verdict(rng: random.Random, customer: Record, checked: datetime) -> Record:
    status = rng.choices(("VALID", "CORRECTED", "INVALID"), (85, 11, 4))[0]
    line1 = customer["address_line1"]
    if status == "CORRECTED":
        line1 = line1.replace("Street", "St").replace("Road", "Rd").replace("Avenue", "Ave")
    low, high = {"VALID": (0.85, 1.0), "CORRECTED": (0.6, 0.95), "INVALID": (0.0, 0.5)}[status]
    return {
        "customer_id": customer["customer_id"],
        "address_line1": line1,
        "address_line2": customer["address_line2"],
        "city": customer["city"],
        "postal_code": customer["postal_code"],
        # The vendor normalises what customers typed ('uk', 'UK') to ISO codes.
        "country_code": customer["country_code"].upper().replace("UK", "GB"),
        "validation_status": status,
        "match_confidence": None if rng.random() < 0.01 else round(rng.uniform(low, high), 3),
        "validated_at": checked,
    }
