"""python manage.py api_token USERNAME [--name NAME]: prints a new API token."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from api.exceptions import TokenRefused
from api.tokens import token_create


class Command(BaseCommand):
    help = (
        "Make a new API token for a staff user and print it (only its hash is stored: "
        "it cannot be shown again). Revoke tokens in the admin."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username", help="an active staff user")
        parser.add_argument("--name", default="", help="what will use it (a CI job, a tool)")

    def handle(self, *args, username: str, name: str, **options) -> None:
        users = get_user_model()
        try:
            user = users._default_manager.get_by_natural_key(username)
        except users.DoesNotExist:
            raise CommandError(f"No user named {username!r}.") from None
        try:
            _row, token = token_create(user=user, name=name[:100])
        except TokenRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(token)
