from django.db import models
from django.utils.translation import gettext_lazy as _

from core_memory.base.tenancy import TenantQuerySet


class Person(models.Model):
    """A person (subject) of one organisation and her rules; exists once named."""

    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="persons")
    subject = models.CharField(_("subject"), max_length=255)
    helper_model_may_read = models.BooleanField(_("the helper model may read this person's records"), default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("person")
        verbose_name_plural = _("persons")
        constraints = [models.UniqueConstraint(fields=["organisation", "subject"], name="person_one_per_subject")]

    def __str__(self) -> str:
        return self.subject
