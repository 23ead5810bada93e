from rest_framework.permissions import BasePermission

from core_memory.base.errors import PermissionDenied


class HasCapabilities(BasePermission):
    """The view's `required_capabilities` (a tuple, or a dict of method → tuple)."""

    def has_permission(self, request, view) -> bool:
        principal = request.user
        if principal is None or not getattr(principal, "is_authenticated", False):
            return False
        required = getattr(view, "required_capabilities", ())
        if isinstance(required, dict):
            required = required.get(request.method, ())
        if principal.token_subject is not None and "management" in required:
            # A subject token speaks for one person; managing the organisation is not hers.
            raise PermissionDenied("A subject token cannot use management routes.")
        if principal.token_subject is not None and request.method in getattr(view, "organisation_wide_methods", ()):
            raise PermissionDenied("A subject token acts for one person; it cannot change organisation-wide settings.")
        missing = [capability for capability in required if not principal.may(capability)]
        if missing:
            raise PermissionDenied(f"This key lacks the capability {missing[0]!r}.")
        return True
