"""Indexes and their memory stores in the console, written through stores.services.

A store's sections are a form of plain settings (core_memory.base.console.forms), each with its
help and default, validated by the same serializers as `PATCH /v1/memory/stores/{id}`; a
section whose settings changed is sent whole. Stores are titled by their index's name."""
from __future__ import annotations

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext
from rest_framework.exceptions import ValidationError as DrfValidationError

from core_memory.base.console.forms import SettingsFields, field_name_of
from core_memory.base.console.pages import OrganisationScopedAdmin, SoftDeleteScopedAdmin
from core_memory.base.errors import ApplicationError
from core_memory.base.validation import first_error
from core_memory.organisations.models import Organisation
from extraction.models import ExtractionSwitch
from extraction.selectors import STATE_LABELS, switch_state
from maintenance.models import MaintenanceJob
from maintenance.selectors import store_maintenance_status
from stores.configuration import SECTION_SERIALIZERS, TYPE_LABELS, store_sections_normalise
from memory.embedding.switching import index_switch_progress
from stores.models import SECTION_DEFAULTS, KnowledgeIndex, MemoryStore
from stores.services import (
    index_create,
    index_delete,
    index_embeddings_check,
    index_models_check,
    store_sections_validate,
    store_update,
)

SECTIONS = tuple(SECTION_DEFAULTS)
SECTION_TITLES = {
    "injection": _("Injection"),
    "lessons": _("Lessons"),
    "promotion": _("Promotion"),
    "maintenance": _("Maintenance"),
    "expiry": _("Expiry"),
}
SETTING_TEXTS = {
    "token_budget": (
        _("token budget"),
        _("The most tokens a turn's block may take from this store; empty: the key's or agent's budget (the lower of the two applies)."),
    ),
    "organisation_share": (
        _("organisation share"),
        _("The most of the budget that shared records may use in a turn for a person, 0 to 0.4."),
    ),
    "rank": (_("ranking"), _("How records are ordered within a section: by confidence, by relevance to the turn's topic, or both.")),
    "episodes_limit": (_("past sessions"), _("How many episodes a turn gets in its past sessions section; 0: none.")),
    "commitments.inject_limit": (_("commitments injected"), _("The most open commitments a turn gets.")),
    "enabled": (_("on"), ""),
    "min_episodes": (_("episodes needed"), _("How many unused episodes of a person that went the same way one lesson needs.")),
    "labels": (_("labels"), _("A JSON object of label name to value, put into the metadata of promoted records.")),
    "lifetime_days": (
        _("lifetime in days"),
        _("A record of this type stops being true this many days after it is written, unless its write says when; empty: it does not expire."),
    ),
}
SECTION_ENABLED_TEXTS = {
    "lessons": (_("store lessons"), _("Learn a working method or a pitfall from a person's episodes (maintenance).")),
    "promotion": (
        _("promotion"),
        _("Propose shared records from facts several persons hold. Needs the organisation's improvements capability."),
    ),
    "maintenance": (_("maintenance"), _("Mark contradicting records as contested and run the store's lessons and analyses.")),
}


def section_fields(name: str) -> SettingsFields:
    texts = dict(SETTING_TEXTS)
    if name in SECTION_ENABLED_TEXTS:
        texts["enabled"] = SECTION_ENABLED_TEXTS[name]
    return SettingsFields(SECTION_SERIALIZERS[name], prefix=name, texts=texts, type_labels=TYPE_LABELS)


