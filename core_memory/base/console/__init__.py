"""The console's framework, on the ground floor: who administers which organisation
(`ConsoleAdministrator`), the admin every app's `admin.py` builds on (every page limited to her
organisation), and how the console shows times, changes and settings. It names no app: each
app's console pages stand on it; the site, its dashboard and the pages that span apps stand on
the top floor (core_memory.console)."""
