from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("blogpublish", "0003_preview_budget_and_slots"),
    ]

    operations = [
        migrations.AddField(
            model_name="image",
            name="renditions",
            field=models.JSONField(blank=True, default=None, null=True),
        ),
    ]
