"""Marking text that a page shows in the reader's language.

``N_`` marks a message where it is written (a service's refusal, a page's fixed word) so that
``make messages`` puts it in the catalogs; the page translates it when it shows it
(market/web/i18n.py), and the API goes on answering with the English text.
"""

from __future__ import annotations


def N_(message: str) -> str:
    """The message itself, marked for ``make messages``."""
    return message
