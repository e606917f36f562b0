"""Unit tests for market.catalog.bundles.scan: personal data and secrets."""

from __future__ import annotations

import json

import pytest

from market.catalog.bundles.scan import (
    Finding,
    check_publishable,
    find_personal_values,
    find_secrets,
)
from tests.unit.catalog.bundles.helpers import BASE_FILES, make, rejects, wordy_text

# --------------------------------------------------------------------------- personal data

PROFILE = {
    "email": "Jane.Doe@example.com",
    "phone": "+1 (555) 123-4567",
    "name": "Jane Doe",
    "address": "12 Elm Street",
    "nickname": "Al",
    "city": None,
}


def scan(text: str, **manifest) -> list[Finding]:
    return find_personal_values(make({"app.js": text, **BASE_FILES}, **manifest), PROFILE)


def test_finds_email_case_insensitively_with_line():
    found = scan("// ok\nconst me = 'jane.doe@EXAMPLE.com';\n")
    assert found == [Finding("email", "files/app.js:2", "J***@example.com")]


@pytest.mark.parametrize(
    "text", ["xjane.doe@example.com", "jane.doe@example.com.au", "jane.doe@example.community"]
)
def test_email_must_match_exactly(text):
    assert scan(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "call 555-123-4567",
        "call 555.123.4567",
        "call 555 123 4567",
        "call (555) 123-4567",
        "call +1 (555) 123-4567",
        "call +15551234567",
        "call 1-555-123-4567",
        "local: 123-4567",
        "tel:5551234567;",
    ],
)
def test_finds_phone_with_any_separators(text):
    found = scan(f"line one\n{text}\n")
    assert [(f.kind, f.location) for f in found] == [("phone", "files/app.js:2")]
    assert found[0].masked.endswith("67") and "4567" not in found[0].masked


@pytest.mark.parametrize(
    "text", ["999-123-4567", "id 81234567", "5551234567890", "v0.1234567", "555-123-456"]
)
def test_phone_does_not_match_other_numbers(text):
    assert [f for f in scan(text) if f.kind == "phone"] == []


@pytest.mark.parametrize("text", ["by JANE   doe", "by Jane\n  Doe", "(jane doe)"])
def test_finds_name_as_whole_words(text):
    assert [f.kind for f in scan(text)] == ["name"]


@pytest.mark.parametrize("text", ["Janet Doe", "Jane Doerr", "MaryJane Doe"])
def test_name_needs_word_boundaries(text):
    assert scan(text) == []


def test_short_and_empty_values_are_ignored():
    assert scan("Al was here; al; AL") == []
    assert find_personal_values(make(), {"name": "", "phone": "12-34", "email": None}) == []


def test_finds_personal_values_in_manifest_strings():
    found = scan("nothing", description="Built by Jane Doe at 12 Elm   Street.")
    assert {(f.kind, f.location) for f in found} == {
        ("name", "manifest.description"),
        ("address", "manifest.description"),
    }
    schema = {"properties": {"owner": {"default": "jane.doe@example.com"}}}
    found = scan("nothing", data_schema=schema)
    assert [f.location for f in found] == ["manifest.data_schema.properties.owner.default"]


def test_check_publishable_reports_personal_data_masked():
    b = make({"app.js": "a\nb\nmail jane.doe@example.com or 555 123 4567\n", **BASE_FILES})
    err = rejects(check_publishable, b, PROFILE, code="personal_data")
    assert [(e["location"], e["kind"]) for e in err.errors] == [
        ("files/app.js:3", "email"),
        ("files/app.js:3", "phone"),
    ]
    assert "email address" in err.errors[0]["message"]
    assert "J***@example.com" in err.errors[0]["message"]
    text = json.dumps(err.to_problem()).lower()
    assert "jane.doe@" not in text and "1234567" not in text and "123-4567" not in text


def test_check_publishable_passes_clean_bundle():
    check_publishable(make(), PROFILE)


# --------------------------------------------------------------------------- secrets

# Split so that this file itself does not trip secret scanners.
SECRETS = {
    "aws_access_key_id": "AKIA" + "IOSFODNN7EXAMPLE",
    "private_key": "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----",
    "github_token": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "openai_api_key": "sk-" + "proj-Zx81Kq7Lm2Np4Rt6Vw8Yb0Cd3Ef5Gh7Jk9",
    "stripe_live_key": "sk_" + "live_51HxYz2AbCdEfGhIjKlMn0pQ",
    "slack_token": "xoxb" + "-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "google_api_key": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
}


