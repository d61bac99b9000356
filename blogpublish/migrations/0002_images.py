from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("blogpublish", "0001_site_state"),
    ]

    operations = [
        migrations.CreateModel(
            name="Image",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("path", models.CharField(max_length=120, unique=True)),
                ("original_name", models.CharField(blank=True, default="", max_length=255)),
                ("size", models.PositiveIntegerField()),
                ("width", models.PositiveIntegerField()),
                ("height", models.PositiveIntegerField()),
                ("uploaded_at", models.DateTimeField()),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
            ],
        ),
    ]
