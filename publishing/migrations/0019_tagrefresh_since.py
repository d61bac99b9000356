"""Tag pages paginated (issue 21): a tag's refresh request says from which live date its
archive pages are to be written again (TagRefresh.since). A nullable column: the
previous release's inserts (without it) ask for every page, which is right."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("publishing", "0018_validate_reserved_slugs")]

    operations = [
        migrations.AddField(
            model_name="tagrefresh",
            name="since",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
