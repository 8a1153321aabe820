"""The anomaly check without Spark: its band (median and MAD of the source's own history, by
weekday once two weeks are there), its verdict and the validation of its fields."""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone

import pytest

from medallion_dq import anomaly, checks, rules
from medallion_dq.problems import DataQualityError

SUNDAY = date(2026, 11, 1)


def two_weeks(weekday: int = 80, sunday: int = 30) -> list[anomaly.Point]:
    """Fourteen days from a Sunday: Sundays low, other days near `weekday`."""
    days = [SUNDAY + timedelta(d) for d in range(14)]
    return [anomaly.Point(d, sunday if d.weekday() == 6 else weekday + d.day % 3) for d in days]


def check(**options) -> rules.Check:
    return rules.Check("daily_anomaly", "anomaly", tuple({"metric": "rows", **options}.items()))


def test_a_low_sunday_is_judged_against_sundays_and_a_half_wednesday_fails():
    history = two_weeks()
    sunday = checks.judge_anomaly(check(), "silver_orders", 29, date(2026, 11, 15), history, "days")
    assert sunday.passed, str(sunday)
    assert sunday.bound == "expected 27–33 (Sunday median 30 over 2 weeks)"
    wednesday = checks.judge_anomaly(check(), "silver_orders", 40, date(2026, 11, 18), history)
    assert str(wednesday) == (
        "silver_orders.daily_anomaly (anomaly): 40 rows on Wed 2026-11-18; bound expected 73–90 "
        "(Wednesday median 82 over 2 weeks); FAIL"
    )
    assert wednesday.band == ("2026-11-18", 40, pytest.approx(73.35), pytest.approx(89.65))


def test_before_two_weeks_of_a_weekday_the_baseline_is_all_days():
    """One Sunday in the history: a Sunday is compared with every day, and a quiet one fails."""
    history = two_weeks()[:7]
    found = anomaly.band(history, date(2026, 11, 15))
    assert found is not None and found.weekday is None and found.points == 7
    result = checks.judge_anomaly(check(), "silver_orders", 29, date(2026, 11, 15), history, "days")
    assert not result.passed
    assert result.bound.endswith("(median 81 over the last 7 days)")


def test_the_band_is_median_and_scaled_mad():
    history = [anomaly.Point(SUNDAY + timedelta(d), v) for d, v in enumerate([10, 12, 14, 100])]
    found = anomaly.band(history, date(2026, 12, 1), by_weekday=False, sensitivity=2)
    # median 13, MAD median(|10-13|, 1, 1, 87) = 2: one outlier in the history moves neither
    assert (found.median, found.low, found.high) == pytest.approx(
        (13, 13 - 4 * 1.4826, 13 + 4 * 1.4826)
    )


def test_a_flat_history_has_a_floor_not_a_zero_width_band():
    flat = [anomaly.Point(SUNDAY + timedelta(d), 100) for d in range(10)]
    found = anomaly.band(flat, date(2026, 12, 1), by_weekday=False)
    assert (found.low, found.high) == (90, 110)  # min_width 10 % of the median
    assert found.holds(104) and not found.holds(89)
    narrow = anomaly.band(flat, date(2026, 12, 1), by_weekday=False, min_width=0.01)
    assert (narrow.low, narrow.high) == (99, 101)
    clean = [anomaly.Point(SUNDAY + timedelta(d), 0.0) for d in range(10)]
    rates = anomaly.band(clean, date(2026, 12, 1), metric="failure_rate")
    assert (rates.low, rates.high) == (0.0, 0.01)  # a point of failure rate, not every failed row


def test_without_enough_history_the_check_passes_with_a_note():
    history = two_weeks()[:2]
    result = checks.judge_anomaly(check(), "silver_orders", 5, date(2026, 11, 3), history)
    assert result.passed and result.note == "no baseline yet: 2 earlier updates, 3 needed"


def updates(*times: datetime, rows: int = 80) -> list[dict]:
    """The volume series of the event log: one update of silver_orders at each time."""
    return [
        {
            "update_id": f"u{n}",
            "dataset": "silver_orders",
            "time": time,
            "rows": rows,
            "full_refresh": False,
        }
        for n, time in enumerate(times)
    ]


