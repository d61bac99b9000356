"""System checks of the pipeline's configuration (`manage.py check`, `migrate`)."""

from __future__ import annotations

from django.core.checks import Error, register


@register()
def publishers_build(app_configs, **kwargs) -> list[Error]:
    """Every class of PUBLISH_PUBLISHERS imports and has the publisher interface: found
    at the deploy's `migrate`, not by every attempt failing after it."""
    from publishing.publishers import publishers_problems

    return [
        Error(
            problem,
            hint="publishing/publishers.py says what a publisher is; subclass BasePublisher "
            "for the defaults.",
            id="publishing.E001",
        )
        for problem in publishers_problems()
    ]
