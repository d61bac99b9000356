"""The tags bench's report (bench/tags.py): each variant's median and its ratios."""

import argparse

import pytest

from bench.run import tag_variants
from bench.tags import tags_report


def run(tags: int, burst_tags: int, drain_s: float) -> dict:
    burst = {"n": 1000, "drain_s": drain_s, "pages_lag_ms": 100.0}
    if burst_tags:
        burst["tag_pages_lag_ms"] = 2000.0
    return {
        "tags": tags,
        "burst_tags": burst_tags,
        "tags_in_use": tags,
        "background": 10_000,
        "burst": burst,
    }


def test_each_tagged_variant_is_compared_with_none_and_with_the_fewest_tags() -> None:
    lines = tags_report([run(0, 0, 1.0), run(10, 10, 2.0), run(1000, 1000, 1.6), run(1000, 0, 1.0)])
    text = "\n".join(lines)
    assert "median 1000.0 articles/s, none" in text
    assert "3 of the 10 tags in use each: ratio 0.50 to none (target ≥ 0.90)\n" in text + "\n"
    assert "3 of the 1,000 tags in use each: ratio 0.62 to none" in text
    assert "1.25 to 10 tags in use" in text
    assert "untagged burst as none, on a site with 1,000 tags in use: ratio 1.00" in text


def test_a_failed_run_is_shown_as_it_came() -> None:
    lines = tags_report([{"error": "worker died"}, run(0, 0, 1.0)])
    assert "   1 {'error': 'worker died'}" in lines


@pytest.mark.parametrize("value", ["none,tagged", "few,tagged,untagged,none"])
def test_variants_named(value: str) -> None:
    assert tag_variants(value) == value


@pytest.mark.parametrize("value", ["bogus", "none,", "none,tags"])
def test_unknown_variants_refused(value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        tag_variants(value)