@pytest.mark.parametrize(("kind", "secret"), sorted(SECRETS.items()))
def test_finds_each_secret_kind(kind, secret):
    b = make({"app.js": f'// config\nconst k = "{secret}";\n', **BASE_FILES})
    found = find_secrets(b)
    assert [(f.kind, f.location) for f in found] == [(kind, "files/app.js:2")]
    assert secret not in found[0].masked
    err = rejects(check_publishable, b, {}, code="secret")
    assert err.errors[0]["kind"] == kind and err.errors[0]["location"] == "files/app.js:2"
    assert secret not in json.dumps(err.to_problem())


def test_more_secret_variants():
    github_pat = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
    restricted = "rk_" + "live_51HxYz2AbCdEfGhIjKlMn0pQ"
    pem = "-----BEGIN OPENSSH " + "PRIVATE KEY-----"
    for secret, kind in [
        (github_pat, "github_token"),
        (restricted, "stripe_live_key"),
        (pem, "private_key"),
    ]:
        found = find_secrets(make({"a.txt": secret, **BASE_FILES}))
        assert [f.kind for f in found] == [kind]


def test_openai_key_is_masked_like_sk_ellipsis_last4():
    (finding,) = find_secrets(make({"a.js": SECRETS["openai_api_key"], **BASE_FILES}))
    assert finding.masked == "sk-…" + SECRETS["openai_api_key"][-4:]


@pytest.mark.parametrize(
    "line",
    [
        'api_key = "Zx81Kq7Lm2Np4Rt6Vw8Yb0Cd"',
        "const API_KEY='q8W2e9R4t7Y1u3I6o0P5'",
        '"clientSecret": "d41d8cd98f00b204e9800998ecf8427e"',
        "db_password: `Tr0ub4dor93xyzQ7w`",
    ],
)
def test_finds_generic_high_entropy_assignments(line):
    found = find_secrets(make({"cfg.js": f"\n\n{line}\n", **BASE_FILES}))
    assert [(f.kind, f.location) for f in found] == [("generic_secret", "files/cfg.js:3")]
    assert found[0].masked.startswith("…") and len(found[0].masked) == 5


@pytest.mark.parametrize(
    "text",
    [
        'const STORAGE_KEY = "sprig.diet.entries";',
        'const tokenKey = "sprigSessionTokenStorage";',
        'api_key = "your-api-key-goes-here-1234"',
        'api_key = "xxxxxxxxxxxxxxxxxxxxxxxx"',
        "api_key = process.env.API_KEY",
        '<div class="sk-button-primary-large-rounded">',
        '<div class="sk-Button-Primary-Large-Rounded">',
        "const id = 'sk-item-0012-0034-0056-0078';",
        "const token = localStorage.getItem('token');",
        'secret: "https://example.com/oauth2/callback1"',
        "AKIA is a prefix; AKIAshort",
        "notAKIAIOSFODNN7EXAMPLE",
    ],
)
def test_secret_scan_ignores_ordinary_code(text):
    assert find_secrets(make({"app.js": text, **BASE_FILES})) == []


def test_secret_in_manifest_is_found():
    b = make(description="key " + SECRETS["aws_access_key_id"])
    assert find_secrets(b) == [Finding("aws_access_key_id", "manifest.description", "AKIA…MPLE")]


def test_secret_beats_personal_data_for_the_code():
    b = make({"a.js": f"{SECRETS['github_token']}\njane.doe@example.com\n", **BASE_FILES})
    err = rejects(check_publishable, b, PROFILE, code="secret")
    assert {e["code"] for e in err.errors} == {"secret", "personal_data"}


def test_a_full_size_bundle_is_scanned_to_its_last_byte():
    """No window or early stop: a clean 2 MB bundle passes both scans, and a secret and an
    e-mail planted at the very end of its last file are found."""
    files = {f"src/f{i}.js": wordy_text(100_000, seed=i) for i in range(20)} | BASE_FILES
    clean = make(files)
    assert clean.size > 1_900_000
    assert find_secrets(clean) == []
    assert find_personal_values(clean, PROFILE) == []
    tail = f"\n{SECRETS['github_token']}\njane.doe@example.com\n"
    planted = make(files | {"src/f19.js": files["src/f19.js"] + tail})
    assert find_secrets(planted) != []
    assert find_personal_values(planted, PROFILE) != []
