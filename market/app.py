"""The application factory. Nothing is built at import time: gunicorn serves
``"market.app:create_app()"`` and tests call ``create_app({...})``."""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
import re

from apiflask import APIFlask
from flask import g, request
from sqlalchemy.engine import make_url

from market.catalog.services import lineage_root
from market.catalog.tasks import enqueue_upstream_proposals
from market.entrypoints.mcp_http import install_mcp, mcp_bridge
from market.identity.tokens import require_metrics_reader
from market.platform import metrics, problems
from market.platform.api import API_PREFIX, complete_spec, route_facts
from market.platform.api_deps import BoundedIntegerConverter, JsonBodyRequest, db
from market.platform.celery_app import celery_init_app
from market.platform.config import Settings, load_settings
from market.platform.db import is_sqlite, make_engine
from market.platform.errors import UriTooLong
from market.platform.health import install_health, readiness_checks
from market.platform.limits import configured_limits, install_limits
from market.platform.logs import install_request_logging
from market.platform.metrics import install_metrics
from market.platform.ratelimit import RateLimiter
from market.platform.read_cache import NotificationListener, ReadCache
from market.platform.state import AppState, install_state
from market.ranking.services import EmbeddedSchedule
from market.suggestions.services import SuggestionService
from market.usage.backlog import BacklogCollector
from market.web.blueprint import SHARED_PAGES
from market.web.error_pages import browser_page
from market.web.i18n import LANG_COOKIE
from market.web.signin import request_caller

DOCS_PATH = f"{API_PREFIX}/docs"
# The longest URL (path and query) served. gunicorn's own request-line limit sits above it
# (market/entrypoints/gunicorn_conf.py), so an over-long URL gets this app's problem, not
# gunicorn's page.
MAX_URL_BYTES = 4096
# Everything but pages (which set their own) and the API docs: nothing may load or run.
DEFAULT_CSP = "default-src 'none'; frame-ancestors 'none'"
_INLINE = {
    kind: re.compile(rb"<%b>(.*?)</%b>" % (kind, kind), re.S) for kind in (b"script", b"style")
}


@functools.lru_cache(maxsize=4)
def docs_for_phones(html: bytes) -> bytes:
    """APIFlask's Swagger UI page has no viewport meta, so a phone lays it out 980 px wide and
    shrinks it to an unreadable size; and its icon link says PNG, where Sprig's icon is SVG."""
    viewport = b'<meta name="viewport" content="width=device-width, initial-scale=1">'
    charset = b'<meta charset="UTF-8">'
    return html.replace(charset, charset + b"\n  " + viewport, 1).replace(
        b'type="image/png"', b'type="image/svg+xml"', 1
    )


