"""Every audit action as people read it, in the console's languages: the log shows the label and
keeps the action's identifier for the API (`GET /v1/audit?action=`)."""
from __future__ import annotations

from django.utils.translation import gettext_lazy as _

ACTION_LABELS = {
    "memory.console_read": _("read in the console"),
    "memory.write_denied": _("write refused by the key's policy"),
    "memory.updated": _("record changed"),
    "memory.deleted": _("record deleted"),
    "memory.expired": _("record expired"),
    "memory.exported": _("records exported"),
    "memory.imported": _("records imported"),
    "memory.contradiction_dismissed": _("contradiction dismissed: not contradicting"),
    "memory.replaced": _("record replaced by the one it contradicted"),
    "memory.merged": _("record merged into a duplicate"),
    "extraction.switch_set": _("extraction switch set"),
    "connector.deleted": _("connector deleted"),
    "store.updated": _("store settings changed"),
    "index.created": _("index created"),
    "index.updated": _("index changed"),
    "index.deleted": _("index deleted"),
    "index.embedding_model_switched": _("index switched to its new embedding model"),
    "key.created": _("key created"),
    "key.updated": _("key changed"),
    "key.revoked": _("key revoked"),
    "key.deleted": _("key deleted"),
    "proposal.applied": _("proposal applied"),
    "proposal.rejected": _("proposal rejected"),
    "proposal.edited": _("proposal changed before applying"),
    "person.updated": _("person's rules changed"),
    "person.exported": _("person's data exported"),
    "person.erased": _("person erased"),
    "organisation.updated": _("organisation settings changed"),
    "agent.created": _("agent created"),
    "agent.version_created": _("agent version created"),
    "agent.deleted": _("agent deleted"),
    "webhook.created": _("webhook created"),
    "webhook.updated": _("webhook changed"),
    "webhook.paused": _("webhook paused after failed deliveries"),
    "webhook.deleted": _("webhook deleted"),
}


def action_label(action: str) -> str:
    """The action's label; an action this version does not know (an older event) as it was written."""
    label = ACTION_LABELS.get(action)
    return str(label) if label is not None else action
