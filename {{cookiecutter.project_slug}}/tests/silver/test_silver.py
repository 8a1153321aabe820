"""Silver: each rule keeps, drops or only counts; dropped rows land in quarantine with reasons."""

import pytest
from medallion_dq.testing import (
    assert_expectations,
    assert_nothing_lost,
    assert_quarantined,
    assert_update_ok,
)

pytestmark = pytest.mark.spark

BRONZE = "order_id STRING, customer_id STRING, order_ts STRING, channel STRING, currency STRING, amount STRING, quantity STRING, _corrupt_record STRING, _source_file STRING, _ingested_at TIMESTAMP"
# The silver datasets these tests run: each source's tests run its own (and seed its bronze).
SAMPLE = [
    "silver_orders",
    "silver_customer_changes",
    "silver_customers",
    "silver_customers_history",
]
BRONZE_CUSTOMERS = "customer_id STRING, name STRING, email STRING, country STRING, signup_date STRING, city STRING, segment STRING, operation STRING, changed_at STRING, _corrupt_record STRING, _source_file STRING, _ingested_at TIMESTAMP"


def order(
    order_id,
    amount="10.00",
    currency="EUR",
    channel="web",
    order_ts="2026-11-02T10:00:00",
    quantity="1",
    corrupt=None,
):
    return (order_id, "C-1", order_ts, channel, currency, amount, quantity, corrupt, "seed", None)


def customer(
    customer_id,
    email="anna@example.com",
    country="DE",
    signup_date="2024-03-01",
    city="Berlin",
    segment="consumer",
    operation="INSERT",
    changed_at="2026-10-31T00:00:00",
    corrupt=None,
):
    """One change event of the CRM's feed: the whole record, its operation and its time."""
    fields = (email, country, signup_date, city, segment, operation, changed_at)
    return (customer_id, "Anna Schmidt", *fields, corrupt, "seed", None)


@pytest.fixture(scope="module")
def rules_update(module_lake):
    """One silver update over a row per case; the tests below each show one part of it."""
    module_lake.seed(
        "bronze_orders",
        [
            order("ok-1"),
            order("ok-2", channel="APP ", currency=" usd"),  # cleaned, kept
            order(None),  # valid_order_id
            order("neg", amount="-1.00"),  # valid_amount
            order("null-amount", amount=None),  # NULL is a violation
            order("garbled", amount="12,50"),  # does not parse -> NULL -> violation
            order("yen", currency="JPY"),  # known_currency
            order("old", order_ts="2019-12-31T23:59:59"),  # valid_order_ts
            order("two", amount="-5", currency="JPY"),  # two drop rules at once
            order("phone", channel="phone"),  # warn only: kept
            order("no-channel", channel=None),  # warn only (NULL): kept
            order("zero", quantity="0"),  # warn only: kept
            # bronze could not parse it (a field missing): its columns pass every other rule
            order("half", quantity=None, corrupt="half,C-1,2026-11-02T10:00:00,web,EUR,10.00"),
        ],
        BRONZE,
    )
    module_lake.seed(
        "bronze_customers",
        [
            customer("C-1"),
            customer("C-2", email=" Anna.Schmidt@Example.COM ", country=" gb"),  # cleaned, kept
            customer("C-3", signup_date="31/02/2023"),  # warn only (not a date -> NULL): kept
            # The feed's changes, in the order they arrive: C-1 moves twice, the later move sent
            # first; C-3 changes its email only; C-4 comes and goes.
            customer("C-1", city="Hamburg", operation="UPDATE", changed_at="2026-11-05T08:00:00"),
            customer("C-1", city="Munich", operation="update", changed_at="2026-11-02T10:00:00"),
            customer(
                "C-3", email="anna.s@example.com", operation="UPDATE", changed_at="2026-11-03"
            ),
            customer("C-4", changed_at="2026-11-01T00:00:00"),
            customer("C-4", operation="DELETE", changed_at="2026-11-03T12:00:00"),
            customer(None),  # valid_customer_id
            customer("at-at", email="anna@@example.com"),  # valid_email
            customer("no-email", email=None),  # NULL is a violation
            customer("uk", country="UK"),  # known_country: the ISO code is GB
            customer("two", email="anna@example", country="XX"),  # two drop rules at once
            customer("half", corrupt="half,Anna Schmidt,anna@example.com,DE"),  # whole_record
            customer("upsert", operation="UPSERT"),  # known_operation
            customer("no-time", changed_at="yesterday"),  # valid_changed_at: not a time -> NULL
        ],
        BRONZE_CUSTOMERS,
    )
    result = module_lake.run("validation", ["silver"], datasets=SAMPLE)
    assert_update_ok(result)
    return module_lake, result


def test_valid_and_warned_rows_are_kept_and_cleaned(rules_update):
    lake, _ = rules_update
    kept = {r["order_id"] for r in lake.table("silver_orders").collect()}
    assert kept == {"ok-1", "ok-2", "phone", "no-channel", "zero"}
    assert lake.rows("silver_orders", "order_id")["ok-2"]["channel"] == "app"


def test_dropped_rows_are_quarantined_with_the_rules_they_broke(rules_update):
    lake, _ = rules_update
    assert_quarantined(
        lake.table("silver_orders_quarantine"),
        "order_id",
        {
            None: {"valid_order_id"},
            "neg": {"valid_amount"},
            "null-amount": {"valid_amount"},
            "garbled": {"valid_amount"},
            "yen": {"known_currency"},
            "old": {"valid_order_ts"},
            "two": {"valid_amount", "known_currency"},
            "half": {"whole_record"},
        },
    )