@functools.lru_cache(maxsize=4)
def docs_csp(html: bytes) -> str:
    """The API docs page: the vendored Swagger UI files, its own inline script and style
    (allowed by their hashes, so nothing injected runs), and fetching the document. The page
    is the same bytes on every request, so its hashes are computed once."""

    def hashes(kind: bytes) -> str:
        return " ".join(
            f"'sha256-{base64.b64encode(hashlib.sha256(code).digest()).decode()}'"
            for code in _INLINE[kind].findall(html)
        )

    return (
        f"default-src 'none'; script-src 'self' {hashes(b'script')}; "
        f"style-src 'self' {hashes(b'style')}; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def create_app(config: dict | Settings | None = None) -> APIFlask:
    settings = config if isinstance(config, Settings) else load_settings().with_overrides(config)
    app = APIFlask(
        __name__,
        title="Sprig API",
        version="1",
        spec_path=f"{API_PREFIX}/openapi.json",
        docs_path=DOCS_PATH,
        static_folder="web/static",
        static_url_path="/static",
    )
    install_request_logging(app)  # first: its clock starts before, its line ends after, all hooks
    # Before any rule is added: ids beyond a rule's `max` are 404s, never 405s.
    app.url_map.converters["int"] = BoundedIntegerConverter
    app.config.update(
        SECRET_KEY=settings.secret_key,
        TESTING=settings.testing,
        MAX_CONTENT_LENGTH=settings.max_request_bytes,
        OPENAPI_VERSION="3.1.0",
        JSON_SORT_KEYS=False,
        SYNC_LOCAL_SPEC=False,
        DOCS_FAVICON="/static/web/sprig.svg",
        SWAGGER_UI_CSS="/static/swagger-ui/swagger-ui.css",
        SWAGGER_UI_BUNDLE_JS="/static/swagger-ui/swagger-ui-bundle.js",
        SWAGGER_UI_STANDALONE_PRESET_JS="/static/swagger-ui/swagger-ui-standalone-preset.js",
        VALIDATION_ERROR_STATUS_CODE=422,
        VALIDATION_ERROR_SCHEMA=problems.PROBLEM_SCHEMA,
        HTTP_ERROR_SCHEMA=problems.PROBLEM_SCHEMA,
        INFO={
            "description": (
                "Sprig shares AI-written lifestyle sub-agents as a fork tree. Errors are "
                "`application/problem+json`. Authenticate with `Authorization: Bearer <token>`."
            )
        },
    )
    statement_timeout_ms = 0 if settings.tasks_run_inline else settings.request_statement_timeout_ms
    engine = make_engine(
        settings.database_url,
        busy_timeout_ms=settings.sqlite_busy_timeout_ms,
        statement_timeout_ms=statement_timeout_ms,
    )
    # GET requests read on autocommit connections of their own pool: no BEGIN/ROLLBACK round
    # trips around what is usually a single SELECT (a third of a detail request's time).
    read_engine = (
        engine
        if is_sqlite(settings.database_url)
        else make_engine(
            settings.database_url, autocommit=True, statement_timeout_ms=statement_timeout_ms
        )
    )
    read_cache = listener = None
    if settings.read_cache_seconds > 0 and not is_sqlite(settings.database_url):
        read_cache, listener = make_read_cache(settings)
    install_state(
        app,
        AppState(
            settings=settings,
            engine=engine,
            read_engine=read_engine,
            rate_limiter=RateLimiter(settings.redis_url),
            rate_limits=configured_limits(settings),
            suggestions=suggestion_service(engine, read_cache),
            ranking_schedule=EmbeddedSchedule(),
            celery=celery_init_app(app, settings),
            mcp=mcp_bridge(app),
            read_cache=read_cache,
            cache_listener=listener,
            readiness=readiness_checks(settings, engine),
            enqueue_after_commit=(enqueue_upstream_proposals,),
        ),
    )
    logging.getLogger("market").setLevel(settings.log_level)

    @app.before_request
    def _refuse_long_urls():
        target = request.environ.get("RAW_URI") or request.full_path
        if len(target) > MAX_URL_BYTES:
            raise UriTooLong(f"The URL is {len(target)} bytes long; at most {MAX_URL_BYTES}.")

    install_limits(app, settings, request_caller)
    if read_cache is not None:
        install_read_cache(app, read_cache, listener)

    register_api(app, API_PREFIX)
    app.request_class = JsonBodyRequest
    problems.install(app, browser_page=browser_page)
    register_pages(app)
    install_mcp(app)
    install_health(app)
    if settings.metrics:
        install_metrics(
            app, engine, read_engine, require_metrics_reader, BacklogCollector(read_engine)
        )

    @app.teardown_appcontext
    def _close_unit_of_work(_exc):
        unit = g.pop("unit_of_work", None)
        if unit is not None:
            try:
                unit.close()
            except Exception:
                logging.getLogger("market").warning("closing a broken DB session", exc_info=True)

    @app.after_request
    def _security_headers(response):
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "strict-origin-when-cross-origin")
        response.headers.setdefault("X-Frame-Options", "DENY")
        if request.path == DOCS_PATH and response.status_code == 200:
            response.set_data(docs_for_phones(response.get_data()))
            response.headers.setdefault("Content-Security-Policy", docs_csp(response.get_data()))
        response.headers.setdefault("Content-Security-Policy", DEFAULT_CSP)
        return response

    return app


