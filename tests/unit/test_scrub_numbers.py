"""feedback.scrub on what a comment may carry beyond contacts: payment cards (Luhn-checked),
IBANs (check digits verified) and long ids, and every class of the module docstring written
in English, Chinese and Japanese (where digits may be full width and words have no spaces)."""

from __future__ import annotations

import pytest

from feedback.scrub import Scrubber

CARDS = [
    "4111 1111 1111 1111",  # Visa test number, grouped by four
    "4111-1111-1111-1111",
    "4111111111111111",
    "3782 822463 10005",  # American Express, 15 digits in 4-6-5
    "5555 5555 5555 4444",  # Mastercard
    "6011000990139424",  # Discover
    "４１１１ １１１１ １１１１ １１１１",  # full-width digits, as CJK keyboards type them
    "4111\u30001111\u30001111\u30001111",  # ideographic spaces
]
IBANS = [
    "DE89 3704 0044 0532 0130 00",
    "DE89370400440532013000",
    "GB82 WEST 1234 5698 7654 32",
    "FR14 2004 1010 0505 0001 3M02 606",
    "gb82west12345698765432",
]


@pytest.mark.parametrize("card", CARDS)
@pytest.mark.parametrize(
    "sentence",
    ["my card is {} thanks", "我的卡号是{}，谢谢", "カード番号は{}です"],
    ids=["en", "zh", "ja"],
)
def test_card_numbers_go_in_every_language(card, sentence):
    scrubbed = Scrubber().scrub(sentence.format(card))
    assert scrubbed == sentence.format("[card]")


@pytest.mark.parametrize("number", IBANS)
@pytest.mark.parametrize(
    "sentence",
    ["pay to {} OK please", "请转账到{}，谢谢", "振込先は{}です"],
    ids=["en", "zh", "ja"],
)
def test_ibans_go_and_the_next_word_stays(number, sentence):
    assert Scrubber().scrub(sentence.format(number)) == sentence.format("[iban]")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Not a card: fails the Luhn check, but 16 digits is an id all the same.
        ("order 4111 1111 1111 1112 shipped", "order [number] shipped"),
        ("customer id 12345678901234567890", "customer id [number]"),
        # A wrong check digit is not an IBAN; its letters stay (its long digit run does not).
        ("code DE00 3704 0044 0532 0130 00", "code DE00 [number] 00"),
        # Things that look numeric but identify nobody stay.
        ("two dates 2024-01-01 2024-01-02", "two dates 2024-01-01 2024-01-02"),
        ("ran 5 km in 00:27:13, 120 bpm", "ran 5 km in 00:27:13, 120 bpm"),
        ("MP3 player, AB12 model", "MP3 player, AB12 model"),
        ("drink 3000 ml", "drink 3000 ml"),
    ],
)
def test_what_is_and_is_not_a_number_to_remove(text, expected):
    assert Scrubber().scrub(text) == expected


# Every class the docstring names, once per language.
EVERY_CLASS = {
    "en": (
        "mail ana@example.org, call +1 415 555 0134, card 4111 1111 1111 1111, "
        "IBAN GB82 WEST 1234 5698 7654 32, id 98765432109876543210, "
        "see https://example.com/me?x=1 from 10.0.0.7, ask @ana_l or marta_k, I am Ana Lopez",
        "mail [email], call [phone], card [card], IBAN [iban], id [number], "
        "see [url] from [ip], ask [handle] or [handle], I am [personal]",
    ),
    "zh": (
        "邮箱ana@example.org，电话13812345678，卡号6011000990139424，"
        "账户DE89370400440532013000，编号98765432109876543210，"
        "网址https://example.cn/我的，来自10.0.0.7，找@ana_l或marta_k，我叫Ana Lopez",
        "邮箱[email]，电话[phone]，卡号[card]，账户[iban]，编号[number]，"
        "网址[url]，来自[ip]，找[handle]或[handle]，我叫[personal]",
    ),
    "ja": (
        "メールはana@example.orgで、電話は090-1234-5678、カードは４１１１１１１１１１１１１１１１、"
        "口座はFR14 2004 1010 0505 0001 3M02 606、会員番号は98765432109876543210、"
        "サイトは https://example.jp/ です。10.0.0.7 から@ana_lとmarta_kへ。名前はAna Lopez",
        "メールは[email]で、電話は[phone]、カードは[card]、口座は[iban]、会員番号は[number]、"
        "サイトは [url] です。[ip] から[handle]と[handle]へ。名前は[personal]",
    ),
}


@pytest.mark.parametrize("language", sorted(EVERY_CLASS))
def test_every_class_of_the_docstring(language):
    text, expected = EVERY_CLASS[language]
    scrubber = Scrubber(["marta_k"])
    assert scrubber.scrub(text, ("Ana Lopez",)) == expected
