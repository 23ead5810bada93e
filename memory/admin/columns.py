"""The record list's columns and the record page's read-only fields: its links, its
contested mark, and its versions as a table."""
from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.template.defaultfilters import yesno
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from core_memory.base.console.diff import mapping_diff, text_diff, value_diff
from core_memory.base.console.pages import person_url, thread_url
from core_memory.base.console.times import shown_time
from core_memory.keys.actors import actor_labels
from memory.models import MemoryRecord, type_label
from memory.selectors import change_reason_parts, record_history
from memory.services.rules import COMMITMENT

EMPTY = "—"
RECORD_PAGE_VERSIONS = 20
# The moments the record page offers to show a record as it stood (any other by `?as_of=`).
AS_OF_CHOICES = ((timedelta(days=1), _("a day ago")), (timedelta(days=7), _("a week ago")), (timedelta(days=30), _("a month ago")))
# What each kind of version is called (memory.services.rules.change_reason's "what").
CHANGE_KINDS = {
    "created": _("created"),
    "confirmed": _("confirmed"),
    "corrected": _("created as a correction"),
    "ended": _("ended by a correction"),
    "updated": _("edited"),
    "deleted": _("deleted"),
    "contested": _("marked contested"),
    "no longer contested": _("no longer contested"),
    "merged": _("kept in a merge of duplicates"),
    "merged into": _("ended by a merge of duplicates"),
}


def moment(value) -> str:
    """To the second: versions often follow each other within a minute."""
    return shown_time(value, seconds=True)


