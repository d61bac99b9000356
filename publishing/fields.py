"""The slug's field: Django's unicode SlugField with marks allowed (validators.
validate_slug_chars), in the model and in every form made from it."""

from __future__ import annotations

from django import forms
from django.db import models

from publishing.validators import validate_slug_chars


class SlugFormField(forms.SlugField):
    default_validators = [validate_slug_chars]

    def __init__(self, **kwargs):
        kwargs.pop("allow_unicode", None)  # as the model field's, for the same reason
        super().__init__(**kwargs)
        self.allow_unicode = True


class SlugField(models.SlugField):
    """A SlugField(allow_unicode=True) whose characters are letters of any script with
    their marks, digits, `-` and `_`: the same column."""

    default_validators = [validate_slug_chars]

    def __init__(self, *args, **kwargs):
        # Not passed on: Django's would put its own validator in place of ours, in the
        # list CharField's __init__ reads.
        kwargs.pop("allow_unicode", None)
        super().__init__(*args, **kwargs)
        self.allow_unicode = True

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        kwargs.pop("allow_unicode", None)
        return name, path, args, kwargs

    def formfield(self, **kwargs):
        return super().formfield(**{"form_class": SlugFormField, **kwargs})
