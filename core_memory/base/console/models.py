from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from core_memory.base.tenancy import TenantQuerySet


class ConsoleAdministrator(models.Model):
    """Binds a console user to the one organisation she administers."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="console_administrator", verbose_name=_("user")
    )
    organisation = models.ForeignKey(
        "organisations.Organisation", on_delete=models.CASCADE, related_name="administrators", verbose_name=_("organisation")
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("console administrator")
        verbose_name_plural = _("console administrators")

    def __str__(self) -> str:
        return f"{self.user} @ {self.organisation_id}"
