"""The OpenAPI document (`/v1/schema`) and the pages that show it: Swagger UI (`/v1/docs`) and
ReDoc (`/v1/redoc`), both from drf-spectacular-sidecar's static files, so they work offline.

The pages carry a Content-Security-Policy that allows only this server: ReDoc's bundle still
asks for a logo on a CDN (it hides the image when that fails) and drf-spectacular's ReDoc page
links web fonts, which our template leaves out. A browser sends no request elsewhere.
"""
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

DOCS_CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        # drf-spectacular's pages start Swagger UI and ReDoc with an inline script.
        "script-src 'self' 'unsafe-inline'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data:",
        "font-src 'self' data:",
        # ReDoc renders in a web worker it makes from a blob.
        "worker-src 'self' blob:",
        "connect-src 'self'",
        "frame-ancestors 'none'",
    ]
)


class _OnlyThisServer:
    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Content-Security-Policy"] = DOCS_CONTENT_SECURITY_POLICY
        return response


class ApiDocumentApi(SpectacularAPIView):
    """The OpenAPI 3 document of `/v1/`."""


class SwaggerPage(_OnlyThisServer, SpectacularSwaggerView):
    """Swagger UI over the document, with "try it out" against this server."""

    title = "Core Geheugen API"


class RedocPage(_OnlyThisServer, SpectacularRedocView):
    """ReDoc over the document: the reference to read."""

    title = "Core Geheugen API"
    template_name = "api/redoc.html"