class RecordColumns:
    """The columns and read-only fields of `MemoryRecordAdmin`, which mixes them in."""

    @admin.display(description=_("text"), ordering="text")
    def short_text(self, record: MemoryRecord):
        """One line, cut to the column's width; the whole text on hover and on the record's page."""
        return format_html('<span class="truncated" title="{}">{}</span>', record.text, Truncator(record.text).chars(300))

    @admin.display(description=_("type"), ordering="type")
    def type_name(self, record: MemoryRecord) -> str:
        return type_label(record.type)

    @admin.display(description=_("person"), ordering="subject")
    def person(self, record: MemoryRecord):
        """Her (or "shared"), and under it the thread the record came from, if any (its provenance)."""
        if record.subject is None:
            who = format_html("{}", _("shared"))
        else:
            who = format_html('<a href="{}">{}</a>', person_url(self.admin_site, record.organisation_id, record.subject), record.subject)
        if not record.thread_id:
            return who
        return format_html('{}<br><small class="provenance">{}</small>', who, self.provenance_line(record))

    @admin.display(description=_("index"), ordering="index__name")
    def index_name(self, record: MemoryRecord) -> str:
        return record.index.name

    @admin.display(description=_("created at"), ordering="created_at")
    def created_on(self, record: MemoryRecord) -> str:
        return shown_time(record.created_at, short=True)

    @admin.display(description=_("status · source"), ordering="status")
    def status_and_source(self, record: MemoryRecord) -> str:
        return f"{record.get_status_display()} · {record.get_source_display()}"

    @admin.display(description=_("confidence"), ordering="effective_confidence")
    def confidences(self, record: MemoryRecord) -> str:
        """Stored, and "→ effective" where decay makes them differ (the list's note says how it is read)."""
        stored = formats.number_format(record.confidence, 2)
        effective = formats.number_format(record.effective_confidence, 2)
        return stored if stored == effective else f"{stored} → {effective}"

    @admin.display(description=_("effective confidence"), ordering="effective_confidence")
    def effective_confidence(self, record: MemoryRecord) -> str:
        return formats.number_format(record.effective_confidence, 2)

    @admin.display(description=_("contested"), ordering="contested")
    def contested_badge(self, record: MemoryRecord):
        """A warning, not a tick: maintenance found a record this one contradicts."""
        if not record.contested:
            return EMPTY
        contradicted = [other.pk for other in record.contradicts.all()]
        if not contradicted:
            return format_html('<span class="badge-contested">{}</span>', _("contested"))
        return format_html_join(
            " ",
            '<a class="badge-contested" href="{}" title="{}">{}</a>',
            (
                (self.contested_url(record.pk, other_id), _("contradicts %(record)s") % {"record": other_id}, _("contested"))
                for other_id in contradicted
            ),
        )

    def provenance_line(self, record: MemoryRecord):
        """The thread a record came from (linked to its page) and how many of its items."""
        items = ngettext("%(count)d item", "%(count)d items", len(record.item_ids or [])) % {"count": len(record.item_ids or [])}
        return format_html('<a href="{}">{}</a> · {}', thread_url(self.admin_site, record.thread_id), _("thread"), items)

    @admin.display(description=_("thread"))
    def thread_link(self, record: MemoryRecord):
        if not record.thread_id:
            return EMPTY
        return format_html('<a href="{}">{}</a>', thread_url(self.admin_site, record.thread_id), record.thread_id)

    def record_url(self, record_id: str) -> str:
        return reverse(f"{self.admin_site.name}:memory_memoryrecord_change", args=[quote(record_id)])

    def record_link(self, record_id: str | None):
        if not record_id:
            return EMPTY
        return format_html('<a href="{}">{}</a>', self.record_url(record_id), record_id)

    def record_links(self, record_ids):
        return format_html_join(", ", "{}", ((self.record_link(record_id),) for record_id in record_ids)) or EMPTY

    @admin.display(description=_("replaces"))
    def replaces_link(self, record: MemoryRecord):
        return self.record_link(record.replaces_id)

    @admin.display(description=_("replaced by"))
    def replaced_by_link(self, record: MemoryRecord):
        return self.record_link(record.replaced_by_id)

    @admin.display(description=_("corrected by"))
    def corrections_links(self, record: MemoryRecord):
        return self.record_links(record.corrections.order_by("id").values_list("id", flat=True))

    @admin.display(description=_("as it stood"))
    def standing_at(self, record: MemoryRecord):
        """The record as it stood at the moment the page was asked for (`?as_of=`), from its
        history, with links to a few moments back."""
        now = timezone.now()
        links = format_html_join(
            " · ", '<a href="?{}">{}</a>', [(urlencode({"as_of": (now - back).isoformat()}), label) for back, label in AS_OF_CHOICES]
        )
        at = getattr(record, "console_as_of", None)
        if at is None:
            return links
        version = record_history(record=record).filter(history_date__lte=at).order_by("-history_date", "-history_id").first()
        if version is None or version.history_type == "-":
            stood = _("It did not exist then.")
        else:
            stood = format_html(
                '<q>{}</q> — {}, {} {}, {} {}', version.text, version.get_status_display(), _("confidence"),
                formats.number_format(version.confidence, 2), _("expires at"), moment(version.expires_at),
            )
        return format_html("{}<div><strong>{}</strong> {}</div>", links, moment(at), stood)

    @admin.display(description=_("versions"))
    def versions(self, record: MemoryRecord):
        """The newest versions; the history page shows them all."""
        return self.versions_table(record, limit=RECORD_PAGE_VERSIONS)

    def versions_table(self, record: MemoryRecord, *, limit: int | None = None):
        """Stored versions, newest first: when, what kind of change, who (a key by its
        name, an administrator as such), and what changed against the version before it —
        text, confidence and metadata highlighted — with the correction links it had then."""
        commitment = record.type == COMMITMENT
        headers = [_("when"), _("change"), _("by"), _("text"), _("confidence"), _("metadata"), _("status"), _("confirmations")]
        if commitment:
            headers += [_("due at"), _("done")]
        headers += [_("replaces"), _("replaced by")]
        # One version more than shown: the oldest shown is diffed against it, and it says there are more.
        history = record_history(record=record)
        versions = list(history[: limit + 1] if limit else history)
        shown = versions[:limit] if limit else versions
        reasons = [change_reason_parts(version.history_change_reason) for version in shown]
        actors = actor_labels(organisation_id=record.organisation_id, actors=[actor for _what, actor in reasons])
        rows = []
        for position, (version, (what, actor)) in enumerate(zip(shown, reasons, strict=True)):
            previous = versions[position + 1] if position + 1 < len(versions) else None
            kind = _("erased") if version.history_type == "-" else CHANGE_KINDS.get(what, what or EMPTY)
            cells = [
                moment(version.history_date),
                format_html('<span class="change-kind">{}</span>', kind),
                actors[actor],
                text_diff(previous.text if previous else None, version.text),
                value_diff(previous.confidence if previous else None, version.confidence, shown=lambda value: formats.number_format(value, 2)),
                mapping_diff(previous.metadata if previous else None, version.metadata),
                version.get_status_display(),
                version.confirmations,
            ]
            if commitment:
                cells += [moment(version.due_at), yesno(version.done)]
            cells += [self.record_link(version.replaces_id), self.record_link(version.replaced_by_id)]
            rows.append(cells)
        more_url = None
        if limit and len(versions) > limit:
            more_url = reverse(f"{self.admin_site.name}:memory_memoryrecord_history", args=[quote(record.pk)])
        return render_to_string(
            "admin/memory/memoryrecord/versions_table.html",
            {"headers": headers, "rows": rows, "more_url": more_url, "more_label": _("Every version")},
        )
