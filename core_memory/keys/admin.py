"""Keys in the console: capabilities, policy and memory configuration,
written through core_memory.keys.services like the API's key routes. The memory
configuration is a form of plain settings (core_memory.base.console.forms), validated by the
same serializer as the API's (`memory_config_normalise`)."""
from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import ValidationError as DrfValidationError

from core_memory.base.console.forms import SettingsFields, field_name_of
from core_memory.base.console.pages import OrganisationScopedAdmin
from core_memory.base.errors import ApplicationError
from core_memory.base.validation import first_error
from core_memory.keys.configuration import MemoryConfigSerializer, memory_config_normalise
from core_memory.keys.models import ALL_INDEXES, CAPABILITY_LABELS, CAPABILITY_NAMES, KEY_CAPABILITIES, ApiKey
from core_memory.keys.services import key_create, key_delete, key_revoke, key_rights_validate, key_update
from core_memory.organisations.models import Organisation
from stores.configuration import TYPE_LABELS
from stores.models import KnowledgeIndex

EDITABLE_FIELDS = ("name", "capabilities", "policy", "memory", "pii_redaction", "expires_at")
MEMORY_TEXTS = {
    "retrieval_tool": (_("search tool"), _("The key may offer its indexes' search tools in a turn.")),
    "write_tool": (_("write tool"), _("The key may offer its indexes' write tools in a turn.")),
    "injection.enabled": (_("inject memory"), _("Turns of this key get a memory block.")),
    "injection.index_id": (_("injected index"), _("The store whose records are injected.")),
    "injection.types": (_("types"), _("Only records of these types; empty: every type.")),
    "injection.metadata": (_("metadata"), _("A JSON object: only records whose metadata has every one of these values.")),
    "injection.min_confidence": (_("minimum confidence"), _("Only records whose effective confidence is at least this, 0 to 1.")),
    "injection.limit": (_("limit"), _("The most records about the person and shared records together.")),
    "injection.token_budget": (_("token budget"), _("The most tokens the whole block may use.")),
    "decay.half_life_days": (
        _("half-life in days"),
        _("Effective confidence halves every this many days since the record last changed; empty: the type does not decay."),
    ),
}
MEMORY_SETTINGS = SettingsFields(
    MemoryConfigSerializer,
    prefix="memory",
    texts=MEMORY_TEXTS,
    choices=lambda path: [] if path == "injection.index_id" else None,
    type_labels=TYPE_LABELS,
)
INDEX_FIELD = field_name_of("memory.injection.index_id")


class ApiKeyFormBase(forms.ModelForm):
    organisation_id: str | None = None  # set per request by ApiKeyAdmin.get_form

    capabilities = forms.MultipleChoiceField(
        label=_("capabilities"),
        choices=[(capability, CAPABILITY_LABELS[capability]) for capability in KEY_CAPABILITIES],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text=_("Memory needs knowledge."),
    )
    policy_read = forms.MultipleChoiceField(label=_("may read"), widget=forms.CheckboxSelectMultiple, required=False)
    policy_write = forms.MultipleChoiceField(label=_("may write"), widget=forms.CheckboxSelectMultiple, required=False)

    class Meta:
        model = ApiKey
        fields = ("organisation", "name", "capabilities", "pii_redaction", "expires_at")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        indexes = KnowledgeIndex.objects.unscoped()
        if self.organisation_id:
            indexes = KnowledgeIndex.objects.for_organisation(self.organisation_id)
        indexes = indexes.live().order_by("name")
        choices = [(ALL_INDEXES, _("every index, also future ones"))] + [(index.id, str(index)) for index in indexes]
        for right in ("read", "write"):
            field = self.fields[f"policy_{right}"]
            field.choices = choices
            field.initial = list((self.instance.policy or {}).get(right, [])) if self.instance.pk else []
        self.fields[INDEX_FIELD].choices = [("", "—")] + [(index.id, str(index)) for index in indexes]
        self.initial.update(MEMORY_SETTINGS.initial(memory_config_normalise(self.instance.memory or None)))

    def _organisation(self) -> Organisation | None:
        if self.organisation_id:
            return Organisation.objects.get(pk=self.organisation_id)
        return self.cleaned_data.get("organisation")

    def clean(self):
        cleaned = super().clean()
        cleaned["policy"] = {"read": cleaned.pop("policy_read", []), "write": cleaned.pop("policy_write", [])}
        try:
            cleaned["memory"] = memory_config_normalise(MEMORY_SETTINGS.data(cleaned))
        except DrfValidationError as error:
            path, message = first_error(error.detail)
            self.add_error(MEMORY_SETTINGS.field_for(path), message)
            return cleaned
        organisation = self._organisation()
        if organisation is None:
            return cleaned
        try:
            key_rights_validate(
                organisation=organisation,
                capabilities=cleaned.get("capabilities", []),
                policy=cleaned["policy"],
                memory=cleaned["memory"],
            )
        except ApplicationError as error:
            field = {"capabilities": "capabilities", "policy.read": "policy_read", "policy.write": "policy_write"}
            target = next((name for prefix, name in field.items() if (error.param or "").startswith(prefix)), None)
            if target is None and (error.param or "").startswith("memory."):
                target = MEMORY_SETTINGS.field_for(error.param.removeprefix("memory."))
            self.add_error(target, error.message)
        return cleaned


