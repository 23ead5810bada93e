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

# Django REST framework's refusals that its Dutch catalogue lacks. The console checks its forms
# with the API's serializers in the reader's language (the API answers in English whatever is
# asked), so a Dutch page would show these in English; ours has them in Dutch.
DRF_MESSAGES = (
    gettext_noop("Ensure this field has at least {min_length} elements."),
    gettext_noop("Ensure this field has no more than {max_length} elements."),
    gettext_noop("This dictionary may not be empty."),
    gettext_noop("Must be a valid boolean."),
    gettext_noop("Not a valid string."),
    gettext_noop("Must be a valid UUID."),
    gettext_noop("A valid biginteger is required."),
    gettext_noop("Datetime value out of range."),
    gettext_noop('Invalid datetime for the timezone "{timezone}".'),
    gettext_noop("Integer value too large to convert to float"),
    gettext_noop("The number of days must be between {min_days} and {max_days}."),
)
