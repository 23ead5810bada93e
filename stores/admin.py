"""Indexes and their memory stores in the console (R-10.3), written through stores.services."""
from __future__ import annotations

from django import forms
from django.contrib import admin
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import ValidationError as DrfValidationError

from core_memory.base.errors import ApplicationError
from core_memory.base.validation import first_error
from core_memory.console.admin import OrganisationScopedAdmin, SoftDeleteScopedAdmin
from stores.models import SECTION_DEFAULTS, KnowledgeIndex, MemoryStore
from stores.services import index_create, index_delete, store_sections_validate, store_update

SECTIONS = tuple(SECTION_DEFAULTS)


@admin.register(KnowledgeIndex)
class KnowledgeIndexAdmin(SoftDeleteScopedAdmin):  # deleting marks the index deleted
    list_display = ("name", "id", "pipeline", "embeddings", "created_at")
    search_fields = ("name", "id")
    fields = ("name", "embeddings")

    def get_queryset(self, request):
        return super().get_queryset(request).live()

    def has_change_permission(self, request, obj=None):
        return False  # an index is created and deleted, never edited

    def save_model(self, request, obj, form, change):
        index = index_create(
            organisation=self.organisation_for_new(request, form),
            actor=self.actor(request),
            name=obj.name,
            embeddings=obj.embeddings,
        )
        self.adopt(obj, index)

    def get_fields(self, request, obj=None):
        if obj is None and self.organisation_id(request) is None:
            return ("organisation", *self.fields)
        return self.fields

    def delete_model(self, request, obj):
        index_delete(index=obj, actor=self.actor(request))

    def delete_queryset(self, request, queryset):
        for index in queryset:
            index_delete(index=index, actor=self.actor(request))


class MemoryStoreForm(forms.ModelForm):
    class Meta:
        model = MemoryStore
        fields = SECTIONS

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A section counts as sent when it differs from the stored one, not from a hidden
        # copy the browser posts back (Django adds one for fields with callable defaults).
        for name in SECTIONS:
            self.fields[name].show_hidden_initial = False

    def clean(self):
        cleaned = super().clean()
        sent = {name: cleaned[name] for name in SECTIONS if name in self.changed_data and name in cleaned}
        try:
            cleaned["sections"] = store_sections_validate(
                organisation=self.instance.index.organisation, sections=sent, may_promote=True
            )
        except DrfValidationError as error:
            path, message = first_error(error.detail)
            section, _, field = (path or "").partition(".")
            self.add_error(section if section in SECTIONS else None, f"{field}: {message}" if field else message)
        except ApplicationError as error:
            self.add_error(error.param if error.param in SECTIONS else None, error.message)
        return cleaned


@admin.register(MemoryStore)
class MemoryStoreAdmin(OrganisationScopedAdmin):
    """Every section of a store; a section saved replaces it whole (R-4.3). Promotion
    is open to administrators of an organisation with `improvements`."""

    form = MemoryStoreForm
    list_display = ("index", "lessons_enabled", "maintenance_enabled", "promotion_enabled", "updated_at")
    list_select_related = ("index",)
    search_fields = ("index__name", "index__id")
    fields = ("index_link", *SECTIONS, "updated_at")
    readonly_fields = ("index_link", "updated_at")

    def get_queryset(self, request):
        return super().get_queryset(request).filter(index__deleted_at__isnull=True)

    def has_add_permission(self, request):
        return False  # a store is made with its index

    def has_delete_permission(self, request, obj=None):
        return False  # and goes with it

    @admin.display(description=_("index"))
    def index_link(self, store: MemoryStore) -> str:
        return str(store.index)

    @admin.display(boolean=True, description=_("lessons"))
    def lessons_enabled(self, store: MemoryStore) -> bool:
        return bool(store.lessons.get("enabled"))

    @admin.display(boolean=True, description=_("maintenance"))
    def maintenance_enabled(self, store: MemoryStore) -> bool:
        return bool(store.maintenance.get("enabled"))

    @admin.display(boolean=True, description=_("promotion"))
    def promotion_enabled(self, store: MemoryStore) -> bool:
        return bool(store.promotion.get("enabled"))

    def save_model(self, request, obj, form, change):
        updated = store_update(store=obj, sections=form.cleaned_data["sections"], actor=self.actor(request), may_promote=True)
        obj.updated_at = updated.updated_at
