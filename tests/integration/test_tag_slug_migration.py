"""Migration 0023: a Tag row whose page folder name was too long for a file name gets
the slug reader_fields.tag_slug now gives it; the others are left as they are."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps

from publishing.models import Tag
from publishing.reader_fields import tag_key, tag_slug
from publishing.validators import SLUG_MAX_BYTES

pytestmark = pytest.mark.django_db

migration = importlib.import_module("publishing.migrations.0023_tag_slugs_fit_a_file_name")


def test_the_tags_whose_folder_did_not_fit_get_a_slug_that_does():
    long, short = "数" * 100, "数据库"
    Tag.objects.create(kind="tag", key=tag_key(long), name=long, slug=tag_key(long))
    Tag.objects.create(kind="tag", key=tag_key(short), name=short, slug="kept-as-it-was")

    migration.slugs_that_fit(apps, None)

    slugs = dict(Tag.objects.values_list("name", "slug"))
    assert slugs[long] == tag_slug(long) and len(slugs[long].encode()) <= SLUG_MAX_BYTES
    assert slugs[short] == "kept-as-it-was"
