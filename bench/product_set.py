"""A product-shaped relevance set: what an assistant remembers about the people its users deal with.

    .venv/bin/python bench/product_set.py          # prints its size and a few samples

Generated offline and deterministically (a fixed seed, no model, no download): six users
(the persons Core searches for), each keeping records about ten contacts of hers — 60 people
with Dutch or English names — and the organisation's shared rules. Records are facts,
preferences, commitments and rules (`behaviour`), written in the contact's language (Dutch or
English) at dates spread over 2026; questions ask for one record each, in other words than the
record's, a quarter in the other language, some naming the time the record was written
("what did I agree with Sanne in March?", whose answer is one of her two commitments).

Users 1, 3 and 5 are the training half (the learned fusion is fitted on them, bench/fusion.py);
users 2, 4 and 6 are held out.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

SEED = 20261201
USERS = [f"user-{number}" for number in range(1, 7)]
TRAINING_USERS = frozenset({"user-1", "user-3", "user-5"})
ASKED_AT = datetime(2026, 11, 2, 10, tzinfo=timezone.utc)

FIRST_NL = ["Sanne", "Joris", "Femke", "Bram", "Lotte", "Daan", "Ilse", "Wouter", "Marloes", "Pieter",
            "Anouk", "Gijs", "Eline", "Maarten", "Noor", "Thijs", "Roos", "Koen", "Fleur", "Sjoerd",
            "Merel", "Jeroen", "Lieke", "Ruben", "Esther", "Hidde", "Floor", "Stijn", "Annemiek", "Wessel"]
LAST_NL = ["de Vries", "Jansen", "Bakker", "Visser", "Smit", "Meijer", "de Boer", "Mulder", "de Groot", "Bos",
           "Vos", "Peters", "Hendriks", "van Leeuwen", "Dekker", "Brouwer", "de Wit", "Dijkstra", "Smits", "van Dijk"]
FIRST_EN = ["Emma", "Oliver", "Grace", "Harry", "Chloe", "Jack", "Sophie", "George", "Lucy", "Thomas",
            "Amelia", "William", "Hannah", "James", "Olivia", "Henry", "Isla", "Samuel", "Ruby", "Daniel",
            "Alice", "Matthew", "Ella", "Joseph", "Poppy", "Edward", "Freya", "Charlie", "Megan", "Arthur"]
LAST_EN = ["Smith", "Taylor", "Brown", "Wilson", "Evans", "Walker", "Wright", "Robinson", "Thompson", "Hughes",
           "Edwards", "Green", "Hall", "Wood", "Harris", "Clarke", "Lewis", "Baker", "Turner", "Parker"]
ORGS = ["Acme", "Veldhuis Logistiek", "Northwind", "Bouwbedrijf Kramer", "Bluefin Analytics", "Zorggroep Oost",
        "Harbour Foods", "Tulp Energie", "Kestrel Software", "Gemeente Zwolle", "Oakridge Partners", "De Molen Bakkerij"]
CITIES = ["Utrecht", "Zwolle", "Leeds", "Groningen", "Bristol", "Eindhoven", "Manchester", "Haarlem", "Leiden",
          "Cambridge", "Arnhem", "Glasgow", "Breda", "Nijmegen", "Oxford", "Delft"]
MONTHS_EN = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October"]
MONTHS_NL = ["januari", "februari", "maart", "april", "mei", "juni", "juli", "augustus", "september", "oktober"]

# Values with their English and Dutch words.
ROLES = [("controller", "controller"), ("head of purchasing", "hoofd inkoop"), ("project manager", "projectleider"),
         ("IT director", "IT-directeur"), ("office manager", "officemanager"), ("lawyer", "jurist"),
         ("sales director", "salesdirecteur"), ("HR adviser", "HR-adviseur")]
CHANNELS = [("email", "e-mail"), ("WhatsApp", "WhatsApp"), ("phone", "telefoon"), ("Teams", "Teams"), ("letter", "brief")]
DAYPARTS = [("morning", "ochtend"), ("afternoon", "middag")]
WEEKDAYS = [("Monday", "maandag"), ("Tuesday", "dinsdag"), ("Wednesday", "woensdag"), ("Thursday", "donderdag"), ("Friday", "vrijdag")]
DRINKS = [("black coffee", "zwarte koffie"), ("green tea", "groene thee"), ("sparkling water", "bruisend water"),
          ("cappuccino with oat milk", "cappuccino met havermelk"), ("fresh mint tea", "verse muntthee")]
LANGUAGES = [("Dutch", "Nederlands"), ("English", "Engels"), ("German", "Duits")]
INVOICES = [("by post, on paper", "per post, op papier"), ("as a PDF to the finance mailbox", "als pdf naar de financiële mailbox"),
            ("through the supplier portal", "via het leveranciersportaal"), ("once a quarter, bundled", "eens per kwartaal, gebundeld")]
DIETS = [("vegetarian", "vegetarisch", "Italian", "Italiaanse"), ("vegan", "veganistisch", "Indian", "Indiase"),
         ("gluten-free", "glutenvrij", "Japanese", "Japanse"), ("pescatarian", "pescotariër", "Greek", "Griekse")]
FORMATS = [("a one-page summary", "een samenvatting van één pagina"), ("slides", "dia's"), ("a spreadsheet", "een spreadsheet")]
SPORTS = [("hockey", "hockey"), ("tennis", "tennis"), ("football", "voetbal"), ("korfball", "korfbal"), ("golf", "golf")]
ALLERGENS = [("nuts", "noten"), ("shellfish", "schaaldieren"), ("lactose", "lactose"), ("eggs", "eieren")]
PETS = ["Bobby", "Max", "Luna", "Pip", "Guus", "Dexter", "Saar", "Milo"]
TOPICS = [("cloud migration", "cloudmigratie"), ("office cleaning", "schoonmaak"), ("solar panels", "zonnepanelen"),
          ("payroll", "salarisadministratie"), ("fleet lease", "leaseauto's"), ("training", "opleidingen")]
KIDS = [("two", "twee"), ("three", "drie"), ("no", "geen"), ("four", "vier"), ("one", "één")]


@dataclass
class Record:
    key: str
    user: str | None  # None: a shared record of the organisation
    type: str
    text: str
    at: datetime
    language: str


@dataclass
class Question:
    user: str
    text: str
    answer: str  # the key of the one record that answers it
    language: str
    cross_language: bool
    names_time: bool
    kind: str  # the record's type
    training: bool = field(default=False)


def _templates(person: dict, rng: random.Random) -> list[tuple]:
    """(kind, type, English record, Dutch record, English question, Dutch question) about one person."""
    n, f, other = person["name"], person["first"], person["other"]
    role, channel, daypart, weekday = rng.choice(ROLES), rng.choice(CHANNELS), rng.choice(DAYPARTS), rng.choice(WEEKDAYS)
    drink, language, invoice, diet = rng.choice(DRINKS), rng.choice(LANGUAGES), rng.choice(INVOICES), rng.choice(DIETS)
    report, sport, allergen, topic = rng.choice(FORMATS), rng.choice(SPORTS), rng.choice(ALLERGENS), rng.choice(TOPICS)
    kids, pet, city, hour = rng.choice(KIDS), rng.choice(PETS), rng.choice(CITIES), rng.choice([17, 18, 19, 20])
    day, month = rng.randint(1, 28), rng.randrange(12)
    months_en = MONTHS_EN + ["November", "December"]
    months_nl = MONTHS_NL + ["november", "december"]
    amount = f"{rng.randint(4, 60) * 500:,}".replace(",", ".")
    return [
        ("job", "fact", f"{n} works as {role[0]} at {person['org']}.", f"{n} werkt als {role[1]} bij {person['org']}.",
         f"What is {f}'s job?", f"Wat doet {f} voor werk?"),
        ("home", "fact", f"{n} lives in {city} with her family." if person["she"] else f"{n} lives in {city} with his family.",
         f"{n} woont met het gezin in {city}.", f"Where is {f} based?", f"Waar woont {f}?"),
        ("kids", "fact", f"{n} has {kids[0]} children.", f"{n} heeft {kids[1]} kinderen.",
         f"How many kids does {f} have?", f"Hoeveel kinderen heeft {f}?"),
        ("birthday", "fact", f"{n}'s birthday is on {day} {months_en[month]}.", f"{n} is jarig op {day} {months_nl[month]}.",
         f"When should I congratulate {f}?", f"Wanneer is {f} jarig?"),
        ("budget", "fact", f"{n} has a budget of €{amount} for the project this year.",
         f"{n} heeft dit jaar €{amount} budget voor het project.",
         f"How much money can {f} spend?", f"Hoeveel geld kan {f} uitgeven?"),
        ("pet", "fact", f"{n} has a dog called {pet}.", f"{n} heeft een hond die {pet} heet.",
         f"What's the name of {f}'s dog?", f"Hoe heet de hond van {f}?"),
        ("sport", "fact", f"{n} plays {sport[0]} on Saturdays.", f"{n} speelt op zaterdag {sport[1]}.",
         f"Which sport does {f} do at the weekend?", f"Welke sport beoefent {f} in het weekend?"),
        ("allergy", "fact", f"{n} is allergic to {allergen[0]}.", f"{n} is allergisch voor {allergen[1]}.",
         f"What can {f} not eat?", f"Wat mag {f} niet eten?"),
        ("manager", "fact", f"{n} reports to {other}.", f"{n} valt onder {other}.",
         f"Who is {f}'s boss?", f"Wie is de leidinggevende van {f}?"),
        ("channel", "preference", f"{n} prefers to be contacted by {channel[0]}.", f"{n} wordt het liefst benaderd via {channel[1]}.",
         f"How does {f} like to be reached?", f"Hoe wil {f} het liefst bereikt worden?"),
        ("meetings", "preference", f"{n} likes meetings in the {daypart[0]}, never on {weekday[0]}.",
         f"{n} heeft het liefst afspraken in de {daypart[1]}, nooit op {weekday[1]}.",
         f"When is it best to schedule a meeting with {f}?", f"Wanneer kan ik het best een overleg met {f} inplannen?"),
        ("drink", "preference", f"{n} always drinks {drink[0]}.", f"{n} drinkt altijd {drink[1]}.",
         f"What should I offer {f} to drink?", f"Wat zet ik voor {f} klaar om te drinken?"),
        ("language", "preference", f"{n} prefers to speak {language[0]} in meetings.", f"{n} spreekt in vergaderingen liefst {language[1]}.",
         f"Which language does {f} want to use in meetings?", f"In welke taal wil {f} overleggen?"),
        ("invoice", "preference", f"{n} wants invoices {invoice[0]}.", f"{n} wil facturen {invoice[1]}.",
         f"How should we send {f} the bill?", f"Hoe moeten we {f} de rekening sturen?"),
        ("lunch", "preference", f"{n} is {diet[0]} and loves {diet[2]} food.", f"{n} is {diet[1]} en houdt van de {diet[3]} keuken.",
         f"Where should I take {f} for lunch?", f"Waar kan ik met {f} gaan lunchen?"),
        ("report", "preference", f"{n} likes reports short, as {report[0]}.", f"{n} wil rapportages kort, als {report[1]}.",
         f"In what form does {f} want the report?", f"In welke vorm wil {f} de rapportage?"),
        ("late", "behaviour", f"Never call {n} after {hour}:00.", f"Bel {n} nooit na {hour}:00 uur.",
         f"Until what time may I phone {f}?", f"Tot hoe laat mag ik {f} bellen?"),
        ("cc", "behaviour", f"Always copy {other} when emailing {n}.", f"Zet {other} altijd in de cc als je {n} mailt.",
         f"Who must be in cc on mails to {f}?", f"Wie moet er in de cc bij mails aan {f}?"),
        ("avoid", "behaviour", f"Do not discuss {topic[0]} with {n}; that goes through legal.",
         f"Bespreek {topic[1]} niet met {n}; dat loopt via juridische zaken.",
         f"Which subject should I avoid with {f}?", f"Welk onderwerp moet ik bij {f} vermijden?"),
        ("address", "behaviour", f"Address {n} formally, by surname.", f"Spreek {n} formeel aan, met u en de achternaam.",
         f"How do I greet {f} in a letter?", f"Hoe spreek ik {f} aan in een brief?"),
    ]


def _commitments(person: dict, rng: random.Random) -> list[tuple]:
    """Two or three commitments (kind, English, Dutch, English question, Dutch question) at different months."""
    n, f = person["name"], person["first"]
    topic, visit_city = rng.choice(TOPICS), rng.choice(CITIES)
    due_day = rng.randint(2, 27)
    return [
        ("contract", f"{n} promised to send the signed contract by the {due_day}th.",
         f"{n} heeft beloofd het getekende contract vóór de {due_day}e te sturen.",
         f"When will {f} return the signed agreement?", f"Wanneer stuurt {f} de getekende overeenkomst terug?"),
        ("callback", f"I will call {n} back about the quote for {topic[0]}.", f"Ik bel {n} terug over de offerte voor {topic[1]}.",
         f"What did I promise to ring {f} about?", f"Waarover moet ik {f} nog terugbellen?"),
        ("visit", f"{n} agreed to visit our office in {visit_city}.", f"{n} komt langs op ons kantoor in {visit_city}.",
         f"Is {f} coming to see us somewhere?", f"Komt {f} nog bij ons op bezoek?"),
        ("proposal", f"We owe {n} an answer on the {topic[0]} proposal.", f"We moeten {n} nog antwoorden over het voorstel voor {topic[1]}.",
         f"Which proposal is {f} still waiting on?", f"Op welk voorstel wacht {f} nog?"),
    ]


def _people(rng: random.Random) -> list[dict]:
    firsts = [(name, "nl") for name in FIRST_NL] + [(name, "en") for name in FIRST_EN]
    rng.shuffle(firsts)
    people = []
    for number, (first, language) in enumerate(firsts):
        last = rng.choice(LAST_NL if language == "nl" else LAST_EN)
        people.append({
            "first": first, "name": f"{first} {last}", "language": language, "user": USERS[number % len(USERS)],
            "org": rng.choice(ORGS), "she": first in ("Sanne", "Femke", "Lotte", "Ilse", "Marloes", "Anouk", "Eline", "Noor",
                                                        "Roos", "Fleur", "Merel", "Lieke", "Esther", "Floor", "Annemiek",
                                                        "Emma", "Grace", "Chloe", "Sophie", "Lucy", "Amelia", "Hannah",
                                                        "Olivia", "Isla", "Ruby", "Alice", "Ella", "Poppy", "Freya", "Megan"),
        })
    for person in people:
        colleagues = [each for each in people if each["user"] == person["user"] and each is not person]
        person["other"] = rng.choice(colleagues)["name"]
    return people


SHARED = [  # the organisation's own rules, visible to every user (English, Dutch, question, its language)
    ("Quotes above €25.000 need the approval of the finance director.", "en", "Wie moet een grote offerte goedkeuren?", "nl"),
    ("Declaraties moeten binnen dertig dagen worden ingediend.", "nl", "How long do I have to submit an expense claim?", "en"),
    ("Customer data never leaves the EU; use only the Amsterdam region.", "en", "Where may we store client data?", "en"),
    ("Klanten krijgen binnen twee werkdagen een reactie op hun klacht.", "nl", "Hoe snel moet een klacht beantwoord zijn?", "nl"),
    ("New suppliers are screened by the compliance team first.", "en", "Wie controleert een nieuwe leverancier?", "nl"),
    ("Thuiswerken mag op maandag en vrijdag.", "nl", "Which days can I work from home?", "en"),
    ("The office in Utrecht closes at 19:00 on weekdays.", "en", "Until when is the Utrecht office open?", "en"),
    ("Cadeaus van klanten boven de 50 euro worden gemeld bij de manager.", "nl", "Wat doe ik met een duur geschenk van een klant?", "nl"),
    ("Every contract is stored in the document system within a week.", "en", "Waar bewaren we getekende contracten?", "nl"),
    ("Vergaderzalen reserveer je via het intranet.", "nl", "How do I book a meeting room?", "en"),
    ("Travel by train is preferred over flying for trips under 700 km.", "en", "Should I fly or take the train to Paris?", "en"),
    ("Facturen worden betaald binnen veertig dagen na ontvangst.", "nl", "Wat is onze betaaltermijn voor facturen?", "nl"),
    ("Passwords are changed every six months and never shared by email.", "en", "Mag ik een wachtwoord mailen?", "nl"),
    ("De kerstborrel is elk jaar op de tweede vrijdag van december.", "nl", "When is the Christmas drinks party?", "en"),
    ("Press questions go to the communications department only.", "en", "A journalist called me; who answers?", "en"),
    ("Leaseauto's worden elke vier jaar vervangen.", "nl", "Hoe vaak krijg ik een nieuwe auto van de zaak?", "nl"),
    ("Sales targets are reviewed every quarter with the regional lead.", "en", "Hoe vaak bespreken we de verkoopdoelen?", "nl"),
    ("Bezoekers melden zich bij de receptie op de begane grond.", "nl", "Where do visitors check in?", "en"),
    ("Discounts above 15 percent require a second signature.", "en", "Can I give a client twenty percent off on my own?", "en"),
    ("Ziekmelden gaat vóór negen uur 's ochtends bij de teamleider.", "nl", "Hoe meld ik me ziek?", "nl"),
    ("Marketing e-mails are sent only to clients who opted in.", "en", "Mogen we alle klanten een nieuwsbrief sturen?", "nl"),
    ("Overuren worden per maand uitbetaald of als vrije tijd opgenomen.", "nl", "What happens with overtime hours?", "en"),
    ("All laptops are encrypted before they are handed out.", "en", "Are company laptops encrypted?", "en"),
    ("Parkeren bij het kantoor in Zwolle is gratis voor medewerkers.", "nl", "Kost parkeren in Zwolle geld?", "nl"),
]


def product_set() -> tuple[list[Record], list[Question]]:
    """Every record and question of the set, the same on every call."""
    rng = random.Random(SEED)
    people = _people(rng)
    records: list[Record] = []
    questions: list[Question] = []
    for number, (text, language, question, asked_in) in enumerate(SHARED):
        key = f"shared-{number}"
        records.append(Record(key, None, "behaviour", text, datetime(2026, 1, 5, 9, tzinfo=timezone.utc) + timedelta(days=7 * number), language))
        user = USERS[number % len(USERS)]
        questions.append(Question(user, question, key, asked_in, asked_in != language, False, "shared rule", user in TRAINING_USERS))
    for person_number, person in enumerate(people):
        language = person["language"]
        chosen = rng.sample(_templates(person, rng), 7)
        commitments = rng.sample(_commitments(person, rng), 3)
        months = sorted(rng.sample(range(10), len(chosen) + len(commitments)))
        rng.shuffle(months)
        items = [(kind, kind_type, en, nl, q_en, q_nl) for kind, kind_type, en, nl, q_en, q_nl in chosen]
        items += [(kind, "commitment", en, nl, q_en, q_nl) for kind, en, nl, q_en, q_nl in commitments]
        asked = set(rng.sample(range(len(items)), 4))
        for position, (kind, kind_type, en, nl, q_en, q_nl) in enumerate(items):
            key = f"p{person_number}-{kind}"
            month = months[position]
            at = datetime(2026, month + 1, rng.randint(1, 27), rng.randint(8, 17), rng.randint(0, 59), tzinfo=timezone.utc)
            records.append(Record(key, person["user"], kind_type, en if language == "en" else nl, at, language))
            if kind_type == "commitment" and position == len(items) - 3:
                # Asked by the time it was agreed: one of her three commitments is meant.
                asked_in = language if rng.random() < 0.75 else ("nl" if language == "en" else "en")
                month_name = (MONTHS_EN if asked_in == "en" else MONTHS_NL)[month]
                text = (f"What did I agree with {person['first']} in {month_name}?" if asked_in == "en"
                        else f"Wat heb ik in {month_name} met {person['first']} afgesproken?")
                questions.append(Question(person["user"], text, key, asked_in, asked_in != language, True, kind_type,
                                          person["user"] in TRAINING_USERS))
            if position in asked:
                asked_in = language if rng.random() < 0.75 else ("nl" if language == "en" else "en")
                questions.append(Question(person["user"], q_en if asked_in == "en" else q_nl, key, asked_in, asked_in != language,
                                          False, kind_type, person["user"] in TRAINING_USERS))
    return records, questions


if __name__ == "__main__":
    records, questions = product_set()
    print(f"{len(records)} records about {len({record.key.split('-')[0] for record in records if record.user})} people, "
          f"{len(questions)} questions ({sum(q.cross_language for q in questions)} across languages, "
          f"{sum(q.names_time for q in questions)} naming a time, {sum(q.training for q in questions)} for training)")
    by_key = {record.key: record for record in records}
    for question in random.Random(1).sample(questions, 8):
        print(f"  {question.text!r} -> {by_key[question.answer].text!r}")
