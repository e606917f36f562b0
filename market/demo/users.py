"""The people and services of the demo community: names, handles, contact details and
personas drawn for each locale, and :func:`leaks`, the check that nothing an author
publishes carries their own personal data (Sprig refuses such bundles)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from random import Random
from typing import Any

from market.demo.community import DemoUser
from market.demo.material import PEOPLE

_LOCALE_LANG = {"zh": "zh", "ja": "ja", "es": "es"}


@dataclass
class Member:
    handle: str
    display_name: str
    email: str
    phone: str | None
    address: str | None
    kind: str
    role: str
    share: bool
    bio: str
    locale: str
    gender: str
    persona: dict[str, Any]
    activity: float

    @property
    def lang(self) -> str:
        return _LOCALE_LANG.get(self.locale[:2], "en")

    def personal_values(self) -> list[str]:
        values = [self.email, self.display_name]
        if self.phone:
            values.append(self.phone)
        if self.address:
            values.append(self.address)
        return [v for v in values if v]

    def freeze(self) -> DemoUser:
        return DemoUser(
            self.handle,
            self.display_name,
            self.email,
            self.phone,
            self.address,
            self.kind,
            self.role,
            self.share,
            self.bio,
            self.locale,
        )


def _ascii(s: str) -> str:
    flat = unicodedata.normalize("NFKD", s).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]", "", flat.lower())


def weighted(rng: Random, items: list[Any], weights: list[float]) -> Any:
    return rng.choices(items, weights=weights, k=1)[0]


def _parent_word(gender: str) -> str:
    return {"f": "mom", "m": "dad"}.get(gender, "parent")


def fill(text: str, gender: str) -> str:
    word = _parent_word(gender)
    return text.replace("{parent}", word).replace("{Parent}", word.capitalize())


def make_users(rng: Random, n_users: int) -> list[Member]:
    users: list[Member] = []
    taken: set[str] = set()
    phones: set[str] = set()
    personas = PEOPLE.personas
    general = [p for p in personas if p["weight"]]

    def unique(handle: str) -> str:
        handle = handle.strip("._") or "user"
        base, n = handle, 2
        while handle in taken:
            handle = f"{base}{n}"
            n += 1
        taken.add(handle)
        return handle

    for handle, name, bio in (
        (
            "main-agent",
            "Main Agent",
            "the personal AI agent that plans with you and installs sub-agents",
        ),
        ("coding-agent", "Coding Agent", "writes and forks sub-agents when you ask for a change"),
        ("training-team", "Training Team", "reviews shared feedback to improve the agents"),
    ):
        taken.add(handle)
        users.append(
            Member(
                handle,
                name,
                f"{handle}@example.org",
                None,
                None,
                "service",
                "user",
                False,
                bio,
                "en-US",
                "n",
                general[0],
                0.0,
            )
        )

    locales = [loc for loc, _ in PEOPLE.locales]
    locale_w = [w for _, w in PEOPLE.locales]
    n_people = max(0, n_users - len(users))
    for i in range(n_people):
        locale = weighted(rng, locales, locale_w)
        if locale == "zh-CN":
            sur, sur_py = rng.choice(PEOPLE.surname_zh)
            given, given_py, gender = rng.choice(PEOPLE.given_zh)
            display = sur + given
            first, last = given_py, sur_py
        elif locale == "ja-JP":
            sur, sur_ro = rng.choice(PEOPLE.surname_ja)
            given, given_ro, gender = rng.choice(PEOPLE.given_ja)
            display = f"{sur} {given}"
            first, last = given_ro, sur_ro
        else:
            if locale == "fr-CA":
                first_name, gender = rng.choice(PEOPLE.first_fr)
                last_name = rng.choice(PEOPLE.last_fr)
            elif locale.startswith("es"):
                first_name, gender = rng.choice(PEOPLE.first_es)
                last_name = rng.choice(PEOPLE.last_es)
            else:
                # Skew toward women: most of Sprig's planners are moms.
                pool = PEOPLE.first_en
                first_name, gender = rng.choice(pool)
                if gender == "m" and rng.random() < 0.35:
                    first_name, gender = rng.choice([p for p in pool if p[1] == "f"])
                last_name = rng.choice(PEOPLE.last_en)
            display = f"{first_name} {last_name}"
            first, last = _ascii(first_name), _ascii(last_name)

        # Persona: language-specific ones for zh/ja/es users most of the time.
        special = {"zh-CN": "zh-parent", "ja-JP": "ja-parent", "es-MX": "es-parent"}.get(locale)
        if i < len(general):
            persona = general[i]  # every persona exists at least once
        elif special and rng.random() < 0.7:
            persona = next(p for p in personas if p["id"] == special)
        else:
            persona = weighted(rng, general, [float(p["weight"]) for p in general])
        if persona.get("gender") and persona["gender"] != gender:
            persona = next(p for p in general if p["id"] == "parent-of-two")

        style = rng.random()
        yy = rng.randint(70, 99)
        if style < 0.4:
            handle = f"{first}.{last}"
        elif style < 0.5:
            handle = f"{first}_{last}"
        elif style < 0.6:
            handle = f"{first}{last}"
        elif style < 0.7:
            handle = f"{first}.{last[:1]}"
        elif style < 0.8:
            handle = f"{first}{last[:1]}{yy}"
        elif style < 0.9:
            handle = f"{rng.choice(PEOPLE.handle_prefixes[gender])}_{last}"
        else:
            handle = f"{first}.{rng.choice(PEOPLE.handle_suffixes)}"
        handle = unique(handle)
        domain = weighted(rng, ["example.com", "example.org", "example.net"], [6, 2.5, 1.5])
        email = f"{handle}@{domain}"

        phone = None
        na = locale in PEOPLE.area_codes
        if (na and rng.random() < 0.65) or (not na and rng.random() < 0.3):
            codes = (
                PEOPLE.area_codes.get(locale)
                or PEOPLE.area_codes["en-CA" if rng.random() < 0.5 else "en-US"]
            )
            for _ in range(20):
                candidate = f"+1 {rng.choice(codes)}-555-01{rng.randint(0, 99):02d}"
                if candidate not in phones:
                    phones.add(candidate)
                    phone = candidate
                    break
        address = None
        if rng.random() < 0.35:
            towns = PEOPLE.towns["CA" if locale in ("en-CA", "fr-CA") else "US"]
            address = f"{rng.randint(12, 9899)} {rng.choice(PEOPLE.streets)}, {rng.choice(towns)}"

        bio = fill(rng.choice(persona["bios"]), gender)
        if rng.random() < 0.25 and persona["id"] not in ("zh-parent", "ja-parent", "es-parent"):
            extra_bio = rng.choice(
                [
                    "coffee first",
                    "two dogs",
                    "always behind on laundry",
                    "Sunday meal-prepper",
                    "lists for everything",
                    "chronic early riser",
                    "podcast addict",
                ]
            )
            bio = f"{bio}, {extra_bio}"
        activity = rng.paretovariate(1.3)  # a few prolific creators, a long quiet tail
        users.append(
            Member(
                handle,
                display,
                email,
                phone,
                address,
                "person",
                "user",
                rng.random() < 0.75,  # most people keep training sharing on when asked at setup
                bio,
                locale,
                gender,
                persona,
                activity,
            )
        )

    # Two or three moderators among long-time members.
    persons = [u for u in users if u.kind == "person"]
    for u in rng.sample(persons, k=min(len(persons), 3 if n_people > 200 else 2)):
        u.role = "moderator"
        u.bio = f"community moderator; {u.bio}"
    return users


def leaks(user: Member, haystack: str) -> bool:
    """True if any of the user's personal values appears in ``haystack`` (lowercased)."""
    for value in user.personal_values():
        if value.lower() in haystack:
            return True
    if user.phone:
        d = re.sub(r"\D", "", user.phone)[-7:]
        spellings = (d, f"{d[:3]}-{d[3:]}", f"{d[:3]} {d[3:]}", f"{d[:3]}.{d[3:]}")
        if any(x in haystack for x in spellings):
            return True
    return False