def test_earlier_updates_of_the_day_judged_are_said_apart_not_counted_as_a_baseline():
    """Four runs on one day, then a fifth: no baseline yet, and the note says why (its four
    earlier updates are of the same day, and count from the next day), not '4 earlier updates,
    3 needed'. The next day, the five of that day make the baseline."""
    day = [datetime(2026, 12, 5, hour) for hour in (6, 7, 8, 9, 10)]
    series = {"written": updates(*day), "rates": []}
    result = checks.anomaly_check(None, check(), "silver_orders", "t", series, "u4")
    assert result.passed and not result.warning
    assert result.note == (
        "no baseline yet: 0 updates of the days before Sat 2026-12-05, 3 needed; 4 more are of"
        " Sat 2026-12-05: they count from the next day (date_column counts rows by the day of"
        " their data)"
    )
    series = {"written": updates(*day, datetime(2026, 12, 6, 6)), "rates": []}
    sunday = checks.anomaly_check(None, check(), "silver_orders", "t", series, "u5")
    assert (
        sunday.note == "" and sunday.bound == "expected 72–88 (median 80 over the last 5 updates)"
    )


def test_a_failure_rate_or_a_lag_without_a_baseline_says_which_deliveries_count():
    day = date(2026, 12, 5)
    history = [anomaly.Point(date(2026, 12, 4), 0.01), anomaly.Point(day, 0.02)]
    rate = checks.judge_anomaly(check(metric="failure_rate"), "silver_orders", 0.5, day, history)
    assert rate.passed and rate.note == (
        "no baseline yet: 1 update of the days before Sat 2026-12-05, 3 needed; 1 more is of"
        " Sat 2026-12-05: it counts from the next day"
    )  # no date_column hint: a failure rate is dated by its update
    late = [*history, anomaly.Point(date(2026, 12, 7), 3.0), anomaly.Point(date(2026, 12, 8), 2.0)]
    lag = checks.judge_anomaly(check(metric="lag"), "silver_orders", 9.0, day, late, "deliveries")
    assert lag.note.endswith(
        "1 more is of Sat 2026-12-05: it counts from the next day; 2 are of a later day"
    )
    assert lag.note.startswith("no baseline yet: 1 delivery of the days before Sat 2026-12-05")


def test_two_updates_of_one_earlier_weekday_are_one_week_not_two():
    """The weekday baseline needs two weeks of that weekday, not two updates: a Wednesday run
    twice is one Wednesday, and the band says its weeks by days."""
    wednesday = date(2026, 11, 11)
    week = [anomaly.Point(wednesday + timedelta(d), 80) for d in range(-2, 5)]
    twice = [*week, anomaly.Point(wednesday, 40)]  # the Wednesday run again
    found = anomaly.band(twice, date(2026, 11, 18))
    assert found is not None and found.weekday is None and found.points == 8
    second = [*twice, anomaly.Point(date(2026, 11, 18), 40), anomaly.Point(date(2026, 11, 18), 41)]
    weekly = anomaly.band(second, date(2026, 11, 25))
    assert weekly is not None and (weekly.weekday, weekly.points, weekly.days) == (2, 4, 2)
    assert anomaly.describe(weekly, "rows", "updates").endswith(
        "(Wednesday median 40 over 2 weeks)"
    )


def test_warn_passes_the_gate_with_a_warning():
    """`action: warn` beside the check's name, where CONVENTIONS.md shows it."""
    text = (
        HEAD + "checks:\n  - name: daily_anomaly\n    action: warn\n    anomaly: {metric: rows}\n"
    )
    (warned,) = rules.parse(text, "rules/silver/orders.yml").checks
    judged = checks.judge_anomaly(warned, "silver_orders", 40, date(2026, 11, 18), two_weeks())
    assert (judged.passed, judged.warning) == (False, False)  # the band's verdict alone
    result = checks.acted(warned, judged)
    assert (result.passed, result.warning, result.status) == (True, True, "WARN")
    assert result.bound == judged.bound and result.band == judged.band  # the report draws it
    held = checks.judge_anomaly(warned, "silver_orders", 80, date(2026, 11, 18), two_weeks())
    assert checks.acted(warned, held).status == "PASS"
    failing = checks.judge_anomaly(check(), "silver_orders", 40, date(2026, 11, 18), two_weeks())
    assert checks.acted(check(), failing).status == "FAIL"  # the default: fail


@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("volume", "{min_rows: 100}"),
        ("anomaly", "{metric: rows}"),
        ("freshness", "{column: order_ts, max_age: 2d}"),
        ("references", "{column: customer_id, dataset: silver_customers}"),
    ],
)
def test_every_kind_of_check_takes_action_warn_beside_its_name(kind, options):
    text = HEAD + f"checks:\n  - name: watched\n    {kind}: {options}\n    action: warn\n"
    (found,) = rules.parse(text, "rules/silver/orders.yml").checks
    assert (found.kind, found.action) == (kind, "warn")
    broken = checks.CheckResult("silver_orders", "watched", kind, "3", "0", passed=False)
    assert checks.acted(found, broken).status == "WARN"
    default = rules.parse(text.replace("    action: warn\n", ""), "orders.yml").checks[0]
    assert default.action == "fail" and checks.acted(default, broken).status == "FAIL"


