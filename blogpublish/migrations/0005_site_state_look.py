"""The look the shared views were last built in (blogpublish.site.look.shared_look): a
site upgraded to it has none, so its next refresh pass rebuilds the shared views once."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("blogpublish", "0004_image_renditions"),
    ]

    operations = [
        migrations.AddField(
            model_name="sitestate",
            name="look",
            field=models.CharField(blank=True, db_default="", default="", max_length=64),
        ),
        migrations.AddField(
            model_name="sitestate",
            name="look_born",
            field=models.FloatField(db_default=0.0, default=0.0),
        ),
    ]
