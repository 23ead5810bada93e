"""Finding personal data in text, offline.

`findings_in(text)` returns the spans of seven kinds of personal data, each validated
where a check exists:

- `EMAIL`: a regular expression;
- `PHONE`: `phonenumbers` (Google's libphonenumber) with region NL at leniency VALID, so
  Dutch numbers in any common notation and every number with a country code (`+44 …`,
  `0044 …`); foreign numbers without one (`(415) 555-2671`) are not found;
- `IBAN`: any country, any case, with or without spaces, mod-97 and BBAN structure by
  `stdnum.iban` (a mistyped IBAN fails its checksum and stays);
- `CREDIT_CARD`: brand prefix and length, and the Luhn check (`stdnum.luhn`);
- `IP_ADDRESS`: IPv4 and IPv6 (with a prefix length), checked by `ipaddress`; not a
  version number (`versie 1.2.3.4`);
- `URL`: with a scheme or `www.`, or a bare domain on a list of top-level domains that do
  not look like file names (`example.nl`, not `settings.py`);
- `BSN`: the 11-proef (`stdnum.nl.bsn`) and either a word such as BSN, burgerservicenummer
  or sofinummer near it, or the official dotted notation `1234.56.782` (docs/decisions.md
  "PII": the 11-proef alone passes one in eleven nine-digit numbers).

Text is first brought to one writing (`normalised`): no-break and other Unicode spaces (and a
blank Braille pattern) become a space, zero-width and other invisible format characters,
combining marks, variation selectors and Hangul fillers go, Unicode line and paragraph
separators become a line break, and every other character is compatibility-folded (NFKC: a
fullwidth `＠` or `．`, a superscript or circled digit become their plain forms), a digit of any
script becomes its value (Arabic-Indic `٩١` reads `91`), a dash of any kind (the Hebrew maqaf,
the minus sign) a hyphen-minus and an ideographic full stop a dot. The detectors run on that;
each finding is mapped back to its span of the original text (the placeholder replaces what
the person wrote, invisible characters and the marks on its last character included). An IBAN's groups may also be split by tabs, dots or one line
break, a BSN by dashes; an e-mail address may have an internationalised domain.

Names, street addresses, postcodes, dates of birth and other identifiers are not
found (README "Personal data"). Measured on labelled Dutch and English chat messages
in a PII spike before this code (docs/decisions.md "Personal data"); the examples are in
`tests/core_memory/pii/test_detection.py`.
"""
from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

import phonenumbers
from stdnum import iban as stdnum_iban
from stdnum import luhn
from stdnum.nl import bsn as stdnum_bsn

EMAIL = "EMAIL"
PHONE = "PHONE"
IBAN = "IBAN"
CREDIT_CARD = "CREDIT_CARD"
IP_ADDRESS = "IP_ADDRESS"
URL = "URL"
BSN = "BSN"
# When two findings overlap, the longer one wins; of two as long, the kind listed first
# (an e-mail address beats the URL of its domain, a URL the IP address inside it).
KINDS = (IBAN, EMAIL, CREDIT_CARD, URL, IP_ADDRESS, BSN, PHONE)

PHONE_REGION = "NL"


@dataclass(frozen=True)
class Finding:
    """One piece of personal data: `text[start:end]` is `value`, of kind `kind`."""

    start: int
    end: int
    kind: str
    value: str


_LINE_BREAKS = {"\u0085", "\u2028", "\u2029"}
# Characters that show nothing, or only a blank, and that are no space or format character by
# their category: Hangul fillers, Khmer inherent vowels, Mongolian and Unicode variation selectors.
_INVISIBLE = {0x115F, 0x1160, 0x3164, 0xFFA0, 0x17B4, 0x17B5, *range(0x180B, 0x1810), *range(0xFE00, 0xFE10), *range(0xE0100, 0xE01F0)}
_BLANKS = {"\u2800"}  # a Braille pattern with no dots: reads as a space
_FULL_STOPS = {"\u3002"}  # the ideographic full stop (and its halfwidth form): a domain's dot to IDNA
_DASHES = {"\u2212"}  # the minus sign, beside every dash punctuation (Pd: hyphens, en dash, maqaf, …)


def _is_invisible(character: str) -> bool:
    return ord(character) in _INVISIBLE or unicodedata.category(character) in ("Cf", "Mn", "Me")