@pytest.mark.parametrize(
    ("check_text", "message", "fix"),
    [
        (
            "    anomaly: {metric: rows, action: warn}\n",
            "DQ023 rules/silver/orders.yml: checks.watched: action is the check's own field, not an"
            " option of anomaly; fix: write 'action: warn'",
            "write 'action: warn' on a line of its own beside 'name:', out of the anomaly mapping",
        ),
        (
            "    volume: {min_ratio: 0.5, action: fail}\n",
            "action is the check's own field, not an option of volume",
            "write 'action: fail' on a line",
        ),
        (
            "    freshness: {column: order_ts, max_age: 2d, action: drop}\n",
            "action is the check's own field, not an option of freshness",
            "write 'action: warn' on a line",
        ),
        (
            "    references: {column: customer_id, dataset: silver_customers}\n    action: drop\n",
            "a check's action must be fail or warn, got 'drop'",
            "(a dataset check drops no rows)",
        ),
        (
            "    anomaly: {metric: rows}\n    action: [warn]\n",
            "a check's action must be fail or warn, got ['warn']",
            "write 'action: warn'",
        ),
    ],
    ids=["anomaly", "volume", "freshness-drop", "references-drop", "a-list"],
)
def test_an_action_in_the_wrong_place_is_one_line_with_the_fix(check_text, message, fix):
    text = HEAD + "checks:\n  - name: watched\n" + check_text
    with pytest.raises(DataQualityError) as caught:
        rules.parse(text, "rules/silver/orders.yml")
    (problem,) = caught.value.problems
    line = str(problem)
    assert "\n" not in line and "rules/silver/orders.yml" in line and "checks.watched" in line
    assert message in line and fix in line


def test_the_event_log_series_leaves_out_empty_days_and_full_refreshes():
    """Without date_column the series is the volume check's: rows per update, dated by the
    update; an empty update and a full refresh are no delivery to learn from."""
    written = [
        {
            "update_id": f"u{d}",
            "dataset": "silver_orders",
            "time": datetime(2026, 11, d, 6),
            "rows": 80,
            "full_refresh": False,
        }
        for d in range(2, 7)
    ]
    written += [
        {
            "update_id": "empty",
            "dataset": "silver_orders",
            "time": datetime(2026, 11, 7, 6),
            "rows": 0,
            "full_refresh": False,
        },
        {
            "update_id": "refresh",
            "dataset": "silver_orders",
            "time": datetime(2026, 11, 8, 6),
            "rows": 400,
            "full_refresh": True,
        },
        {
            "update_id": "now",
            "dataset": "silver_orders",
            "time": datetime(2026, 11, 9, 6),
            "rows": 40,
            "full_refresh": False,
        },
    ]
    series = {"written": written, "rates": []}
    result = checks.anomaly_check(None, check(), "silver_orders", "t", series, "now")
    assert not result.passed
    assert result.bound == "expected 72–88 (median 80 over the last 5 updates)"
    refreshed = checks.anomaly_check(None, check(), "silver_orders", "t", series, "refresh")
    assert refreshed.passed and refreshed.note == checks.FULL_REFRESH_NOTE
    empty = checks.anomaly_check(None, check(), "silver_orders", "t", series, "empty", True)
    assert empty.passed and empty.note == "an empty delivery, allowed (--allow-empty)"


def test_a_failure_rate_is_judged_against_the_rules_earlier_rates():
    def rate(update: str, day: int, name: str, failed: int) -> dict:
        time = datetime(2026, 11, day, 6)
        return {
            "update_id": update,
            "dataset": "silver_orders",
            "name": name,
            "time": time,
            "failed": failed,
            "judged": 100,
        }

    rates = [rate(f"u{d}", d, "valid_amount", 2) for d in range(2, 8)]
    rates += [rate(f"u{d}", d, "valid_id", 0) for d in range(2, 8)]
    rates += [rate("now", 9, "valid_amount", 9), rate("now", 9, "valid_id", 0)]
    series = {"written": [], "rates": rates}
    one = check(metric="failure_rate", rule="valid_amount")
    result = checks.anomaly_check(None, one, "silver_orders", "t", series, "now")
    assert (result.value, result.passed) == ("9.00% failed (valid_amount) on Mon 2026-11-09", False)
    assert result.bound == "expected 1.00%–3.00% (median 2.00% over the last 6 updates)"
    every = checks.anomaly_check(
        None, check(metric="failure_rate"), "silver_orders", "t", series, "now"
    )
    assert every.value.startswith("4.50% failed (all rules)") and not every.passed


