"""`manage.py mcp`: the MCP server over stdio, for a local MCP client that starts it itself."""
import os

import anyio
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections
from mcp.server.stdio import stdio_server

from core_memory.base.errors import ApplicationError
from core_memory.mcp.server import SUBJECT_VARIABLE, TOKEN_VARIABLE, mcp_caller, server


class Command(BaseCommand):
    help = (
        f"Serve the key's memory tools over MCP on stdin/stdout. The credential (a key secret or a subject "
        f"token) comes from ${TOKEN_VARIABLE}, the person (optional) from ${SUBJECT_VARIABLE}."
    )

    def handle(self, *args, **options):
        try:
            mcp_caller(
                authorization=f"Bearer {os.environ.get(TOKEN_VARIABLE, '')}",
                subject_header=os.environ.get(SUBJECT_VARIABLE) or None,
            )
        except ApplicationError as error:
            raise CommandError(f"{TOKEN_VARIABLE}/{SUBJECT_VARIABLE}: {error.message}") from None
        finally:
            close_old_connections()
        # stdout is the protocol channel: logs go to stderr (settings.LOGGING), and stdio_server
        # points file descriptor 1 at stderr while it serves.
        anyio.run(_serve)


async def _serve() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())