class KnowledgeIndexForm(forms.ModelForm):
    # Set by the page: the organisation of the administrator (None: a superuser, who chooses one).
    organisation_id: str | None = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in ("embedding_model", "rerank_depth"):
            if name in self.fields:
                self.fields[name].required = False  # left empty: the default

    def clean(self):
        cleaned = super().clean()
        organisation = cleaned.get("organisation")
        organisation_id = self.organisation_id or (organisation.pk if organisation is not None else None)
        if organisation_id is not None:
            chosen = {name: cleaned.get(name) or None for name in ("embedding_model", "rerank_model")}
            try:
                index_models_check(organisation=Organisation.objects.get(pk=organisation_id), changes=chosen)
            except ApplicationError as error:
                self.add_error(error.param if error.param in self.fields else None, error.message)
        return cleaned

    def clean_embeddings(self):
        embeddings = self.cleaned_data.get("embeddings", False)
        try:
            index_embeddings_check(embeddings=embeddings)
        except ApplicationError as error:
            raise forms.ValidationError(error.message) from error
        return embeddings


@admin.register(KnowledgeIndex)
class KnowledgeIndexAdmin(SoftDeleteScopedAdmin):  # deleting marks the index deleted
    form = KnowledgeIndexForm
    list_display = ("name", "id", "pipeline", "embeddings", "conversation", "embedding_model", "rerank_model", "created")
    search_fields = ("name", "id")
    fields = ("name", "embeddings", "conversation", "embedding_model", "rerank_model", "rerank_depth")
    readonly_fields = ("embedding_switch",)

    def get_form(self, request, obj=None, **kwargs):
        form = super().get_form(request, obj, **kwargs)
        return type(form.__name__, (form,), {"organisation_id": self.organisation_id(request)})

    @admin.display(description=_("switching to"))
    def embedding_switch(self, index: KnowledgeIndex) -> str:
        progress = index_switch_progress(index=index)
        if progress is None:
            return "—"
        return _("%(model)s: %(embedded)s of %(records)s records embedded") % {
            "model": progress.model, "embedded": progress.embedded, "records": progress.records,
        }

    def get_queryset(self, request):
        return super().get_queryset(request).live()

    def has_change_permission(self, request, obj=None):
        return False  # an index is created and deleted, never edited

    def save_model(self, request, obj, form, change):
        organisation = self.organisation_for_new(request, form)
        index = index_create(
            organisation=organisation,
            caller=self.caller(request, organisation.id),
            name=obj.name,
            embeddings=obj.embeddings,
            conversation=obj.conversation,
            embedding_model=obj.embedding_model or None,
            rerank_model=obj.rerank_model or None,
            rerank_depth=obj.rerank_depth or KnowledgeIndex._meta.get_field("rerank_depth").default,
        )
        self.adopt(obj, index)

    def get_fields(self, request, obj=None):
        if obj is None and self.organisation_id(request) is None:
            return ("organisation", *self.fields)
        return self.fields if obj is None else (*self.fields, "embedding_switch")

    def delete_model(self, request, obj):
        index_delete(caller=self.caller(request, obj.organisation_id), index=obj)

    def delete_queryset(self, request, queryset):
        for index in queryset:
            index_delete(caller=self.caller(request, index.organisation_id), index=index)


SECTION_SETTINGS = {name: section_fields(name) for name in SECTIONS}


class MemoryStoreFormBase(forms.ModelForm):
    """One field per setting of every section (declared by `MemoryStoreForm` below); the sections
    whose settings changed are validated (stores.services.store_sections_validate) and sent whole."""

    class Meta:
        model = MemoryStore
        fields = ()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, settings in SECTION_SETTINGS.items():
            stored = getattr(self.instance, name) if self.instance.pk else SECTION_DEFAULTS[name]()
            self.initial.update(settings.initial(stored))

    def clean(self):
        cleaned = super().clean()
        sent = {}
        for name, settings in SECTION_SETTINGS.items():
            wanted = settings.data(cleaned)
            try:
                unchanged = store_sections_normalise({name: wanted})[name] == getattr(self.instance, name)
            except DrfValidationError:
                unchanged = False  # sent, so that store_sections_validate names the error
            if not unchanged:
                sent[name] = wanted
        try:
            cleaned["sections"] = store_sections_validate(organisation=self.instance.index.organisation, sections=sent, may_promote=True)
        except DrfValidationError as error:
            path, message = first_error(error.detail)
            section, _dot, setting = (path or "").partition(".")
            self.add_error(SECTION_SETTINGS[section].field_for(setting) if section in SECTION_SETTINGS else None, message)
        except ApplicationError as error:
            # Refused whole (promotion without `improvements`): the error sits on the section's switch.
            name = field_name_of(f"{error.param}.enabled") if error.param else ""
            self.add_error(name if name in self.fields else None, error.message)
        return cleaned


