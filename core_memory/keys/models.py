import hashlib
import secrets

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from core_memory.base.ids import PrefixedIdField
from core_memory.base.tenancy import TenantQuerySet

KEY_CAPABILITIES = ("knowledge", "memory", "threads", "management", "trust_envelope")
# The capabilities as people read them (the console); the API names them by the identifiers above.
CAPABILITY_LABELS = {
    "knowledge": _("knowledge: indexes and search"),
    "memory": _("memory: records and the memory tools"),
    "threads": _("conversations: threads and turns"),
    "management": _("management: organisation, keys and audit log"),
    "trust_envelope": _("tool results marked as data for the model"),
}
CAPABILITY_NAMES = {
    "knowledge": _("knowledge"),
    "memory": _("memory"),
    "threads": _("conversations"),
    "management": _("management"),
    "trust_envelope": _("tool results as data"),
}
ALL_INDEXES = "*"
KEY_SECRET_PREFIX = "core_sk_"
SUBJECT_TOKEN_PREFIX = "core_st_"


def secret_hash(secret: str) -> str:
    # Secrets carry 256 random bits, so a plain SHA-256 is a safe, index-friendly
    # lookup hash (no slow KDF needed; docs/decisions.md).
    return hashlib.sha256(secret.encode()).hexdigest()


def new_secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def default_policy() -> dict:
    return {"read": [], "write": []}


class ApiKeyQuerySet(TenantQuerySet):
    def usable(self):
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))


class ApiKey(models.Model):
    id = PrefixedIdField("key")
    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="keys")
    name = models.CharField(_("name"), max_length=200)
    capabilities = models.JSONField(_("capabilities"), default=list, blank=True)
    policy = models.JSONField(_("policy"), default=default_policy, blank=True)
    memory = models.JSONField(_("memory configuration"), default=dict, blank=True)
    pii_redaction = models.BooleanField(_("PII redaction"), default=False)
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)
    secret_hash = models.CharField(max_length=64, unique=True, editable=False)
    secret_hint = models.CharField(max_length=16, editable=False, help_text=_("The secret's last characters."))
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = _("key")
        verbose_name_plural = _("keys")
        indexes = [models.Index(fields=["organisation", "-id"], name="key_org_id")]

    def __str__(self) -> str:
        return f"{self.name} ({self.id})"

    @property
    def is_usable(self) -> bool:
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > timezone.now())

    def has_capability(self, capability: str) -> bool:
        return capability in (self.capabilities or [])

    def _policy_allows(self, right: str, index_id: str) -> bool:
        names = (self.policy or {}).get(right, [])
        return ALL_INDEXES in names or index_id in names

    def may_read(self, index_id: str) -> bool:
        return self._policy_allows("read", index_id)

    def may_write(self, index_id: str) -> bool:
        return self._policy_allows("write", index_id)

    def names_index(self, index_id: str) -> bool:
        return self.may_read(index_id) or self.may_write(index_id)

    def named_index_ids(self, right: str | None = None) -> set[str] | None:
        """The index ids the policy names (for `right`, or either); None means every index."""
        rights = (right,) if right else ("read", "write")
        names: set[str] = set()
        for each in rights:
            listed = (self.policy or {}).get(each, [])
            if ALL_INDEXES in listed:
                return None
            names.update(listed)
        return names


class SubjectTokenQuerySet(TenantQuerySet):
    organisation_lookup = "key__organisation"


class SubjectToken(models.Model):
    """A bearer token acting as its key, limited to one person."""

    id = PrefixedIdField("stk")
    key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="subject_tokens")
    subject = models.CharField(max_length=255)
    secret_hash = models.CharField(max_length=64, unique=True, editable=False)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    objects = SubjectTokenQuerySet.as_manager()


class KeyTrailEntry(models.Model):
    """The organisation's key audit trail: survives the key's deletion."""

    class Event(models.TextChoices):
        CREATED = "created", _("created")
        REVOKED = "revoked", _("revoked")
        EXPIRED = "expired", _("expired")
        DELETED = "deleted", _("deleted")

    organisation = models.ForeignKey("organisations.Organisation", on_delete=models.CASCADE, related_name="key_trail")
    key_id = models.CharField(max_length=40, db_index=True)
    event = models.CharField(max_length=16, choices=Event.choices)
    at = models.DateTimeField(default=timezone.now)

    objects = TenantQuerySet.as_manager()

    class Meta:
        verbose_name = _("key trail entry")
        verbose_name_plural = _("key trail")
        constraints = [
            models.UniqueConstraint(fields=["key_id", "event"], name="key_trail_one_event_each"),
        ]
