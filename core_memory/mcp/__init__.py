"""The MCP server: a key's memory tools for any MCP client (streamable HTTP at `/mcp`, stdio via
`manage.py mcp`). An interface, like the API: it calls the same tool code as a turn does."""
