"""Labelled chat messages in Dutch and English, from the PII spike (docs/decisions.md
"Personal data": its dev set and its hold-out set, written after the rules were frozen). Personal data is marked
inline as `[[KIND|value]]`; the rest is text that must stay as it is. Not labelled, by the
spike's rules: IBANs and cards that fail their checksum, version numbers, file names,
order/ticket/customer numbers that pass the 11-proef, and what is not detected at all
(names, addresses, postcodes, dates of birth, licence plates, VAT numbers)."""
from __future__ import annotations

import re

DEVELOPMENT = [
    'Mijn IBAN is [[IBAN|NL91 ABNA 0417 1643 00]], bel me op [[PHONE|06-12345678]].',
    'Kun je het bedrag overmaken naar [[IBAN|NL20INGB0001234567]]? Alvast bedankt!',
    'Rekeningnummer: [[IBAN|NL44 RABO 0123 4567 89]] t.n.v. J. de Vries',
    'Please wire it to [[IBAN|DE89 3704 0044 0532 0130 00]] before Friday.',
    'My UK account is [[IBAN|GB29 NWBK 6016 1331 9268 19]].',
    'Het Belgische nummer is [[IBAN|BE68 5390 0754 7034]], het Franse [[IBAN|FR14 2004 1010 0505 0001 3M02 606]].',
    'iban: [[IBAN|nl28abna0602716540]]',
    'Mijn oude IBAN [[IBAN|NL91ABNA0417164300]] is opgeheven, gebruik nu [[IBAN|NL20 INGB 0001 2345 67]].',
    'Send the refund to [[IBAN|ES91 2100 0418 4502 0005 1332]] and confirm by email to [[EMAIL|refunds.customer@example.com]].',
    'Stuur de factuur naar [[EMAIL|jan.devries@example.nl]] graag.',
    'You can reach me at [[EMAIL|sarah.connor+work@mail.example.co.uk]] any time.',
    'Mail naar [[EMAIL|info@bakkerij-jansen.nl]] of bel [[PHONE|010 123 45 67]].',
    'Mijn e-mailadres is [[EMAIL|Anna.Smit@Example.NL]].',
    'Stuur een mailtje naar [[EMAIL|support@example.io]].',
    'Het adres was ([[EMAIL|p_de_boer@uni-example.eu]]), klopt dat?',
    'Mijn mobiel: [[PHONE|06 1234 5678]]',
    'Bel gerust op [[PHONE|+31 6 12345678]], ik ben er de hele dag.',
    'Vanuit het buitenland: [[PHONE|0031612345678]]',
    'Ons kantoor in Amsterdam: [[PHONE|020-1234567]]',
    'Call our London office on [[PHONE|+44 20 7946 0958]] or the US team at [[PHONE|+1 (415) 555-2671]].',
    'Mijn nummer is [[PHONE|0612345678]], app maar.',
    'Tel. [[PHONE|085 303 2000]] (bereikbaar ma-vr 9:00-17:00)',
    'Belgisch nummer: [[PHONE|+32 470 12 34 56]]',
    'Bel me terug op [[PHONE|06-87654321]] na 18:00.',
    'Bel [[PHONE|+31 (0)6 12345678]] als het dringend is.',
    "My number is [[PHONE|(415) 555-2671]] if you're in the States.",
    'Thuis: [[PHONE|030 - 123 45 67]], werk: [[PHONE|+31 30 765 43 21]].',
    'Is [[PHONE|06-12345678]] nog steeds je nummer? En [[EMAIL|jan.devries@example.nl]]?',
    'Mijn creditcard is [[CREDIT_CARD|4111 1111 1111 1111]], vervalt 12/27.',
    'Card number [[CREDIT_CARD|5500-0000-0000-0004]], CVC 123.',
    'Amex: [[CREDIT_CARD|3782 822463 10005]]',
    'Ik betaalde met [[CREDIT_CARD|4012888888881881]] maar de betaling mislukte.',
    'Discover [[CREDIT_CARD|6011 1111 1111 1117]] graag verwijderen uit mijn account',
    'Mastercard [[CREDIT_CARD|2223 0031 2200 3222]] is geblokkeerd.',
    'Charge it to my Visa [[CREDIT_CARD|4111-1111-1111-1111]] please',
    'De server draait op [[IP_ADDRESS|192.168.1.10]] en de database op [[IP_ADDRESS|10.0.0.5]].',
    'Our public IP is [[IP_ADDRESS|203.0.113.42]], can you whitelist it?',
    'IPv6: [[IP_ADDRESS|2001:db8:85a3::8a2e:370:7334]]',
    'Ping [[IP_ADDRESS|fe80::1ff:fe23:4567:890a]] even.',
    'Login faalde vanaf [[IP_ADDRESS|8.8.8.8]] om 03:14.',
    'De volledige IPv6 is [[IP_ADDRESS|2001:0db8:0000:0000:0000:ff00:0042:8329]].',
    'Het IP van de printer is [[IP_ADDRESS|192.168.178.21]]; de firmware is versie 1.2.3.4.',
    'VPN endpoint [[URL|https://vpn.example.com]] resolves to [[IP_ADDRESS|198.51.100.7]].',
    'Zie [[URL|https://www.example.nl/contact?ref=mail]] voor details.',
    'Check [[URL|www.example.nl/path]] en laat weten wat je ervan vindt.',
    'Mijn portfolio staat op [[URL|jansen-fotografie.nl]].',
    'Docs are at [[URL|http://docs.example.com/v2/api]].',
    'Link: [[URL|https://drive.example.com/file/d/1AbC_dEf/view]]',
    '(zie [[URL|https://example.org/over-ons]])',
    'Website: [[URL|www.bakkerij-jansen.nl]]',
    'Bekijk [[URL|https://github.com/example/repo/issues/42]] even.',
    'My personal site is [[URL|annasmit.dev]]',
    'Een kopie staat op [[URL|http://192.168.1.20:8080/share]]',
    'Je kunt inloggen via [[URL|https://mijn.example.nl/login]] met je e-mail [[EMAIL|k.visser@example.nl]].',
    'Mijn BSN is [[BSN|123456782]].',
    'Burgerservicenummer: [[BSN|111222333]]',
    'Mijn sofinummer is [[BSN|1234.56.782]]',
    'BSN van mijn dochter: [[BSN|725763863]], geboren 12-03-2015.',
    'Voor de aangifte heb je [[BSN|162275869]] nodig, dat is mijn burgerservicenummer.',
    'Here is my citizen service number (BSN): [[BSN|192285142]]',
    'Mijn nummer bij de gemeente is [[BSN|691682483]].',
    'Hoi, ik ben Pieter. Mail [[EMAIL|pieter@voorbeeld.nl]], bel [[PHONE|06-11223344]] of stuur iets naar [[IBAN|NL63TRIO0212345678]].',
    'Nieuwe gegevens: e-mail [[EMAIL|m.bakker@gmail.com]], telefoon [[PHONE|+31 20 123 4567]], BSN [[BSN|987825707]].',
    'De afspraak is op 30-11-2026 om 14:30.',
    'Het totaalbedrag is € 1.234,56 inclusief btw.',
    'Mijn postcode is 1234 AB en het huisnummer 56.',
    'Ordernummer 864623112 is onderweg, verwachte levering 2 december.',
    'Factuur 2026-004512 staat open, vervaldatum 15-12-2026.',
    'We updated the router firmware to version 1.2.3.4 yesterday.',
    'The meeting moved to 10:30 on 2026-11-30.',
    'Ik heb 3 x 250 gram gehakt besteld voor €12,99.',
    'Ticket #321146487 is gesloten.',
    'Klantnummer 187891151, graag vermelden bij contact.',
    'Het pakket weegt 1.250 kg en kost 2.499,00 euro.',
    'Tracking code: 3SABCD1234567890',
    'Het kenteken is AB-123-C.',
    'Python 3.11.7 en Django 5.2.19 draaien prima.',
    'Sla het bestand op als rapport.pdf of notities.md.',
    'Run python manage.py migrate en pas daarna settings.py aan.',
    'Telefonisch spreekuur is van 09:00 tot 12:00 op werkdagen.',
    'Er waren 123.456.789 bezoekers dit jaar.',
    'Mijn geboortedatum is 01-02-1985.',
    'The invoice total is $1,234,567.89.',
    'Kamer 2.14, gebouw B, 3e verdieping.',
    'Het artikelnummer is 8712345678906 (EAN).',
    'Kaartnummer 4111 1111 1111 1112 werd geweigerd.',
    'Please use IBAN NL91 ABNA 0417 1643 01 (I think I mistyped it).',
    'Het btw-nummer is NL123456789B01.',
    'The score was 3-1 and the attendance 45,000.',
    'Om 7.45 uur vertrekt de trein van spoor 5b.',
    'Bijlage: offerte_2026-11-30_v3.docx',
    'Kies optie 2.3.1 in het menu.',
    'Rond af op 0,5 en vermenigvuldig met 1.000.000.',
    'ISBN 978-90-12345-67-8 is het boek dat ik bedoel.',
    'Ref: 2026/11/30-0042',
    'Request id 123e4567-e89b-12d3-a456-426614174000 failed.',
    'Het MAC-adres is 00:1A:2B:3C:4D:5E.',
    'Bestelnummer 0201234567 is geannuleerd.',
    'Zaaknummer 467279627 is in behandeling, termijn 6 weken.',
    'Het verschil is 178598835 bytes, dus ongeveer 170 MB.',
    'Log: 2026-11-30T14:30:00Z job finished in 12.5 s, e.g. see the dashboard.',
    'Mijn hypotheekrente is 3,85% over 250.000 euro voor 30 jaar.',
    'De wedstrijd eindigde in 2-2; we spelen weer op 7/12 om 20.00 uur.',
]