MemoryStoreForm = type(
    "MemoryStoreForm",
    (MemoryStoreFormBase,),
    {name: field for settings in SECTION_SETTINGS.values() for name, field in settings.fields().items()},
)


@admin.register(MemoryStore)
class MemoryStoreAdmin(OrganisationScopedAdmin):
    """Every section of a store; a section saved replaces it whole. Promotion
    is open to administrators of an organisation with `improvements`."""

    form = MemoryStoreForm
    list_display = ("index_name", "lessons_enabled", "maintenance_enabled", "promotion_enabled", "updated")
    list_select_related = ("index",)
    search_fields = ("index__name", "index__id")
    readonly_fields = ("index_link", "updated", "extraction", "maintenance_status")

    fieldsets = [
        (None, {"fields": ("index_link", "updated", "extraction", "maintenance_status")}),
        *((SECTION_TITLES[name], {"fields": tuple(settings.fields())}) for name, settings in SECTION_SETTINGS.items()),
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).filter(index__deleted_at__isnull=True).select_related("index")

    def has_add_permission(self, request):
        return False  # a store is made with its index

    def has_delete_permission(self, request, obj=None):
        return False  # and goes with it

    @admin.display(description=_("index"), ordering="index__name")
    def index_name(self, store: MemoryStore) -> str:
        return str(store.index)  # its name and id

    @admin.display(description=_("index"))
    def index_link(self, store: MemoryStore) -> str:
        return str(store.index)

    @admin.display(description=_("extraction"))
    def extraction(self, store: MemoryStore):
        """Whether extraction reads conversations into this store, and the page that sets it — also
        for a store that has no switch yet."""
        switch = ExtractionSwitch.objects.for_organisation(store.index.organisation_id).filter(pk=store.index_id).first()
        state = switch_state(switch=switch) if switch is not None else None
        url = reverse(f"{self.admin_site.name}:extraction_extractionswitch_change", args=[quote(store.index_id)])
        shown = STATE_LABELS.get(state, state) if state else _("no switch yet (off)")
        return format_html('{} · <a href="{}" id="extraction-link">{}</a>', shown, url, _("set extraction"))

    @admin.display(description=_("maintenance, lately"))
    def maintenance_status(self, store: MemoryStore):
        """Its last run (what it marked, learnt and proposed) and its jobs by status (maintenance.selectors)."""
        status = store_maintenance_status(index=store.index)
        run = status.last_run
        jobs = ", ".join(f"{label}: {status.jobs.get(value, 0)}" for value, label in MaintenanceJob.Status.choices)
        if run is None:
            return format_html("{} · {}", _("it has not run yet"), jobs)
        counts = (
            ngettext("%(count)d pair marked contested", "%(count)d pairs marked contested", run.contested) % {"count": run.contested},
            ngettext("%(count)d lesson written", "%(count)d lessons written", run.lessons) % {"count": run.lessons},
            ngettext("%(count)d proposal made", "%(count)d proposals made", run.proposals) % {"count": run.proposals},
            ngettext("%(count)d error", "%(count)d errors", run.errors) % {"count": run.errors},
        )
        return format_html(
            "{} {} · {} · {} · {} · {} · {}",
            _("last run"), formats.date_format(timezone.localtime(run.started_at), "DATETIME_FORMAT"), *counts, jobs,
        )

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
        updated = store_update(
            caller=self.caller(request, obj.index.organisation_id), store=obj, sections=form.cleaned_data["sections"], may_promote=True
        )
        obj.updated_at = updated.updated_at