def _folded(character: str) -> str:
    """One character of compatibility-folded text (after NFKC): a digit of any script is its
    value, a dash a hyphen-minus, an ideographic full stop a dot."""
    if character in _FULL_STOPS:
        return "."
    if character in _DASHES or unicodedata.category(character) == "Pd":
        return "-"
    if unicodedata.category(character) == "Nd":
        return str(unicodedata.decimal(character))
    return character


def _character_normalised(character: str) -> str:
    if character in " \n\r":
        return character
    if character == "\t" or character in _BLANKS or unicodedata.category(character) == "Zs":
        return " "  # no-break, narrow no-break, thin, figure, ideographic … spaces
    if character in _LINE_BREAKS or unicodedata.category(character) in ("Zl", "Zp"):
        return "\n"
    if _is_invisible(character):
        return ""  # zero-width space and joiners, BOM, soft hyphen, direction marks, combining marks, variation selectors
    # Compatibility forms: fullwidth ＠ and ．, superscript and circled digits, ligatures …
    return "".join(
        " " if unicodedata.category(each) == "Zs" else _folded(each)
        for each in unicodedata.normalize("NFKC", character)
        if not _is_invisible(each)
    )


def normalised_with_positions(text: str) -> tuple[str, list[int]]:
    """`normalised(text)`, and for each of its characters the index of the character of `text`
    it came from (one more entry: `len(text)`)."""
    parts: list[str] = []
    positions: list[int] = []
    for index, character in enumerate(text):
        if character.isascii() and character != "\t":
            parts.append(character)
            positions.append(index)
            continue
        replacement = _character_normalised(character)
        parts.append(replacement)
        positions.extend([index] * len(replacement))
    positions.append(len(text))
    return "".join(parts), positions


def normalised(text: str) -> str:
    """The one writing the detectors read (the module's docstring)."""
    return normalised_with_positions(text)[0]


# A domain's labels and top-level domain may be internationalised (`müller.de`, `例え.jp`, or
# their `xn--` form); `[^\W_]` is a letter or digit of any script.
_EMAIL = re.compile(
    r"(?<![\w.%+\-])"
    r"[^\W_][\w.%+\-]{0,63}"
    r"@"
    r"(?:[^\W_](?:(?:[^\W_]|-){0,61}[^\W_])?\.)+"
    r"(?:[^\W\d_]{2,24}|xn--[a-z0-9\-]{2,59})"
    r"(?![\w\-]|\.[^\W_])"
)


def _emails(text: str) -> Iterable[Finding]:
    for match in _EMAIL.finditer(text):
        yield Finding(match.start(), match.end(), EMAIL, match.group())


# Top-level domains accepted for a bare domain (no scheme, no `www.`). Left out on purpose:
# those that collide with file extensions and words people type in chat (py, md, sh, rs,
# zip, mov, ai, pl, so, do, is, it, me, to, …); with a scheme or `www.` every domain counts.
_BARE_TLDS = (
    "nl be de fr uk eu com org net info biz io dev app nu frl amsterdam "
    "ch at dk se no fi es pt ie lu cz us ca au nz tech online shop site "
    "cloud blog email store xyz gov edu"
).split()
_URL_TRAILING = ".,;:!?'\"”’)]}>"
_URL_SCHEME = re.compile(r"(?i)\b(?:https?|ftp)://[^\s<>\"'`]+")
_URL_WWW = re.compile(r"(?i)(?<![\w@./\-])www\d{0,3}\.[^\s<>\"'`]+")
_URL_BARE = re.compile(
    r"(?<![\w@.\-/])"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+"
    r"(?:" + "|".join(sorted(_BARE_TLDS, key=len, reverse=True)) + r")"
    r"(?![\w\-@])"
    r"(?::\d{2,5})?"
    r"(?:/[^\s<>\"'`]*)?"
)


def _url_trimmed(url: str) -> str:
    """Without the punctuation that ends the sentence, keeping a `)` that closes a `(` inside the URL."""
    while url and url[-1] in _URL_TRAILING:
        if url[-1] == ")" and url.count("(") >= url.count(")"):
            break
        url = url[:-1]
    return url


def _urls(text: str) -> Iterable[Finding]:
    for pattern in (_URL_SCHEME, _URL_WWW, _URL_BARE):
        for match in pattern.finditer(text):
            url = _url_trimmed(match.group())
            if pattern is _URL_BARE:
                host = url.split("/", 1)[0].split(":", 1)[0]
                if not re.search(r"[A-Za-z]", host.rsplit(".", 1)[0]):
                    continue  # `1.nl` is not a domain anyone writes
            if url:
                yield Finding(match.start(), match.start() + len(url), URL, url)


