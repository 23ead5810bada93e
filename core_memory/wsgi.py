import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core_memory.settings")
django_application = get_wsgi_application()

from core_memory.mcp.http import McpMount  # noqa: E402 — needs the configured Django above

# `/mcp` is the MCP server (streamable HTTP); everything else is Django.
application = McpMount(django_application)