def register_api(app: APIFlask, prefix: str) -> None:
    """Each domain's API blueprint, in the order the OpenAPI document lists them."""
    from market.catalog import api as catalog_api
    from market.exports import api as exports_api
    from market.identity import api as identity_api
    from market.ranking import api as ranking_api
    from market.recommend import api as recommend_api
    from market.suggestions import api as suggestions_api
    from market.usage import api as usage_api

    app.register_blueprint(catalog_api.bp, url_prefix=prefix)
    app.register_blueprint(identity_api.bp, url_prefix=prefix)
    app.register_blueprint(usage_api.bp, url_prefix=prefix)
    app.register_blueprint(ranking_api.bp, url_prefix=prefix)
    app.register_blueprint(recommend_api.bp, url_prefix=prefix)
    app.register_blueprint(suggestions_api.bp, url_prefix=prefix)
    app.register_blueprint(exports_api.bp, url_prefix=prefix)
    app.spec_processor(
        lambda spec: complete_spec(
            spec,
            prefix,
            route_facts(app),
            json_bodies=usage_api.HAND_PARSED_BODIES,
            bundle_bodies=catalog_api.BUNDLE_BODIES,
            zip_uploads=catalog_api.ZIP_UPLOADS,
        )
    )


def register_pages(app: APIFlask) -> None:
    """Each domain's page views add their routes to the web blueprint as they are imported;
    the shell then registers it."""
    from market.catalog import views as catalog_views  # noqa: F401 - routes register
    from market.identity import views as identity_views  # noqa: F401 - routes register
    from market.ranking import views as ranking_views  # noqa: F401 - routes register
    from market.usage import views as usage_views  # noqa: F401 - routes register
    from market.web import register_web

    register_web(app)


def make_read_cache(settings: Settings) -> tuple[ReadCache, NotificationListener]:
    cache = ReadCache(ttl=settings.read_cache_seconds, max_bytes=settings.read_cache_mib * 2**20)
    dsn = make_url(settings.database_url).set(drivername="postgresql")
    return cache, NotificationListener(dsn.render_as_string(hide_password=False), cache)


def suggestion_service(engine, read_cache: ReadCache | None) -> SuggestionService:
    """The process's suggestion service; with a read cache, the cache's notification counter
    tells it when another process changed the catalog."""
    generation = (
        (lambda: read_cache.generation if read_cache.listening else None)
        if read_cache is not None
        else None
    )
    return SuggestionService(engine, change_generation=generation)


def install_read_cache(app: APIFlask, cache: ReadCache, listener: NotificationListener) -> None:
    cacheable_prefix = f"{API_PREFIX}/subagents"

    @app.before_request
    def _serve_cached():
        if request.method != "GET":
            return None
        page = request.endpoint in SHARED_PAGES
        if not (page or request.path.startswith(cacheable_prefix)):
            return None
        # The language a reader chose is the one cookie that does not make a request theirs.
        if "Authorization" in request.headers or request.cookies.keys() - {LANG_COOKIE}:
            return None
        listener.ensure_started()
        g.cache_generation = cache.generation
        # A detail names the best branch in the reader's language, and a page is written in
        # it: one entry per language asked for.
        chosen = request.cookies.get(LANG_COOKIE, "")
        key = f"{request.full_path}\n{request.headers.get('Accept-Language', '')}\n{chosen}"
        entry = cache.get(key)
        if entry is None:
            metrics.record_read_cache(hit=False)
            g.cache_key = key
            return None
        # Every endpoint's limit was spent before this hook: a refusal (429) never gets here.
        metrics.record_read_cache(hit=True)
        response = app.response_class(entry.body, 200, content_type=entry.content_type)
        if entry.vary:
            response.headers["Vary"] = entry.vary
        response.headers["X-Sprig-Cache"] = "hit"
        return response

    @app.after_request
    def _store_cached(response):
        key = g.pop("cache_key", None)
        if (
            key is not None
            and response.status_code == 200
            and not response.direct_passthrough
            and "Set-Cookie" not in response.headers  # that visitor's own
        ):
            cache.put(
                key,
                response.get_data(),
                response.content_type,
                response.headers.get("Vary"),
                g.cache_generation,
                lineage=_lineage_shown(),
            )
            response.headers["X-Sprig-Cache"] = "miss"
        return response


def _lineage_shown() -> int | None:
    """The lineage (root id) a cacheable answer shows, so that only a change to it drops the
    entry: a route that names a sub-agent shows that sub-agent's lineage alone (its ancestors,
    forks, tree, best branch, versions and diffs). Any other (browse, search, the ranking page)
    may show every lineage: None. ``tests/integration/platform/test_read_cache.py`` lists the
    routes this scopes, so that a new one is looked at before it is."""
    subagent_id = (request.view_args or {}).get("subagent_id")
    return lineage_root(db(), subagent_id) if subagent_id is not None else None
