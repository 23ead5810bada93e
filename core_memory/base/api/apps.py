import sys

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _

# Python's default of 1000 frames leaves a JSON body some 900 levels deep readable or not
# depending on how deep the caller's stack already is (`python -m pytest` versus `pytest`,
# a worker versus the web process). With room to spare the answer no longer depends on
# that: such a body is read, and the services refuse it by their own rules; a body
# past this room is refused by core_memory.base.api.parsers. Decoding a level costs a few hundred
# bytes of C stack: 4000 levels stay well inside a thread's stack.
RECURSION_LIMIT = 4000


class CoreApiConfig(AppConfig):
    name = "core_memory.base.api"
    label = "core_api"
    verbose_name = _("API")

    def ready(self) -> None:
        from core_memory.base.api import schema  # noqa: F401 — registers the OpenAPI authentication extension
        from core_memory.base.api.idempotency import person_answers_counted, person_answers_erase
        from core_memory.base.erasure import PersonDataKeeper, person_data_keeper_register

        # A replay of a stored answer about an erased person would hand her data back.
        person_data_keeper_register(PersonDataKeeper(name="idempotent_answers", erase=person_answers_erase, count=person_answers_counted))

        sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
