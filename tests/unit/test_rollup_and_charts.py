"""The pure parts of the metrics rollup (histogram buckets and quantiles) and of the
dashboard's SVG charts."""

from __future__ import annotations

import math
from xml.etree import ElementTree

import pytest

from publishing import charts
from publishing.rollup import DURATION_BUCKETS, INF, Histogram, bucket_label


@pytest.mark.parametrize(
    ("seconds", "label"),
    [
        (0.0, "0.01"),
        (0.01, "0.01"),  # upper bounds are inclusive, as Prometheus' `le`
        (0.011, "0.025"),
        (59.9, "60.0"),
        (60.0, "60.0"),
        (61.0, INF),
    ],
)
def test_bucket_label(seconds, label):
    assert bucket_label(seconds, DURATION_BUCKETS) == label


def test_histogram_is_cumulative_with_inf_last():
    histogram = Histogram((1, 2), counts={"1.0": 3, "2.0": 1, INF: 2}, total=9.5)

    assert histogram.cumulative() == [("1.0", 3), ("2.0", 4), (INF, 6)]
    assert histogram.count == 6


def test_quantile_interpolates_within_the_bucket_as_histogram_quantile():
    histogram = Histogram((1, 2, 4), counts={"1.0": 10, "2.0": 10})

    assert histogram.quantile(0.5) == pytest.approx(1.0)
    assert histogram.quantile(0.75) == pytest.approx(1.5)
    assert histogram.quantile(0.25) == pytest.approx(0.5)


def test_quantile_in_the_inf_bucket_is_the_highest_bound_and_none_without_data():
    assert Histogram((1, 2), counts={INF: 4}).quantile(0.95) == 2.0
    assert Histogram((1, 2)).quantile(0.5) is None


@pytest.mark.parametrize(
    ("value", "top"), [(0, 1), (0.3, 0.5), (1, 1), (1.5, 2), (3, 5), (7, 10), (11, 20), (250, 500)]
)
def test_nice_max(value, top):
    assert math.isclose(charts.nice_max(value), top)


def test_charts_are_well_formed_svg_with_escaped_texts():
    series = [charts.Series("<b>ok</b>", [1, None, 3], "#2e7d32")]
    for chart in (
        charts.bar_chart(title='A & "B"', labels=["a", "b", "c"], series=series),
        charts.line_chart(title='A & "B"', labels=["a", "b", "c"], series=series, unit="s"),
    ):
        root = ElementTree.fromstring(str(chart))  # raises on malformed XML
        assert root.tag.endswith("svg")
        assert "<b>" not in str(chart)
        assert "&lt;b&gt;ok&lt;/b&gt;" in str(chart)


def test_bar_chart_stacks_the_series_of_a_label():
    chart = charts.bar_chart(
        title="t",
        labels=["10:00"],
        series=[charts.Series("ok", [3], "#0a0"), charts.Series("dead", [1], "#a00")],
    )

    assert "<title>10:00 ok: 3</title>" in chart
    assert "<title>10:00 dead: 1</title>" in chart
    assert chart.count("<rect") == 1 + 2 + 2  # frame, two bars, two legend keys
