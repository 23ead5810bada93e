"""What every console page builds on: the Django admin at /console/, every page limited
to the administrator's own organisation. Each app's admin.py builds on `OrganisationScopedAdmin`;
writes go through the apps' services, like the API's."""
from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.http import Http404
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

from core_memory.base.callers import Caller
from core_memory.base.console.selectors import EVERY_ORGANISATION, administered_organisation_id, console_actor
from core_memory.base.console.times import shown_time


def person_url(site: admin.AdminSite, organisation_id: str, subject: str) -> str:
    """The console page of a person of an organisation (core_memory.console.persons)."""
    return reverse(f"{site.name}:persons_person_page", args=[organisation_id, quote(subject)])


def thread_url(site: admin.AdminSite, thread_id: str) -> str:
    """The console page of a thread and its responses' memory traces (core_memory.console.threads)."""
    return reverse(f"{site.name}:threads_thread_change", args=[quote(thread_id)])


class TextInputFilter(admin.SimpleListFilter):
    """A list filter typed in rather than picked: an exact value of one field (`field_name`)."""

    template = "admin/console/input_filter.html"
    field_name = ""

    def lookups(self, request, model_admin):
        return [("", "")]  # Django shows a filter only when it has choices; the input is the choice

    def choices(self, changelist):
        yield {
            "value": self.value() or "",
            "parameter_name": self.parameter_name,
            "kept": [(name, values) for name, values in changelist.filter_params.items() if name != self.parameter_name],
            "clear_query_string": changelist.get_query_string(remove=[self.parameter_name]),
        }

    def queryset(self, request, queryset):
        value = (self.value() or "").strip()
        return queryset.filter(**{self.field_name: value}) if value else queryset


class OrganisationScopedAdmin(admin.ModelAdmin):
    """Limits every list, object page and choice to the administrator's organisation,
    through each model's own scoped entry (`for_organisation`, core_memory.base.tenancy).

    Superusers see every organisation. Another organisation's object is a 404, never a
    redirect that would admit it exists.
    """

    # --- scope ------------------------------------------------------------
    def organisation_id(self, request) -> str | None:
        if not hasattr(request, "_console_organisation_id"):
            request._console_organisation_id = administered_organisation_id(user=request.user)
        return request._console_organisation_id

    def actor(self, request) -> str:
        return console_actor(user=request.user)

    def caller(self, request, organisation_id: str, subject: str | None = None) -> Caller:
        """The administrator asking in `organisation_id`: hers, or for a superuser the
        organisation of the object the page is about."""
        return Caller.console(organisation_id=organisation_id, actor=self.actor(request), subject=subject)

    def scope(self, queryset, request):
        """`queryset` within her organisation (every organisation for a superuser)."""
        organisation_id = self.organisation_id(request)
        if organisation_id is EVERY_ORGANISATION:
            return queryset
        if not organisation_id:
            return queryset.none()
        return queryset.for_organisation(organisation_id)

    def scoped(self, model, request):
        """`model`'s rows of her organisation."""
        return self.scope(model.objects.unscoped(), request)

    def get_queryset(self, request):
        return self.scope(super().get_queryset(request), request)

    def get_object(self, request, object_id, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        if obj is None:
            raise Http404(_("No such object."))
        return obj

    # --- writes: the services own their (durable) transactions, so the admin's
    # own atomic wrapper around a POST would refuse them; the wrapper is left out.
    def changeform_view(self, request, object_id=None, form_url="", extra_context=None):
        return self._changeform_view(request, object_id, form_url, extra_context)

    def delete_view(self, request, object_id, extra_context=None):
        return self._delete_view(request, object_id, extra_context)

    # --- choices and saving -------------------------------------------------
    def _scoped_choices(self, related_model, request):
        if hasattr(related_model.objects, "for_organisation"):
            return self.scoped(related_model, request)
        return None

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        queryset = self._scoped_choices(db_field.related_model, request)
        if queryset is not None:
            kwargs["queryset"] = queryset
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        queryset = self._scoped_choices(db_field.related_model, request)
        if queryset is not None:
            kwargs["queryset"] = queryset
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def get_exclude(self, request, obj=None):
        excluded = list(super().get_exclude(request, obj) or ())
        if self.organisation_id(request) is not EVERY_ORGANISATION and self._has_organisation_field():
            excluded.append("organisation")
        return excluded

    def organisation_for_new(self, request, form):
        """The organisation a new object belongs to: hers, or the one a superuser chose."""
        organisation_id = self.organisation_id(request)
        if organisation_id:
            return self.model._meta.get_field("organisation").related_model.objects.get(pk=organisation_id)
        return form.cleaned_data["organisation"]

    @staticmethod
    def adopt(obj, saved) -> None:
        """Make the admin's unsaved `obj` the row a service created, for the pages that follow."""
        for field in saved._meta.concrete_fields:
            setattr(obj, field.attname, getattr(saved, field.attname))
        obj._state.adding = False

    def save_model(self, request, obj, form, change):
        if not change and self._has_organisation_field() and self.organisation_id(request):
            obj.organisation_id = self.organisation_id(request)
        super().save_model(request, obj, form, change)

    def _has_organisation_field(self) -> bool:
        return any(field.name == "organisation" for field in self.model._meta.concrete_fields)

    # --- columns our models leave without a translated name (Django would show "Created at") ---
    @admin.display(description=_("created at"), ordering="created_at")
    def created(self, obj):
        return shown_time(obj.created_at)

    @admin.display(description=_("updated at"), ordering="updated_at")
    def updated(self, obj):
        return shown_time(obj.updated_at)

    # --- permissions: a staff user bound to no organisation administers nothing ---
    def _administers(self, request) -> bool:
        return self.organisation_id(request) is EVERY_ORGANISATION or bool(self.organisation_id(request))

    def has_module_permission(self, request):
        return self._administers(request) and super().has_module_permission(request)

    def has_view_permission(self, request, obj=None):
        return self._administers(request) and super().has_view_permission(request, obj)

    def has_add_permission(self, request):
        return self._administers(request) and super().has_add_permission(request)

    def has_change_permission(self, request, obj=None):
        return self._administers(request) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return self._administers(request) and super().has_delete_permission(request, obj)


class SoftDeleteScopedAdmin(OrganisationScopedAdmin):
    """For models whose delete service only marks the row deleted (indexes, records):
    nothing related is removed, so the confirmation lists the objects alone."""

    def get_deleted_objects(self, objs, request):
        return [str(obj) for obj in objs], {self.model._meta.verbose_name_plural: len(objs)}, set(), []


class ReadOnlyScopedAdmin(OrganisationScopedAdmin):
    """Shown, never added, changed or deleted from the console — not even by a superuser."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
