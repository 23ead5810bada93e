from __future__ import annotations

from django.db import transaction

from audit.services import audit_event_record
from core_memory.base.callers import Caller
from core_memory.base.errors import Unprocessable
from core_memory.organisations.models import (
    Organisation,
    configured_embedding_model_ids,
    configured_model_ids,
    configured_rerank_model_ids,
)

UPDATABLE_FIELDS = (
    "name",
    "timezone",
    "capabilities",
    "offered_models",
    "offered_embedding_models",
    "offered_rerank_models",
    "helper_model",
    "monthly_token_limit",
    "audit_retention_days",
    "improvements",
    "rate_limit_per_minute",
)


# The lists of offered models: which variable configures each, and its ids.
_MODEL_LISTS = {
    "offered_models": ("CORE_MODELS", configured_model_ids),
    "offered_embedding_models": ("CORE_EMBEDDING_MODELS", configured_embedding_model_ids),
    "offered_rerank_models": ("CORE_RERANK_MODELS", configured_rerank_model_ids),
}


@transaction.atomic(durable=True)
def organisation_update(*, caller: Caller, organisation: Organisation, changes: dict) -> Organisation:
    """Replaces the given settings; audited as `organisation.updated`.

    `offered_models` (null: every model of CORE_MODELS), `offered_embedding_models` and
    `offered_rerank_models` (CORE_EMBEDDING_MODELS, CORE_RERANK_MODELS) may name only configured models,
    and a PATCH of either must leave the helper model, when set, offered. Raises Unprocessable
    naming the field.
    """
    organisation = Organisation.objects.select_for_update().get(pk=organisation.pk)
    fields = [field for field in UPDATABLE_FIELDS if field in changes]
    for field, (variable, configured) in _MODEL_LISTS.items():
        for position, model_id in enumerate(changes.get(field) or []):
            if model_id not in configured():
                raise Unprocessable(f"No model {model_id!r} in {variable}.", param=f"{field}[{position}]")
    for field in fields:
        value = changes[field]
        if (field == "capabilities" or field in _MODEL_LISTS) and value is not None:
            value = list(dict.fromkeys(value))
        setattr(organisation, field, value)
    # Checked only when the PATCH touches it: a model the operator withdrew from
    # CORE_MODELS since must not block an unrelated change.
    touches_helper = "helper_model" in changes or "offered_models" in changes
    if touches_helper and organisation.helper_model is not None and organisation.helper_model not in organisation.offered_model_ids():
        param = "helper_model" if "helper_model" in changes else "offered_models"
        raise Unprocessable(f"The helper model {organisation.helper_model!r} is not offered to this organisation.", param=param)
    if fields:
        organisation.full_clean()
        organisation.save(update_fields=[*fields, "updated_at"])
        audit_event_record(
            caller=caller, action="organisation.updated", target=organisation.id, details={"fields": fields}
        )
    return organisation
