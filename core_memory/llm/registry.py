"""The chat models on offer: configured in CORE_MODELS, offered per organisation."""
from __future__ import annotations

import copy

from django.conf import settings

from core_memory.base.errors import Unprocessable
from core_memory.organisations.models import Organisation


def models_offered(*, organisation: Organisation) -> list[dict]:
    """The organisation's offered models, each a copy of its CORE_MODELS entry (id, provider,
    base_url, api_key_env); only `id` and `provider` may be shown to a caller."""
    offered = set(organisation.offered_model_ids())
    return [copy.deepcopy(model) for model in settings.CORE_MODELS if model["id"] in offered]


def _offered_model(*, organisation: Organisation, model_id: str) -> dict | None:
    return next((model for model in models_offered(organisation=organisation) if model["id"] == model_id), None)


def model_get(*, organisation: Organisation, model_id: str, param: str = "model") -> dict:
    """The offered model `model_id`, else 422 naming `param`."""
    model = _offered_model(organisation=organisation, model_id=model_id)
    if model is None:
        raise Unprocessable(f"The model {model_id!r} is not offered to this organisation.", param=param)
    return model


def helper_model_get(*, organisation: Organisation) -> dict | None:
    """The model for background helper calls (lessons, promotion analyses): the
    organisation's `helper_model`, else CORE_HELPER_MODEL; None when neither names a
    model offered to the organisation."""
    model_id = organisation.helper_model or settings.CORE_HELPER_MODEL
    if not model_id:
        return None
    return _offered_model(organisation=organisation, model_id=model_id)