HOLD_OUT = [
    'Mijn nummer: [[PHONE|06 - 12 34 56 78]], bel na vijven.',
    'Bereikbaar via [[PHONE|+31(0)20-1234567]] tijdens kantooruren.',
    'Het nummer van mijn moeder is [[PHONE|0455-123456]].',
    'Ruf mich an: [[PHONE|+49 30 12345678]]',
    'Appelle-moi au [[PHONE|+33 1 23 45 67 89]] stp.',
    'Reach me at [[PHONE|+1-202-555-0173]] after 5pm.',
    'Kantoor: [[PHONE|(020) 123 4567]], fax is er niet meer.',
    'Mijn werknummer is [[PHONE|0031 20 123 4567]] en thuis [[PHONE|072-5123456]].',
    'Stuur een sms naar [[PHONE|06.12.34.56.78]] als je er bent.',
    'Bij nood bel je 112, anders de huisarts op [[PHONE|0318-123456]].',
    'Contact: [[EMAIL|JOHN.DOE@EXAMPLE.COM]]',
    'Kun je het sturen naar [[EMAIL|j.jansen@sub.domein.nl]]. Dank!',
    'Van: Anna de Vries <[[EMAIL|anna@voorbeeld.nl]]>',
    'CC [[EMAIL|first-last@company-name.org]] en [[EMAIL|hr@company-name.org]] aub.',
    'mijn mail is [[EMAIL|pietje_puk1987@hotmail.com]] hoor',
    'Betalen kan op [[IBAN|NL57ASNB0123456789]] o.v.v. je naam.',
    'IBAN [[IBAN|NL16 BUNQ 2034 5678 90]] (bunq)',
    'Rekening: [[IBAN|nl60 knab 0255 5123 45]]',
    'Mijn Italiaanse rekening is [[IBAN|IT60 X054 2811 1010 0000 0123 456]].',
    'Swiss account [[IBAN|CH93 0076 2011 6238 5295 7]], Austrian one [[IBAN|AT61 1904 3002 3457 3201]].',
    'Überweisung bitte an [[IBAN|DE02120300000000202051]].',
    'Polish IBAN: [[IBAN|PL61 1090 1014 0000 0712 1981 2874]]',
    'Mijn debitcard [[CREDIT_CARD|4000 0566 5566 5556]] werkt niet in het buitenland.',
    'MC [[CREDIT_CARD|5105 1051 0510 5100]] exp 03/28',
    'Amex [[CREDIT_CARD|3714 496353 98431]] is de zakelijke kaart.',
    'test card [[CREDIT_CARD|4242424242424242]] keeps failing',
    'JCB: [[CREDIT_CARD|3530-1113-3330-0000]]',
    'De router zit op [[IP_ADDRESS|172.16.254.1]] en localhost is [[IP_ADDRESS|127.0.0.1]].',
    'Subnet [[IP_ADDRESS|10.10.10.0/24]] is voor gasten.',
    'Verbinding met [[IP_ADDRESS|192.168.0.1]]:3000 weigert.',
    'The IPv6 loopback is [[IP_ADDRESS|::1]] and our prefix [[IP_ADDRESS|2001:db8::1]].',
    'Kijk op [[URL|https://example.com/]] voor de prijzen.',
    'Lokaal draait het op [[URL|http://localhost:8000/admin]].',
    'Onze Belgische site: [[URL|www.voorbeeld.be]]',
    'Pricing is on [[URL|example.com/pricing]].',
    'Bestanden staan op [[URL|ftp://files.example.org/pub]]',
    'Mijn bedrijf: [[URL|meubelmakerij-devries.nl]] (sinds 1998)',
    'BSN: [[BSN|054968665]]',
    'Mijn burgerservicenummer (BSN) is [[BSN|2608.75.089]].',
    'sofi-nummer [[BSN|770004799]] graag niet delen',
    'Ik weet mijn BSN niet uit mijn hoofd, ik denk [[BSN|823885616]]?',
    'Dit is het nummer van mijn paspoortaanvraag: [[BSN|560705694]] (mijn burgerservicenummer).',
    'Wij zijn open van 8.30 tot 17.00 uur.',
    'Dossiernummer 2026-NL-000123 is afgesloten.',
    'Betalingskenmerk 7000 0001 2345 6789 graag vermelden.',
    'KvK-nummer 12345678, vestigingsnummer 000012345678.',
    'De telefoonrekening was € 45,60 deze maand.',
    'Het coördinaat is 52.3676, 4.9041 (Amsterdam).',
    'Upgrade naar v2.0.0.1 lost het op.',
    'Mijn IP-adres wijzigt dagelijks, dus whitelisten heeft geen zin.',
    'Er staan 1.000.000.000 records in de tabel.',
    'Bestelling 425015750 wordt morgen bezorgd.',
    'Referentie 560 705 694 is vervallen.',
    'Het was 23-24 graden en we liepen 12,5 km.',
    'Zie hoofdstuk 4.2.1 en tabel 3.1.',
    'The build took 00:12:34 and used 1.5 GB.',
    'Your verification code is 482913.',
    'Lees README.md en config.yaml voor de installatie.',
    'Pas op met test.py en main.rs, die zijn nog niet af.',
    'Ze woont op Kerkstraat 12, 3511 AB Utrecht.',
]