HEAD = "dataset: silver_orders\nrules:\n  - name: valid_amount\n    constraint: amount >= 0\n"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("{metric: latency}", "anomaly.metric must be one of rows, lag, failure_rate, got"),
        ("{metric: lag}", "anomaly metric lag needs date_column, the timestamp whose age"),
        ("{metric: rows, sensitivity: 0}", "anomaly.sensitivity must be a number > 0, got 0"),
        ("{metric: rows, sensitivity: -1}", "anomaly.sensitivity must be a number > 0, got -1"),
        ("{metric: rows, history: 2}", "anomaly.history must be a whole number >= 3, got 2"),
        ("{metric: rows, by_weekday: yes please}", "anomaly.by_weekday must be true or false"),
        (
            "{metric: rows, action: drop}",
            "action is the check's own field, not an option of anomaly",
        ),
        ("{sensitivity: 3}", "anomaly needs 'metric'"),
        ("{metric: rows, window: 7}", "anomaly has no option 'window'"),
        ("{metric: rows, date_column: ''}", "anomaly.date_column must be a column"),
        ("{metric: failure_rate, rule: valid_amt}", "anomaly.rule 'valid_amt' is no rule of this"),
        (
            "{metric: rows, rule: valid_amount}",
            "anomaly.rule names the rule of metric failure_rate",
        ),
        (
            "{metric: failure_rate, date_column: order_ts}",
            "anomaly.date_column dates the table's rows: metric rows or lag, not failure_rate",
        ),
    ],
)
def test_a_wrong_field_is_one_line_naming_it(options: str, message: str):
    text = HEAD + f"checks:\n  - name: daily_anomaly\n    anomaly: {options}\n"
    with pytest.raises(DataQualityError) as caught:
        rules.parse(text, "rules/silver/orders.yml")
    (problem,) = caught.value.problems
    line = str(problem)
    assert line.startswith("DQ023 rules/silver/orders.yml") and "\n" not in line
    assert message in line and "checks.daily_anomaly" in line


def test_a_valid_anomaly_check_is_read_with_its_options():
    text = HEAD + (
        "checks:\n  - name: daily_anomaly\n    anomaly: {metric: failure_rate, rule: valid_amount,"
        " sensitivity: 3.5, history: 28, by_weekday: true}\n    action: warn\n"
    )
    (found,) = rules.parse(text, "orders.yml").checks
    assert (found.kind, found.get("rule"), found.action) == (
        "anomaly",
        "valid_amount",
        "warn",
    )


def test_the_report_draws_each_series_with_its_band_and_marks_the_anomalies():
    from medallion_dq.tools import report

    def judged(day: str, value: float, status: str, dataset: str = "silver_<b>orders</b>") -> dict:
        return {
            "update_id": f"u-{day}",
            "timestamp": datetime(2026, 11, int(day[-2:]), 6, tzinfo=timezone.utc),
            "pipeline": "validation",
            "dataset": dataset,
            "check": "daily_anomaly",
            "kind": "anomaly",
            "value": f"{value} rows",
            "bound": "expected 18–22",
            "status": status,
            "note": "",
            "band": [day, value, 18.0, 22.0],
        }

    rows = [judged("2026-11-16", 20, "PASS"), judged("2026-11-17", 21, "PASS")]
    rows += [judged("2026-11-18", 10, "FAIL"), judged("2026-11-18", 10, "FAIL")]  # judged again
    page = report.html([], checks=rows)
    section = page[page.index("<h2>Anomaly checks") :]
    assert "<code>silver_&lt;b&gt;orders&lt;/b&gt;.daily_anomaly</code>" in section
    assert "<b>orders" not in page
    assert section.count("<circle") == 3  # one per business day
    assert section.count('fill="#e15759"') == 1
    assert "2026-11-18: 10, expected 18–22; FAIL" in section
    assert "3 deliveries; the shaded band is the expected range; 1 judged anomalous" in section
    assert "Anomaly checks" not in report.html(
        [], checks=[{**rows[0], "band": None, "kind": "volume"}]
    )


def test_the_checks_conventions_md_shows_are_read_as_it_says():
    """The baked CONVENTIONS.md's `checks:` example, as a rule file: every check reads, and its
    `action: warn` is where the rule loader takes it (the form the docs show works)."""
    import re

    from sample import sample_project

    text = (sample_project() / "CONVENTIONS.md").read_text(encoding="utf-8")
    section = text[text.index("## Dataset-level checks") :]
    block = re.search(r"```yaml\n(checks:\n.*?)```", section, re.S).group(1)
    found = rules.parse(HEAD + block, "CONVENTIONS.md")
    kinds = {c.name: (c.kind, c.action) for c in found.checks}
    assert kinds["daily_anomaly"] == ("anomaly", "warn")
    assert kinds["daily_volume"] == ("volume", "fail")
    assert "`action: warn` beside its `name:`" in section
