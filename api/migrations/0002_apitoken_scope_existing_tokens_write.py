"""Tokens get a scope (read or write). The tokens that exist already become write, which
is what they could do before scopes existed, so an upgrade breaks no program; a token
made from now on is read unless write is asked for."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("api", "0001_initial"),
    ]

    operations = [
        # The existing rows are filled with "write" ...
        migrations.AddField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(default="write", max_length=5),
            preserve_default=False,
        ),
        # ... and new ones default to "read".
        migrations.AlterField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(
                choices=[("read", "read (GET only)"), ("write", "write (all its user may do)")],
                default="read",
                help_text="read: GET only. write: everything the user's permissions allow. "
                "Fixed when the token is made.",
                max_length=5,
            ),
        ),
        migrations.AddConstraint(
            model_name="apitoken",
            constraint=models.CheckConstraint(
                condition=models.Q(("scope__in", ["read", "write"])),
                name="api_token_scope_known",
            ),
        ),
    ]