_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?:/\d{1,2})?(?![\w]|\.\d)")
_IPV6 = re.compile(
    r"(?<![\w:.])"
    r"(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{0,4}|(?:\d{1,3}\.){3}\d{1,3})"
    r"(?:%[0-9A-Za-z]+)?(?:/\d{1,3})?"
    r"(?![\w:]|\.\d)"
)
_VERSION_BEFORE = re.compile(r"(?i)(?:\bv|\bversie|\bversion|\brelease|\bbuild|\bfirmware)\s*$")


def _ip_addresses(text: str) -> Iterable[Finding]:
    for match in _IPV4.finditer(text):
        try:
            ipaddress.ip_interface(match.group())
        except ValueError:
            continue
        if _VERSION_BEFORE.search(text[max(0, match.start() - 12) : match.start()]):
            continue
        yield Finding(match.start(), match.end(), IP_ADDRESS, match.group())
    for match in _IPV6.finditer(text):
        address = match.group()
        if address.strip(":") == "":
            continue
        try:
            ipaddress.ip_interface(address.split("%")[0])
        except ValueError:
            continue
        yield Finding(match.start(), match.end(), IP_ADDRESS, address)


# Between groups: a space (a tab or any Unicode space, after `normalised`), a dash, a dot, or
# one line break.
_IBAN_SEPARATOR = r"(?:[ \-.]|\r?\n)"
_IBAN = re.compile(r"(?i)(?<![A-Za-z0-9])([A-Z]{2}\d{2})((?:" + _IBAN_SEPARATOR + r"?[A-Z0-9]{1,4}){2,9})")
_IBAN_GROUP = re.compile(r"(?i)" + _IBAN_SEPARATOR + r"?[A-Z0-9]{1,4}")
_IBAN_SHORTEST = 15  # Norway's


def _ibans(text: str) -> Iterable[Finding]:
    for match in _IBAN.finditer(text):
        groups = _IBAN_GROUP.findall(match.group(2))
        # The longest run of groups that is a valid IBAN: the next word may start with letters or digits.
        for count in range(len(groups), 1, -1):
            candidate = match.group(1) + "".join(groups[:count])
            compact = re.sub(r"[^A-Za-z0-9]", "", candidate).upper()
            if len(compact) < _IBAN_SHORTEST:
                break
            end = match.start() + len(candidate)
            if stdnum_iban.is_valid(compact, check_country=False) and not (end < len(text) and text[end].isalnum()):
                yield Finding(match.start(), end, IBAN, candidate)
                break


_CARD = re.compile(r"(?<![\d\-.,/])(?:\d[ \-]?){12,18}\d(?![\d\-]|[.,]\d)")


def _card_brand_fits(digits: str) -> bool:
    """A known brand's prefix with one of its lengths: most 16-digit numbers are no card."""
    length = len(digits)
    if digits[0] == "4":  # Visa
        return length in (13, 16, 19)
    if digits[:2] in ("34", "37"):  # American Express
        return length == 15
    if "51" <= digits[:2] <= "55" or "2221" <= digits[:4] <= "2720":  # Mastercard
        return length == 16
    if digits[:4] == "6011" or digits[:2] == "65" or "644" <= digits[:3] <= "649":  # Discover
        return 16 <= length <= 19
    if "3528" <= digits[:4] <= "3589":  # JCB
        return 16 <= length <= 19
    if digits[:2] in ("36", "38", "39") or "300" <= digits[:3] <= "305":  # Diners
        return 14 <= length <= 19
    if digits[:2] in ("50", "56", "57", "58", "63", "67"):  # Maestro
        return 12 <= length <= 19
    return False


def _credit_cards(text: str) -> Iterable[Finding]:
    for match in _CARD.finditer(text):
        number = match.group().rstrip(" -")
        if len(set(re.findall(r"[ \-]", number))) > 1:
            continue  # spaces and dashes mixed: a list of numbers, not a card
        digits = re.sub(r"\D", "", number)
        if _card_brand_fits(digits) and luhn.is_valid(digits):
            yield Finding(match.start(), match.start() + len(number), CREDIT_CARD, number)


