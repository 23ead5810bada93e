from django.apps import AppConfig


class McpConfig(AppConfig):
    name = "core_memory.mcp"
    label = "mcp"
    verbose_name = "MCP"
