"""Tokens metered per organisation and month (core_memory.llm.metering, R-3.6, R-8.9)."""
from datetime import datetime
from datetime import timezone as dt_timezone

import pytest

from core_memory.llm.metering import token_limit_reached, usage_month
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
    assert TokenUsage.objects.for_organisation(other_tenant.organisation).month_total(month=usage_month()) == 8


def test_the_monthly_limit_is_reached_when_the_months_tokens_meet_it(tenant, fake_model):
    """R-8.9: counted in the month asked about; no limit is never reached."""
    fake_model.reply("a", usage=(60, 39))
    ask(tenant)

    assert token_limit_reached(organisation=tenant.organisation) is False
    tenant.organisation.monthly_token_limit = 100
    assert token_limit_reached(organisation=tenant.organisation) is False
    tenant.organisation.monthly_token_limit = 99
    assert token_limit_reached(organisation=tenant.organisation) is True
    next_month = datetime(usage_month().year + 1, 1, 1, tzinfo=dt_timezone.utc)
    assert token_limit_reached(organisation=tenant.organisation, at=next_month) is False
