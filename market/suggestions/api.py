"""``/suggestions``: the best existing sub-agents for a coding agent to fork for a request.

Who may ask: any authenticated caller — a person's token, or a service token with the
`suggest` scope (the coding agent). Not anonymous callers: the answer carries what users
wrote in their feedback, which Sprig shows nowhere else, and each request costs a text search
and comment clustering, which an open endpoint would let anyone spend.
"""

from __future__ import annotations

from apiflask import APIBlueprint

from market.identity.tokens import caller
from market.platform.api_deps import db
from market.platform.state import app_state
from market.suggestions.schemas import SuggestionsIn, SuggestionsOut
from market.suggestions.serialize import suggestion_request, suggestions_out

bp = APIBlueprint("suggestions", __name__, tag="Suggestions")


@bp.post("/suggestions")
@bp.input(SuggestionsIn, arg_name="body")
@bp.output(SuggestionsOut)
@bp.doc(
    operation_id="suggestForks",
    description=(
        "For a request in the user's words (any language), the public sub-agents best to "
        "fork: by relevance (character n-gram TF-IDF cosine), quality (the ranking's "
        "posterior) and exploration of young forks, with why each matched, the themes of its "
        "users' feedback, and the changes that improved its forks before. "
        "score = relevance · (1 + 0.5·tanh(L/2) + 0.35·sd·[young] + 0.1·[locale script]), "
        "L = mean − 1.64·sd; only candidates at least half as relevant as the best are "
        "ranked. People's tokens, or service tokens with the `suggest` scope."
    ),
)
def suggest(body: SuggestionsIn):
    """Suggest sub-agents to fork for a request."""
    who = caller()
    who.require()
    if who.kind == "service":
        who.require("suggest")
    answer = app_state().suggestions.suggest(db(), suggestion_request(body))
    return suggestions_out(answer)
