"""Bearer authentication with a key secret or a subject token (R-2.1)."""
from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone
from rest_framework import authentication, exceptions

from core_memory.keys.models import KEY_SECRET_PREFIX, SUBJECT_TOKEN_PREFIX, ApiKey, SubjectToken, secret_hash
from core_memory.organisations.models import Organisation


@dataclass(frozen=True)
class Principal:
    """Who calls: a key of one organisation, possibly limited to one person by a subject token."""

    key: ApiKey
    token_subject: str | None = None

    is_authenticated = True
    is_anonymous = False

    @property
    def organisation(self) -> Organisation:
        return self.key.organisation

    @property
    def actor(self) -> str:
        return self.key.id

    def has_capability(self, capability: str) -> bool:
        """The key's capability; a subject token never has `management`: managing the
        organisation is not one person's (core_memory.api.permissions, R-3.3)."""
        if capability == "management" and self.token_subject is not None:
            return False
        return self.key.has_capability(capability)


class KeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        parts = header.split()
        if len(parts) != 2 or parts[0].lower() != "bearer":
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <secret>'.")
        secret = parts[1]
        principal = principal_for_secret(secret)
        if principal is None:
            raise exceptions.AuthenticationFailed("Unknown, revoked or expired credential.")
        return principal, principal.key

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="core"'


def principal_for_secret(secret: str) -> Principal | None:
    hashed = secret_hash(secret)
    if secret.startswith(KEY_SECRET_PREFIX):
        # The secret names the organisation: no scope to read it within.
        key = ApiKey.objects.unscoped().usable().select_related("organisation").filter(secret_hash=hashed).first()
        return Principal(key=key) if key else None
    if secret.startswith(SUBJECT_TOKEN_PREFIX):
        token = (
            SubjectToken.objects.unscoped()
            .select_related("key__organisation")
            .filter(secret_hash=hashed, expires_at__gt=timezone.now())
            .first()
        )
        if token is None or not token.key.is_usable:
            return None
        return Principal(key=token.key, token_subject=token.subject)
    return None