# Issue 19: personal data in the writings a redacting key let through — Unicode spaces, zero-width
# characters, tabs, dots and line breaks between an IBAN's groups, a dashed BSN, internationalised
# e-mail domains — and clean messages written with the same characters, which must stay clean.
WRITINGS = [
    'Mijn IBAN is [[IBAN|NL91\u00a0ABNA\u00a00417\u00a01643\u00a000]].',
    'Rekening: [[IBAN|NL91\u202fABNA\u202f0417\u202f1643\u202f00]] graag.',
    'IBAN\t[[IBAN|NL91\tABNA\t0417\t1643\t00]]',
    'Overmaken naar [[IBAN|NL20.INGB.0001.2345.67]] a.u.b.',
    'Mijn rekening is [[IBAN|NL44 RABO\n0123 4567 89]], dank je.',
    'Mijn rekening is [[IBAN|NL44 RABO\r\n0123 4567 89]], dank je.',
    'IBAN [[IBAN|NL91ABNA\u200b0417164300]] graag.',
    'IBAN\u00a0:\u00a0[[IBAN|DE89\u00a03704\u00a00044\u00a00532\u00a00130\u00a000]]',
    'Mail naar [[EMAIL|kees\u200b@example.nl]] even.',
    'E-mail: [[EMAIL|anna\u2060.smit@example.nl]]',
    'Mijn adres: [[EMAIL|jan@müller.de]]',
    'Schrijf naar [[EMAIL|info@bücher.example]] of bel.',
    'Kaart [[CREDIT_CARD|4111\u00a01111\u00a01111\u00a01111]] graag blokkeren.',
    'My card is [[CREDIT_CARD|5500\u202f0000\u202f0000\u202f0004]].',
    'BSN [[BSN|111-22-2333]] voor de aangifte.',
    'Mijn burgerservicenummer is [[BSN|111\u00a0222\u00a0333]].',
    'sofinummer\u00a0[[BSN|123-456-782]] graag',
    'Bel me op [[PHONE|06\u00a012345678]].',
    'Reach me at [[EMAIL|s.connor@bücher.de]] or [[PHONE|0031\u00a06\u00a012345678]].',
    'Het kost €\u00a01.250,00 per maand.',
    'Afspraak op 12\u00a0maart om 14:00.',
    'Tabel:\tnaam\tbedrag\tdatum',
    'Ordernummer\u00a0123456789 is verzonden.',
    'Bedankt\u200b voor je bericht!',
    'Postcode 1234\u00a0AB in Amsterdam.',
    'Code: NL-2026-0001\twordt gebruikt.',
    'Regel een\u2028regel twee\u2029derde alinea.',
    'De factuur van 2026-01-15 is betaald, kenmerk 2026-0115-33.',
    'Kamer 12.34.56 op de derde verdieping.',
    'Totaal\t€ 45,00\nBTW\t€ 9,45',
    'Zie\u00a0bijlage\u202f2 en paragraaf\u20093.',
    'Ticket\u00a0#4411-2233 staat open.',
    'Order 1111\u00a02222\u00a03333\u00a04444 is onderweg.',
    'Ik stuur het morgen\u00a0@\u00a0kantoor.',
    'Mijn bsn-aanvraag loopt nog, nummer 2026-04-001.',
    'Kenmerk NL\u00a02026\u00a0AB\u00a012 in behandeling.',
]

