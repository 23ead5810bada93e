"""Tokens metered per organisation and month (core_memory.llm.metering, R-3.6, R-8.9)."""
import pytest

from core_memory.llm.metering import usage_month
from core_memory.llm.models import TokenUsage
from core_memory.llm.providers import chat_completion

pytestmark = pytest.mark.django_db


def ask(tenant, **fields):
    return chat_completion(organisation=tenant.organisation, model="fake-chat", messages=[{"role": "user", "content": "?"}], **fields)


def test_tokens_add_up_per_organisation_and_month(tenant, other_tenant, fake_model):
    """R-3.6, R-8.9: metered per organisation per month."""
    fake_model.reply("a", usage=(100, 20))
    fake_model.reply("b", usage=(50, 5))
    fake_model.reply("c", usage=(7, 1))

    ask(tenant)
    ask(tenant)
    ask(other_tenant)

    row = TokenUsage.objects.get(organisation=tenant.organisation)
    assert (row.month, row.input_tokens, row.output_tokens, row.total_tokens, row.calls) == (usage_month(), 150, 25, 175, 2)
    assert TokenUsage.objects.month_total(organisation_id=other_tenant.organisation.id, month=usage_month()) == 8