_BSN = re.compile(
    r"(?<![\w.,\-/#])"
    r"(\d{9}|\d{4}\.\d{2}\.\d{3}|\d{3} \d{3} \d{3}|\d{3}\.\d{3}\.\d{3}|\d{3}-\d{3}-\d{3}|\d{3}-\d{2}-\d{4}|\d{4}-\d{2}-\d{3})"
    r"(?![\w\-/]|[.,]\d)"
)
_BSN_DOTTED = re.compile(r"\d{4}\.\d{2}\.\d{3}")
_BSN_WORDS = re.compile(
    r"(?i)\b(?:bsn|burger\s?service\s?nummer|burgerservicenr|sofi[\s\-]?(?:nummer|nr)"
    r"|citizen\s+service\s+number|social\s+security|persoonsnummer|fiscaal\s+nummer)"
)
_BSN_WORDS_BEFORE, _BSN_WORDS_AFTER = 60, 40


def _bsns(text: str) -> Iterable[Finding]:
    for match in _BSN.finditer(text):
        number = match.group(1)
        if not stdnum_bsn.is_valid(re.sub(r"\D", "", number)):
            continue
        near = text[max(0, match.start() - _BSN_WORDS_BEFORE) : match.end() + _BSN_WORDS_AFTER]
        if _BSN_WORDS.search(near) or _BSN_DOTTED.fullmatch(number):
            yield Finding(match.start(), match.end(), BSN, number)


_DATE = re.compile(r"(\d{1,2})[-/.](\d{1,2})[-/.](\d{2}|\d{4})")
# Order, invoice and ticket numbers that happen to be valid phone numbers.
_REFERENCE_BEFORE = re.compile(
    r"(?i)(?:order|bestel|factuur|klant|ticket|zaak|referentie|dossier|artikel|invoice"
    r"|account|lid|pakket|tracking)\s*(?:nummer|nr\.?|no\.?|number|id)?\s*[:#]?\s*$"
)


def _looks_like_a_date(value: str) -> bool:
    match = _DATE.fullmatch(value.strip())
    return bool(match) and 1 <= int(match.group(1)) <= 31 and 1 <= int(match.group(2)) <= 12


def _phones(text: str) -> Iterable[Finding]:
    for match in phonenumbers.PhoneNumberMatcher(text, PHONE_REGION, leniency=phonenumbers.Leniency.VALID):
        if _REFERENCE_BEFORE.search(text[max(0, match.start - 30) : match.start]):
            continue
        if _looks_like_a_date(match.raw_string):
            continue  # `09-06-2019` is a valid number in the 0906 range, and a date
        start, value = match.start, match.raw_string
        if value.startswith("(") and value.count("(") > value.count(")"):
            start, value = start + 1, value[1:]  # `(+44 20 7946 0958)`: the bracket belongs to the sentence
        yield Finding(start, match.end, PHONE, value)


def _without_overlaps(findings: Iterable[Finding]) -> list[Finding]:
    ordered = sorted(findings, key=lambda found: (found.start - found.end, KINDS.index(found.kind), found.start))
    kept: list[Finding] = []
    for found in ordered:
        if all(found.end <= other.start or found.start >= other.end for other in kept):
            kept.append(found)
    return sorted(kept, key=lambda found: found.start)


def findings_in(text: str) -> list[Finding]:
    """The personal data in `text`, in order, never overlapping, as spans of `text` itself
    (found in its normalised writing). May raise whatever the libraries raise; callers go
    through `core_memory.pii.placeholders`, which turns that into a `RedactionError`."""
    plain, positions = normalised_with_positions(text)
    if plain == text:
        return _findings_in_normalised(text)
    spans = []
    for found in _findings_in_normalised(plain):
        start, end = positions[found.start], positions[found.end - 1] + 1
        # A mark or variation selector after the last character belongs to it (a keycap's, a strike's).
        while end < len(text) and (unicodedata.category(text[end]) in ("Mn", "Me") or ord(text[end]) in _INVISIBLE):
            end += 1
        spans.append(Finding(start, end, found.kind, text[start:end]))
    return spans


def _findings_in_normalised(text: str) -> list[Finding]:
    findings = [
        *_emails(text),
        *_urls(text),
        *_ip_addresses(text),
        *_ibans(text),
        *_credit_cards(text),
        *_bsns(text),
        *_phones(text),
    ]
    return _without_overlaps(findings)
