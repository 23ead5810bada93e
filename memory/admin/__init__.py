"""The console's Geheugen section: an administrator's view of her
organisation's records across every index, with their history.

Reads are audited: the list, a record page, its history page and its delete confirmation
each write one `memory.console_read` event naming the administrator and the record ids
shown (audit.console), before the page renders — a failed audit write shows nothing.
Corrections and deletions go through memory.services (`record_update`, `record_delete`),
so history versions and the `memory.updated` / `memory.deleted` events are the API's.

Effective confidence depends on the reading key's half-lives, and the console
reads with no key. By default it reads with the organisation's default half-lives (per
type the shortest any of her usable keys sets, memory.selectors.organisation_default_half_lives),
stated above the list; the "decay as read by" filter reads as one given key instead, or
without decay.
"""
from memory.admin.records import MemoryRecordAdmin

__all__ = ["MemoryRecordAdmin"]