ApiKeyForm = type("ApiKeyForm", (ApiKeyFormBase,), MEMORY_SETTINGS.fields())


@admin.register(ApiKey)
class ApiKeyAdmin(OrganisationScopedAdmin):
    form = ApiKeyForm
    list_display = ("name", "id", "capabilities_shown", "is_usable", "expires_at", "revoked_at", "created")
    list_filter = ("revoked_at",)
    search_fields = ("name", "id")
    readonly_fields = ("id", "secret_ending", "revoked_at", "created", "updated")
    actions = ("revoke_keys",)

    @admin.display(description=_("capabilities"), ordering="capabilities")
    def capabilities_shown(self, key: ApiKey) -> str:
        return ", ".join(str(CAPABILITY_NAMES.get(capability, capability)) for capability in key.capabilities) or "—"

    def get_fieldsets(self, request, obj=None):
        fields = ["name", "capabilities", "policy_read", "policy_write", "pii_redaction", "expires_at"]
        if obj is None and self.organisation_id(request) is None:
            fields.insert(0, "organisation")
        if obj is not None:
            fields = ["id", "secret_ending", *fields, "revoked_at", "created", "updated"]
        memory_fields = list(MEMORY_SETTINGS.fields())
        return [
            (None, {"fields": fields}),
            (_("Tools"), {"fields": [name for name in memory_fields if "__injection__" not in name and "__decay__" not in name]}),
            (_("Memory injection"), {"fields": [name for name in memory_fields if "__injection__" in name]}),
            (_("Decay"), {"fields": [name for name in memory_fields if "__decay__" in name]}),
        ]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        organisation_id = obj.organisation_id if obj is not None else self.organisation_id(request)
        return type(form.__name__, (form,), {"organisation_id": organisation_id})

    def has_change_permission(self, request, obj=None):
        # Revocation is final (key_update refuses a revoked key): the console shows it read-only.
        if obj is not None and obj.revoked_at is not None:
            return False
        return super().has_change_permission(request, obj)

    @admin.display(description=_("secret ends with"))
    def secret_ending(self, key: ApiKey) -> str:
        return key.secret_hint

    @admin.display(boolean=True, description=_("usable"))
    def is_usable(self, key: ApiKey) -> bool:
        return key.is_usable

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        if change:
            changed = {
                "policy" if name.startswith("policy_") else "memory" if name.startswith("memory__") else name
                for name in form.changed_data
            }
            changes = {field: data[field] for field in EDITABLE_FIELDS if field in changed}
            key_update(caller=self.caller(request, obj.organisation_id), key_id=obj.pk, changes=changes)
            return
        organisation = self.organisation_for_new(request, form)
        key, secret = key_create(
            organisation=organisation,
            caller=self.caller(request, organisation.id),
            **{field: data[field] for field in EDITABLE_FIELDS},
        )
        self.adopt(obj, key)
        messages.warning(request, _("The key's secret, shown only now: %(secret)s") % {"secret": secret})

    def delete_model(self, request, obj):
        key_delete(caller=self.caller(request, obj.organisation_id), key_id=obj.pk)

    def delete_queryset(self, request, queryset):
        for key in queryset:
            key_delete(caller=self.caller(request, key.organisation_id), key_id=key.pk)

    @admin.action(description=_("Revoke the selected keys"), permissions=["change"])
    def revoke_keys(self, request, queryset):
        for key in queryset:
            key_revoke(caller=self.caller(request, key.organisation_id), key_id=key.pk)
        self.message_user(request, _("Revoked: %(count)d") % {"count": queryset.count()})
