"""OpenAPI from our view convention: each APIView's nested `InputSerializer` is the
request body and its `OutputSerializer` the answer; a view with a
`pagination_class` answers a page of them on GET."""
import re

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class CoreAutoSchema(AutoSchema):
    def get_request_serializer(self):
        if self.method in ("GET", "DELETE", "HEAD"):
            return None
        return getattr(self.view, "InputSerializer", None)

    def get_response_serializers(self):
        serializer = getattr(self.view, "OutputSerializer", None)
        if serializer is None:
            return None
        if self.method == "GET" and getattr(self.view, "pagination_class", None) is not None:
            return serializer(many=True)
        return serializer

    def get_filter_backends(self):
        return []

    def get_operation_id(self) -> str:
        view_name = type(self.view).__name__.removesuffix("Api")
        return f"{_snake(view_name)}_{self.method.lower()}"

    def get_serializer_name(self, serializer, direction) -> str:
        # Nested `InputSerializer`s of many views would all be called "Input".
        qualified = type(serializer).__qualname__.replace("Serializer", "").replace("Api.", "")
        return qualified.replace(".", "")


class KeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "core_memory.keys.authentication.KeyAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A key secret `core_sk_…` or a subject token `core_st_…`.",
        }
