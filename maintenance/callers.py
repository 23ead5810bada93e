"""Who asks when maintenance works: the system, in the organisation whose store it reads, named
`maintenance` in the audit trail and in the records' history. Background work takes no key; its
caller is built here, once per store or job, and handed to every selector and service it runs."""
from __future__ import annotations

from core_memory.base.callers import Caller

ACTOR = "maintenance"


def maintenance_caller(organisation_id: str) -> Caller:
    """Maintenance asking in the organisation whose store (or job) it works on."""
    return Caller.system(organisation_id=organisation_id, actor=ACTOR)
