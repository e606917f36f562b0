"""Celery reads this module lazily (``config_from_object``) the first time it needs settings."""

from market.platform.celery_app import celery_config
from market.platform.config import load_settings

globals().update(celery_config(load_settings()))