# --- Issue 28: compatibility forms -----------------------------------------------------------------
# The probe's writings that reached the model raw: digits of other scripts (Arabic-Indic, Persian,
# Devanagari, Bengali, fullwidth, mathematical bold), superscript, subscript, circled and keycap
# digits, fullwidth `＠` and `．` and the ideographic full stop, values split by variation
# selectors (U+FE0F, U+FE0E), the Hangul filler U+3164, the blank Braille pattern U+2800 or the
# Hebrew maqaf U+05BE, combining marks on digits, other dashes. Built from plain values by the
# helpers below, so each label is exactly the text the person wrote.


def in_digits(text: str, zero: str) -> str:
    """`text` with its ASCII digits in the script whose zero is `zero`."""
    return "".join(chr(ord(zero) + int(each)) if each.isascii() and each.isdigit() else each for each in text)


def fullwidth(text: str) -> str:
    return "".join(chr(ord(each) + 0xFEE0) if "!" <= each <= "~" else each for each in text)


def per_digit(text: str, table: str) -> str:
    """Each ASCII digit as `table[digit]` (superscript, subscript, circled digits)."""
    return "".join(table[int(each)] if each.isascii() and each.isdigit() else each for each in text)


def after_each_digit(text: str, inserted: str) -> str:
    """`inserted` after every digit but the last: a variation selector, a combining mark, a filler."""
    last = max(position for position, each in enumerate(text) if each.isdigit())
    return "".join(each + inserted if each.isdigit() and position < last else each for position, each in enumerate(text))


