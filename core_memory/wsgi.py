import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "core_memory.settings")

from core_memory.base.telemetry.tracing import tracing_configure  # noqa: E402

# Traces when the OTEL_* variables name an exporter; before the application loads its middleware.
tracing_configure()
django_application = get_wsgi_application()

from core_memory.mcp.http import McpMount  # noqa: E402 — needs the configured Django above
from memory.embedding.storage import embedding_storage_check  # noqa: E402

# Refuse to serve an index that embeds where vectors cannot be kept (docs/decisions.md "Embeddings").
embedding_storage_check()

# `/mcp` is the MCP server (streamable HTTP); everything else is Django.
application = McpMount(django_application)
