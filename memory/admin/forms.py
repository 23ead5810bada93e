"""The record page's form: only what an administrator may correct."""
from __future__ import annotations

from django import forms
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy as _

from memory.models import MemoryRecord
from memory.services.rules import UPDATABLE_FIELDS


class MemoryRecordForm(forms.ModelForm):
    confidence = forms.FloatField(label=capfirst(_("confidence")), min_value=0.0, max_value=1.0)

    class Meta:
        model = MemoryRecord
        fields = UPDATABLE_FIELDS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A field counts as changed when it differs from the stored record, not from a hidden
        # copy the browser posts back (Django adds one for fields with callable defaults).
        for field in self.fields.values():
            field.show_hidden_initial = False

    def clean_metadata(self):
        metadata = self.cleaned_data["metadata"]
        if metadata is None:  # the field left empty
            return {}
        if not isinstance(metadata, dict):
            raise forms.ValidationError(_("Metadata is a JSON object."))
        return metadata