def marked(text: str, mark: str) -> str:
    """`mark` (a combining mark) on every digit, the last one too."""
    return "".join(each + mark if each.isdigit() else each for each in text)


ARABIC_INDIC, PERSIAN, DEVANAGARI, BENGALI, BOLD = "\u0660", "\u06f0", "\u0966", "\u09e6", "\U0001d7ce"
SUPERSCRIPT, SUBSCRIPT, CIRCLED = "⁰¹²³⁴⁵⁶⁷⁸⁹", "₀₁₂₃₄₅₆₇₈₉", "⓪①②③④⑤⑥⑦⑧⑨"
FE0F, FE0E, FILLER, BRAILLE_BLANK, MAQAF = "\ufe0f", "\ufe0e", "\u3164", "\u2800", "\u05be"
LOW_LINE, STROKE, KEYCAP = "\u0332", "\u0336", "\ufe0f\u20e3"
IBAN_NL, IBAN_NL_SPACED, IBAN_DE = "NL91ABNA0417164300", "NL91 ABNA 0417 1643 00", "DE89 3704 0044 0532 0130 00"
MOBILE, CARD, BSN_NUMBER, ADDRESS = "0612345678", "4111 1111 1111 1111", "123456782", "jan.devries@example.nl"

COMPATIBILITY = [
    # IBANs
    f"Mijn IBAN is [[IBAN|{in_digits(IBAN_NL, ARABIC_INDIC)}]].",
    f"Rekening: [[IBAN|{in_digits(IBAN_NL_SPACED, ARABIC_INDIC)}]] graag.",
    f"Überweisung an [[IBAN|{in_digits(IBAN_DE, PERSIAN)}]] bitte.",
    f"IBAN [[IBAN|{in_digits(IBAN_NL, DEVANAGARI)}]] voor de huur.",
    f"IBAN [[IBAN|{in_digits(IBAN_NL, BENGALI)}]] graag.",
    f"Mijn rekening: [[IBAN|{fullwidth(IBAN_NL)}]].",
    f"Rekening [[IBAN|{in_digits(IBAN_NL, BOLD)}]] a.u.b.",
    f"IBAN [[IBAN|{FE0F.join(IBAN_NL)}]] graag.",
    f"IBAN [[IBAN|{FE0E.join(IBAN_NL)}]] graag.",
    f"IBAN [[IBAN|{IBAN_NL_SPACED.replace(' ', FILLER)}]] graag.",
    f"IBAN [[IBAN|{IBAN_NL_SPACED.replace(' ', BRAILLE_BLANK)}]] graag.",
    f"IBAN [[IBAN|{IBAN_NL_SPACED.replace(' ', MAQAF)}]] graag.",
    f"IBAN [[IBAN|{marked(IBAN_NL, LOW_LINE)}]] graag.",
    f"IBAN [[IBAN|{per_digit(IBAN_NL, SUPERSCRIPT)}]] graag.",
    f"IBAN [[IBAN|{per_digit(IBAN_NL, CIRCLED)}]] graag.",
    f"IBAN [[IBAN|{marked(IBAN_NL, KEYCAP)}]] graag.",
    # e-mail addresses
    f"Mail naar [[EMAIL|{ADDRESS.replace('@', '＠')}]] even.",
    f"Mail naar [[EMAIL|{ADDRESS.replace('example.nl', 'example．nl')}]] even.",
    f"Mail naar [[EMAIL|{ADDRESS.replace('@', '＠').replace('.', '．')}]] even.",
    f"Mijn adres: [[EMAIL|{fullwidth(ADDRESS)}]]",
    f"Mail naar [[EMAIL|{ADDRESS.replace('@', '﹫')}]] even.",
    f"Mail naar [[EMAIL|{ADDRESS.replace('example.nl', 'example。nl')}]] even.",
    f"Mail naar [[EMAIL|{ADDRESS.replace('example.nl', 'example｡nl')}]] even.",
    f"Mail naar [[EMAIL|{ADDRESS.replace('jan', 'ja' + FE0F + 'n')}]] even.",
    f"Mail naar [[EMAIL|{ADDRESS.replace('jan', 'jan' + FILLER)}]] even.",
    f"Mail naar [[EMAIL|{ADDRESS.replace('example', 'exam' + LOW_LINE + 'ple')}]] even.",
    f"Mail naar [[EMAIL|{'jan' + in_digits('2026', ARABIC_INDIC) + '@example.nl'}]] even.",
    # phone numbers
    f"Bel me op [[PHONE|{in_digits(MOBILE, ARABIC_INDIC)}]].",
    f"Bel me op [[PHONE|{in_digits('+31 6 12345678', PERSIAN)}]].",
    f"Bel me op [[PHONE|{fullwidth('06-12345678')}]].",
    f"Bel me op [[PHONE|{per_digit(MOBILE, SUPERSCRIPT)}]].",
    f"Bel me op [[PHONE|{per_digit(MOBILE, SUBSCRIPT)}]].",
    f"Bel me op [[PHONE|{per_digit(MOBILE, CIRCLED)}]].",
    f"Bel me op [[PHONE|{after_each_digit(MOBILE, FE0F)}]].",
    f"Bel me op [[PHONE|{after_each_digit(MOBILE, FE0E)}]].",
    f"Bel me op [[PHONE|{marked(MOBILE, KEYCAP)}]].",
    f"Bel me op [[PHONE|06{FILLER}12345678]].",
    f"Bel me op [[PHONE|06{BRAILLE_BLANK}12{BRAILLE_BLANK}34{BRAILLE_BLANK}56{BRAILLE_BLANK}78]].",
    f"Bel me op [[PHONE|06{MAQAF}12345678]].",
    f"Bel me op [[PHONE|{marked(MOBILE, STROKE)}]].",
    "Bel me op [[PHONE|06–12345678]].",
    "Bel me op [[PHONE|06−12345678]].",
    f"Bel me op [[PHONE|{in_digits(MOBILE, BOLD)}]].",
    f"Bel me op [[PHONE|{in_digits(MOBILE, DEVANAGARI)}]].",
    # credit cards
    f"Kaart [[CREDIT_CARD|{in_digits(CARD, ARABIC_INDIC)}]] graag blokkeren.",
    f"Kaart [[CREDIT_CARD|{fullwidth(CARD)}]] graag blokkeren.",
    f"Kaart [[CREDIT_CARD|{after_each_digit(CARD.replace(' ', ''), FE0F)}]] graag blokkeren.",
    f"Kaart [[CREDIT_CARD|{CARD.replace(' ', BRAILLE_BLANK)}]] graag blokkeren.",
    f"Kaart [[CREDIT_CARD|{CARD.replace(' ', FILLER)}]] graag blokkeren.",
    f"Kaart [[CREDIT_CARD|{marked(CARD, LOW_LINE)}]] graag blokkeren.",
    f"Kaart [[CREDIT_CARD|{per_digit(CARD, CIRCLED)}]] graag blokkeren.",
    f"Kaart [[CREDIT_CARD|{CARD.replace(' ', MAQAF)}]] graag blokkeren.",
    # BSNs, with their word
    f"Mijn BSN is [[BSN|{in_digits(BSN_NUMBER, ARABIC_INDIC)}]].",
    f"Mijn BSN is [[BSN|{fullwidth(BSN_NUMBER)}]].",
    f"Mijn BSN is [[BSN|{per_digit(BSN_NUMBER, SUPERSCRIPT)}]].",
    f"Mijn BSN is [[BSN|{after_each_digit(BSN_NUMBER, FE0F)}]].",
    f"Mijn BSN is [[BSN|{marked(BSN_NUMBER, STROKE)}]].",
    f"Mijn burgerservicenummer is [[BSN|123{FILLER}456{FILLER}782]].",
    # IP addresses and URLs
    f"De server is [[IP_ADDRESS|{in_digits('192.168.1.10', ARABIC_INDIC)}]].",
    f"De server is [[IP_ADDRESS|{fullwidth('192.168.1.10')}]].",
    f"De server is [[IP_ADDRESS|{after_each_digit('192.168.1.10', FE0F)}]].",
    f"Zie [[URL|{fullwidth('www.example.nl')}]] voor meer.",
    "Zie [[URL|https://example。nl/contact]] voor meer.",
]