def test_the_quarantine_keeps_the_text_a_type_did_not_parse(rules_update):
    lake, _ = rules_update
    garbled = lake.rows("silver_orders_quarantine", "order_id")["garbled"]
    assert garbled["amount"] is None  # what the rules judged
    assert garbled["_raw"]["amount"] == "12,50"  # what landed
    assert "_raw" not in lake.table("silver_orders").columns
    no_time = lake.rows("silver_customer_changes_quarantine", "customer_id")["no-time"]
    assert (no_time["changed_at"], no_time["_raw"]["changed_at"]) == (None, "yesterday")


def test_each_rule_counts_its_failures_warn_rules_too(rules_update):
    _, result = rules_update
    assert_expectations(
        result,
        "silver_orders",
        {
            "whole_record": 1,
            "valid_order_id": 1,
            "valid_amount": 4,
            "known_currency": 2,
            "valid_order_ts": 1,
            "known_channel": 2,
            "positive_quantity": 2,
        },
        input_records=13,
    )
    assert result.metrics["silver_orders"].dropped_records == 8


def test_every_row_is_kept_or_quarantined_none_lost(rules_update):
    lake, _ = rules_update
    assert_nothing_lost(
        lake.table("bronze_orders"),
        lake.table("silver_orders"),
        lake.table("silver_orders_quarantine"),
        "order_id",
    )


def test_customer_changes_are_applied_and_bad_ones_quarantined(rules_update):
    lake, _ = rules_update
    current = lake.rows("silver_customers", "customer_id")
    assert set(current) == {"C-1", "C-2", "C-3"}  # C-4 deleted
    cleaned = current["C-2"]
    assert (cleaned["email"], cleaned["country"]) == ("anna.schmidt@example.com", "GB")
    # The latest change by changed_at wins, not the last to arrive.
    assert (current["C-1"]["city"], current["C-3"]["email"]) == ("Hamburg", "anna.s@example.com")
    assert "operation" not in lake.table("silver_customers").columns
    # A view over bronze_customers: the events the rules drop, judged when queried.
    quarantine = lake.table("silver_customer_changes_quarantine")
    assert_quarantined(
        quarantine,
        "customer_id",
        {
            None: {"valid_customer_id"},
            "at-at": {"valid_email"},
            "no-email": {"valid_email"},
            "uk": {"known_country"},
            "two": {"valid_email", "known_country"},
            "half": {"whole_record"},
            "upsert": {"known_operation"},
            "no-time": {"valid_changed_at"},
        },
    )
    # Every customer of the feed is in the history or the quarantine, never both.
    keys = {r[0] for r in lake.table("bronze_customers").select("customer_id").collect()}
    history = {r[0] for r in lake.table("silver_customers_history").select("customer_id").collect()}
    dropped = {r[0] for r in quarantine.select("customer_id").collect()}
    assert (history | dropped, history & dropped) == (keys, set())


def test_history_keeps_each_version_with_its_time(rules_update):
    lake, _ = rules_update
    history = lake.spark.table(f"{lake.schema}.silver_customers_history")
    versions = {
        (r["customer_id"], r["city"], str(r["__START_AT"]), str(r["__END_AT"]))
        for r in history.where("customer_id IN ('C-1', 'C-3', 'C-4')").collect()
    }
    assert versions == {
        # Moved to Munich, then Hamburg: the late event takes its place by changed_at.
        ("C-1", "Berlin", "2026-10-31 00:00:00", "2026-11-02 10:00:00"),
        ("C-1", "Munich", "2026-11-02 10:00:00", "2026-11-05 08:00:00"),
        ("C-1", "Hamburg", "2026-11-05 08:00:00", "None"),
        # An email is not tracked: the version is updated in place.
        ("C-3", "Berlin", "2026-10-31 00:00:00", "None"),
        # A delete closes the last version.
        ("C-4", "Berlin", "2026-11-01 00:00:00", "2026-11-03 12:00:00"),
    }
    (c3,) = history.where("customer_id = 'C-3'").collect()
    assert c3["email"] == "anna.s@example.com"


def test_each_customer_rule_counts_its_failures(rules_update):
    _, result = rules_update
    assert_expectations(
        result,
        "silver_customer_changes",
        {
            "whole_record": 1,
            "valid_customer_id": 1,
            "valid_email": 3,
            "known_country": 2,
            "known_operation": 1,
            "valid_changed_at": 1,
            "has_signup_date": 1,
        },
        input_records=16,
    )
    assert result.metrics["silver_customer_changes"].dropped_records == 8


def test_streaming_over_two_updates_counts_each_update_once(lake):
    lake.seed("bronze_orders", [order("a"), order("b", amount="-1")], BRONZE)
    first = lake.run("validation", ["silver"], datasets=["silver_orders"])
    assert_expectations(first, "silver_orders", {"valid_amount": 1}, input_records=2)

    lake.spark.createDataFrame(
        [order("c"), order("d", currency="XXX"), order("e")], BRONZE
    ).write.format("delta").mode("append").saveAsTable(f"{lake.schema}.bronze_orders")
    second = lake.run("validation", ["silver"], datasets=["silver_orders"])
    assert_update_ok(second)
    assert_expectations(
        second, "silver_orders", {"valid_amount": 0, "known_currency": 1}, input_records=3
    )
    assert sorted(r["order_id"] for r in lake.table("silver_orders").collect()) == ["a", "c", "e"]

    # A rerun with nothing new neither duplicates nor loses rows, in silver or quarantine.
    third = lake.run("validation", ["silver"], datasets=["silver_orders"])
    assert_update_ok(third)
    assert lake.table("silver_orders").count() == 3
    assert sorted(r["order_id"] for r in lake.table("silver_orders_quarantine").collect()) == [
        "b",
        "d",
    ]
