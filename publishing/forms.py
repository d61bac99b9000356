"""Form fields the admin's article form and the desk's story form share."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from publishing.reader_fields import normalize_tags, tags_text, unclosed_quote


class TagsField(forms.CharField):
    """Tags typed as one line, "python, 数据库, web"; a list of tags once cleaned."""

    def __init__(self, **kwargs):
        kwargs.pop("encoder", None)  # what a JSONField's formfield() passes
        kwargs.pop("decoder", None)
        kwargs.setdefault("required", False)
        kwargs.setdefault(
            "help_text",
            'Separated by commas; a tag with a comma in it in double quotes: "Hello, World".',
        )
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, list | tuple):
            return tags_text(value)
        return value

    def to_python(self, value):
        text = super().to_python(value)
        if isinstance(text, str) and (rest := unclosed_quote(text)) is not None:
            raise forms.ValidationError(
                _(
                    'This double quote is not closed: %(rest)s. Close it ("Hello, World") '
                    "or leave it out; as it is, everything after it would be one tag."
                ),
                code="tags_quote",
                params={"rest": rest},
            )
        return normalize_tags(text)

    def has_changed(self, initial, data) -> bool:
        try:
            return normalize_tags(initial or []) != self.to_python(data)
        except forms.ValidationError:
            return True