# Messages in the same characters without personal data, which must stay as they are.
COMPATIBILITY_CLEAN = [
    "Ik geef het een ⑧ van de ⑩.",
    "Top 👍️ dank je wel!",
    f"Kamer {in_digits('12', ARABIC_INDIC)} op de {in_digits('3', ARABIC_INDIC)}e verdieping.",
    f"Ordernummer {in_digits('123456789', ARABIC_INDIC)} is verzonden.",
    f"Het kost €{fullwidth('12,50')} per maand.",
    "Oppervlakte 25 m² en 3 kamers.",
    f"Hoofdstuk {in_digits('4.2.1', ARABIC_INDIC)} en tabel {in_digits('3.1', ARABIC_INDIC)}.",
    f"Zie bijlage ①{FILLER}en ②.",
    f"Afspraak op {in_digits('30-11-2026', ARABIC_INDIC)} om {in_digits('14:30', ARABIC_INDIC)}.",
    f"We draaien firmware versie {fullwidth('1.2.3.4')}.",
    f"Score: 3{MAQAF}1 na rust.",
]


# DOTALL: a label may hold a line break (an IBAN split over two lines).
_MARK = re.compile(r"\[\[([A-Z_]+)\|(.+?)\]\]", re.DOTALL)


def parsed(raw: str) -> tuple[str, list[tuple[str, str]]]:
    """The plain text of a labelled message and its personal data as (kind, value), in order."""
    return _MARK.sub(lambda match: match.group(2), raw), [(match.group(1), match.group(2)) for match in _MARK.finditer(raw)]


def bare(text: str) -> str:
    """Letters and digits only, in lower case: a value is still in a text when its bare form is
    in the text's, whatever spaces or invisible characters were put in or taken out."""
    return re.sub(r"[\W_]", "", text).lower()


def writings_with_personal_data() -> tuple[str, list[str]]:
    """The WRITINGS and COMPATIBILITY messages that hold personal data as one text (a blank line
    between them, so no value runs into the next message's), and their values."""
    messages = [parsed(raw) for raw in WRITINGS + COMPATIBILITY]
    messages = [(text, labels) for text, labels in messages if labels]
    return "\n\n".join(text for text, _ in messages), [value for _, labels in messages for _, value in labels]
