"""Strings Django 5.2's admin templates show that its own Dutch catalogue lacks; marked here so
that `makemessages` keeps them in ours (locale/nl), where the console's language test finds them."""
from django.utils.translation import gettext_noop

DJANGO_ADMIN_STRINGS = (
    gettext_noop("Model name"),  # admin/app_list.html, a visually hidden column header
    gettext_noop("Add link"),
    gettext_noop("Change or view list link"),
    gettext_noop("Error:"),  # a form field's error, read out by screen readers
)

# Django's own "De record … is met succes gewijzigd" gives a record an article it does not have
# in Dutch; ours names what changed without one.
ADMIN_MESSAGES = (
    gettext_noop("The {name} “{obj}” was added successfully."),
    gettext_noop("The {name} “{obj}” was changed successfully."),
    gettext_noop("The %(name)s “%(obj)s” was deleted successfully."),
)
