"""Template filters the console's pages share."""
from django import template

from extraction.models import ExtractionWindow
from extraction.selectors import STATE_LABELS
from audit.labels import action_label as audit_action_label
from memory.models import MemoryRecord
from memory.models import type_label as memory_type_label

register = template.Library()


@register.filter
def type_label(type_name: str) -> str:
    """A record type as the console names it, translated (memory.models.TYPE_LABELS)."""
    return memory_type_label(type_name)


@register.filter
def get_item(mapping: dict, key):
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def switch_state(state: str) -> str:
    """An extraction switch's state as the console names it, translated (extraction.selectors.STATE_LABELS)."""
    return STATE_LABELS.get(state, state)


@register.filter
def window_state(state: str) -> str:
    """An extraction window's status as the console names it, translated."""
    return ExtractionWindow.Status(state).label if state in ExtractionWindow.Status.values else state


@register.filter
def status_label(status: str) -> str:
    """A record's status as the console names it, translated."""
    return MemoryRecord.Status(status).label if status in MemoryRecord.Status.values else status


@register.filter
def action_label(action: str) -> str:
    """An audit action as people read it, translated (audit.labels)."""
    return audit_action_label(action)
