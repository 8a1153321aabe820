"""Contracts the tests of every tier read: the standard's own examples, this suite's, and one
delivery breaking each clause of the sample's contract."""

from __future__ import annotations

from pathlib import Path

from medallion_dq import rules
from medallion_dq.tools import contract

HERE = Path(__file__).parent / "contracts"
ODCS_EXAMPLES = HERE / "odcs-examples"
# The standard's own examples (v3.1.0): a sql rule, nested properties, SLA properties and more.
EXAMPLES = ("column-accuracy", "all-schema-types", "full-example")


def generated() -> dict[str, rules.RuleSet]:
    path = HERE / "members.odcs.yaml"
    made = contract.translate(contract.read(path), path.name)
    return {
        key: rules.parse(contract.render(contract.merge(f, {})[0]), key)
        for key, f in made.files.items()
    }


# One delivery breaking every clause the sample's contract translates, each in 10 of 100 rows
# (over every threshold: 2 % for valid_order_id, 5 % else), its orders 9 days before the
# project's as_of (2026-11-08): (field, value) of each group; the rest is one good order.
GOOD = {"order_id": None, "customer_id": "C-0037", "order_ts": "2026-10-30T10:00:00"}
GOOD |= {"channel": "web", "currency": "EUR", "amount": "10.00", "quantity": "1"}
BREAKS = {
    "valid_order_id": ("order_id", None),
    "valid_amount": ("amount", "-5.00"),
    "valid_order_ts": ("order_ts", "not a time"),
    "known_currency": ("currency", "JPY"),
    "known_channel": ("channel", "kiosk"),
    "positive_quantity": ("quantity", "0"),
    "known_customer": ("customer_id", "C-9999"),  # a customer the CRM never sent
    "unique_order_id": ("order_id", "K-DUP"),  # gold_order_keys: one id 10 times
}
