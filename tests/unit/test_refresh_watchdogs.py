"""Which claims of the shared views' refresher send their own watchdog
(publishing.services.refresh._watch_claim): one per lease, not one per pass, and never
left to a watchdog that comes after the claim's own lease has ended."""

from __future__ import annotations

import pytest

from publishing.services import refresh


@pytest.fixture
def sent(monkeypatch) -> list[tuple[int, float]]:
    watchdogs: list[tuple[int, float]] = []
    monkeypatch.setattr(
        refresh, "_watch", lambda token, seconds: watchdogs.append((token, seconds))
    )
    monkeypatch.setattr(refresh, "_watch_due", 0.0)
    return watchdogs


def test_a_burst_of_passes_sends_one_watchdog_per_lease(sent):
    for token in (1, 2, 3):
        refresh._watch_claim(token, 10)
    assert sent == [(1, 10)]  # 1's comes within 2's and 3's leases and follows them


def test_a_pass_after_a_full_check_sends_its_own_watchdog(sent):
    """A full check's lease is PUBLISH_CATCHUP_TIME_LIMIT (330 s): its watchdog comes
    minutes after the next pass's 10 s lease has ended; a pass killed meanwhile must be
    followed within its own lease (docs/design.md), so it sends its own."""
    refresh._watch_claim(1, 330)
    refresh._watch_claim(2, 10)
    refresh._watch_claim(3, 10)
    assert sent == [(1, 330), (2, 10)]
