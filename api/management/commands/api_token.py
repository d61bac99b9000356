"""python manage.py api_token USERNAME [--name NAME] [--scope read|write]: prints a new
API token (only the token, on stdout, so a script can take it)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from api.exceptions import TokenRefused
from api.models import TokenScope
from api.tokens import token_create
from work.commands import DatabaseCommand


class Command(DatabaseCommand):
    help = (
        "Make a new API token for a staff user with a permission on articles and print "
        "it (only its hash is stored: it cannot be shown again). Revoke tokens in the admin."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username", help="an active staff user")
        parser.add_argument("--name", default="", help="what will use it (a CI job, a tool)")
        parser.add_argument(
            "--scope",
            choices=TokenScope.values,
            default=TokenScope.READ,
            help="read (the default): GET only; write: everything the user's permissions "
            "allow. Ask for write only for a program that writes.",
        )

    def handle(self, *args, username: str, name: str, scope: str, **options) -> None:
        users = get_user_model()
        try:
            user = users._default_manager.get_by_natural_key(username)
        except users.DoesNotExist:
            raise CommandError(f"No user named {username!r}.") from None
        try:
            _row, token = token_create(user=user, name=name[:100], scope=scope)
        except TokenRefused as exc:
            raise CommandError(f"No token made: {exc}") from None
        self.stdout.write(token)
