"""Texts for the seeded stores and the queries the benches ask, in Dutch and English.

Records are made from templates filled from word lists, so that full-text search meets a
spread of word frequencies like a real store's: a few words ("factuur", "meeting") are in
many records, most are in few. Every record type has its own templates; half the records
are Dutch, half English. `query_text` asks the kind of question people and models ask
("how does Acme want its invoices"), from the same words, so searches find something.
"""
from __future__ import annotations

import random

FIRST_NAMES = (
    "Anna Bram Carla Daan Eva Femke Gijs Hanna Iris Jasper Kim Lotte Milan Noor Olaf Pim Quinten Roos Sanne Thijs "
    "Uma Vera Wouter Yara Zoë Sem Lieke Ruben Fleur Joris Maud Niels Esther Hugo Ilse Koen Lars Mirjam Otto Tess "
    "Alice Ben Chloe David Emma Frank Grace Henry Isla James Kate Liam Mia Noah Olivia Peter Rose Sam Tom Victoria "
    "William Zoe Oscar Lucy Jack Ella Harry Amelia George Sophie Charlie Ava Leo Freya Max Ruby Finn Holly Adam Erin"
).split()
COMPANIES = (
    "Acme Globex Initech Umbrella Hooli Vandelay Stark Wayne Tyrell Cyberdyne Soylent Wonka Gringotts Aperture "
    "Oceanic Massive Dunder Vehement Monarch Nakatomi Bakkerij-Jansen Fietsfabriek-Noord Koffiebranderij-De-Molen "
    "Drukkerij-Van-Dam Transport-Visser Bouwbedrijf-Smit Tuincentrum-Groen Advocaten-De-Wit Zorggroep-Oost "
    "Brouwerij-Het-Anker Northwind Contoso Fabrikam Litware Proseware Woodgrove Tailspin Adatum Wingtip Lucerne"
).split()
CITIES = (
    "Amsterdam Rotterdam Utrecht Eindhoven Groningen Tilburg Almere Breda Nijmegen Arnhem Haarlem Enschede Zwolle "
    "Leiden Maastricht Dordrecht Delft Alkmaar Deventer Leeuwarden London Manchester Dublin Antwerp Ghent Brussels "
    "Berlin Hamburg Cologne Paris Lyon Copenhagen Oslo Stockholm Lisbon Porto Madrid Barcelona Vienna Prague"
).split()
PROJECTS = (
    "Atlas Borealis Cirrus Delta Ember Falcon Granite Harbor Indigo Juniper Kestrel Lumen Meridian Nimbus Orion "
    "Pioneer Quasar Raven Sequoia Titan Umbra Vortex Willow Xenon Yonder Zephyr Aurora Beacon Cobalt Dune Echo "
    "Fjord Glacier Horizon Iris Jade Kepler Lotus Mosaic Nova Onyx Prism Quartz Ridge Summit Tundra Vista Zenith"
).split()
DOCUMENTS_EN = "invoice quote contract proposal report budget timeline roadmap manual agenda minutes offer statement receipt plan".split()
DOCUMENTS_NL = "factuur offerte contract voorstel rapport begroting planning handleiding agenda notulen aanbieding overzicht bon".split()
CHANNELS_EN = "e-mail phone post chat video-call text-message letter".split()
CHANNELS_NL = "e-mail telefoon post chat videogesprek sms brief".split()
TOPICS_EN = (
    "billing delivery onboarding security hiring travel expenses holidays training maintenance support pricing "
    "renewal migration backups licences payroll insurance parking catering recycling marketing accessibility"
).split()
TOPICS_NL = (
    "facturatie levering inwerken beveiliging werving reizen declaraties vakantie opleiding onderhoud ondersteuning "
    "prijzen verlenging migratie back-ups licenties salarissen verzekering parkeren catering recycling marketing"
).split()
FOODS_EN = "tea coffee sushi salad soup pasta sandwiches pizza curry noodles oatmeal fruit".split()
FOODS_NL = "thee koffie sushi salade soep pasta broodjes pizza curry noedels havermout fruit".split()
TIMES_EN = "morning afternoon evening weekend Monday Tuesday Wednesday Thursday Friday".split()
TIMES_NL = "ochtend middag avond weekend maandag dinsdag woensdag donderdag vrijdag".split()
ROLES_EN = "engineer manager designer accountant nurse teacher lawyer buyer planner analyst consultant driver".split()
ROLES_NL = "ingenieur manager ontwerper boekhouder verpleegkundige docent advocaat inkoper planner analist adviseur chauffeur".split()
TOOLS = "Excel Jira Slack Teams Outlook SAP Exact Moneybird Notion Trello GitHub Figma Salesforce HubSpot Zendesk AFAS".split()
VEHICLES_EN = "bike train car bus tram scooter".split()
VEHICLES_NL = "fiets trein auto bus tram scooter".split()
LANGUAGES_EN = "Dutch English German French".split()
LANGUAGES_NL = "Nederlands Engels Duits Frans".split()
OUTCOMES_EN = ("it worked", "it failed", "she was happy with it", "it needed a second try", "it was left for later")
OUTCOMES_NL = ("het lukte", "het mislukte", "ze was er tevreden over", "het lukte pas de tweede keer", "het bleef liggen")


def _pick(generator: random.Random, words) -> str:
    """Half the time Zipf's law over the list (the first word twice as likely as the second, …),
    half the time any word: a few words are common (the first company is in about 6% of the
    records), most are rare."""
    if generator.random() < 0.5:
        return generator.choice(words)
    return generator.choices(words, weights=_zipf_weights(len(words)))[0]


def _zipf_weights(count: int, cache: dict[int, list[float]] = {}) -> list[float]:  # noqa: B006 — a memo
    if count not in cache:
        cache[count] = [1 / rank for rank in range(1, count + 1)]
    return cache[count]


def _fill_en(generator: random.Random, kind: str) -> str:
    name, company, city = _pick(generator, FIRST_NAMES), _pick(generator, COMPANIES), _pick(generator, CITIES)
    document, topic, project = _pick(generator, DOCUMENTS_EN), _pick(generator, TOPICS_EN), _pick(generator, PROJECTS)
    channel, other_channel = generator.sample(CHANNELS_EN, 2)
    day, hour = generator.randint(1, 28), generator.randint(8, 18)
    choices = {
        "fact": (
            f"{name} works at {company} in {city} as {generator.choice(ROLES_EN)}.",
            f"{name} lives in {city} and goes to work by {generator.choice(VEHICLES_EN)}.",
            f"The {project} project for {company} uses {generator.choice(TOOLS)} for {topic}.",
            f"{company} pays every {document} within {generator.randint(7, 60)} days.",
            f"{name}'s team at {company} handles {topic} for the {project} account.",
            f"{name} has {generator.randint(1, 4)} children and a dog called {_pick(generator, FIRST_NAMES)}.",
            f"The {topic} budget of {company} for {project} is {generator.randint(2, 900)} thousand euros.",
            f"{company} moved its {topic} office to {city} in {generator.randint(2005, 2026)}.",
        ),
        "preference": (
            f"Prefers {channel} over {other_channel} for anything about {topic}.",
            f"Wants the {document} for {company} by {channel}, at the end of the month.",
            f"Likes {generator.choice(FOODS_EN)} for lunch and meetings in the {generator.choice(TIMES_EN)}.",
            f"{name} prefers short answers with the {document} attached.",
            f"Prefers to discuss {topic} on {generator.choice(TIMES_EN)} {generator.choice(TIMES_EN[:3])}s after {hour}:00.",
        ),
        "commitment": (
            f"Send {name} the {document} for {project} before day {day}.",
            f"Call {company} about the {topic} {document} next {generator.choice(TIMES_EN[4:])}.",
            f"Book the {city} trip for the {project} kick-off with {name}.",
            f"Check the {topic} figures of {company} before the {generator.choice(TIMES_EN[4:])} meeting at {hour}:00.",
        ),
        "behaviour": (
            f"Always answer in {generator.choice(LANGUAGES_EN)} and keep it under {generator.randint(3, 12)} sentences.",
            f"Use bullet points when explaining {topic}; no jargon about {project}.",
            f"Never send the {document} without asking {name} first.",
            f"Mention the {project} deadline whenever {topic} comes up.",
        ),
        "episode": (
            f"{name} wanted the {document} for {company} about {topic}; the assistant drafted it and {generator.choice(OUTCOMES_EN)}. "
            f"Still open: the {project} {document}.",
            f"{name} asked how {company} handles {topic}; the assistant searched memory and explained it, and {generator.choice(OUTCOMES_EN)}.",
        ),
        "lesson": (
            f"When {name} asks about {topic}, check the {project} {document} first.",
            f"Pitfall: the {company} {document} needs the {topic} figures before it is sent.",
        ),
    }[kind]
    return generator.choice(choices)


def _fill_nl(generator: random.Random, kind: str) -> str:
    name, company, city = _pick(generator, FIRST_NAMES), _pick(generator, COMPANIES), _pick(generator, CITIES)
    document, topic, project = _pick(generator, DOCUMENTS_NL), _pick(generator, TOPICS_NL), _pick(generator, PROJECTS)
    channel, other_channel = generator.sample(CHANNELS_NL, 2)
    day, hour = generator.randint(1, 28), generator.randint(8, 18)
    choices = {
        "fact": (
            f"{name} werkt bij {company} in {city} als {generator.choice(ROLES_NL)}.",
            f"{name} woont in {city} en gaat met de {generator.choice(VEHICLES_NL)} naar het werk.",
            f"Het project {project} voor {company} gebruikt {generator.choice(TOOLS)} voor {topic}.",
            f"{company} betaalt elke {document} binnen {generator.randint(7, 60)} dagen.",
            f"Het team van {name} bij {company} doet de {topic} voor klant {project}.",
            f"{name} heeft {generator.randint(1, 4)} kinderen en een hond die {_pick(generator, FIRST_NAMES)} heet.",
            f"Het budget voor {topic} van {company} voor {project} is {generator.randint(2, 900)} duizend euro.",
            f"{company} verhuisde het kantoor voor {topic} in {generator.randint(2005, 2026)} naar {city}.",
        ),
        "preference": (
            f"Heeft liever {channel} dan {other_channel} voor alles over {topic}.",
            f"Wil de {document} van {company} per {channel} ontvangen, aan het eind van de maand.",
            f"Eet graag {generator.choice(FOODS_NL)} als lunch en vergadert het liefst in de {generator.choice(TIMES_NL)}.",
            f"{name} wil korte antwoorden met de {document} als bijlage.",
            f"Bespreekt {topic} het liefst op {generator.choice(TIMES_NL[4:])} na {hour}:00 uur.",
        ),
        "commitment": (
            f"{name} de {document} voor {project} sturen voor dag {day}.",
            f"{company} bellen over de {document} voor {topic}, volgende {generator.choice(TIMES_NL[4:])}.",
            f"De reis naar {city} boeken voor de start van {project} met {name}.",
            f"De cijfers over {topic} van {company} nakijken voor het overleg van {hour}:00 uur.",
        ),
        "behaviour": (
            f"Antwoord altijd in het {generator.choice(LANGUAGES_NL)} en in hoogstens {generator.randint(3, 12)} zinnen.",
            f"Gebruik opsommingstekens bij uitleg over {topic}; geen jargon over {project}.",
            f"Stuur de {document} nooit zonder eerst {name} te vragen.",
            f"Noem de deadline van {project} zodra het over {topic} gaat.",
        ),
        "episode": (
            f"{name} wilde de {document} voor {company} over {topic}; de assistent maakte een opzet en {generator.choice(OUTCOMES_NL)}. "
            f"Nog open: de {document} voor {project}.",
            f"{name} vroeg hoe {company} met {topic} omgaat; de assistent zocht in het geheugen en legde het uit, en {generator.choice(OUTCOMES_NL)}.",
        ),
        "lesson": (
            f"Als {name} vraagt naar {topic}, eerst de {document} van {project} nakijken.",
            f"Valkuil: de {document} voor {company} heeft de cijfers over {topic} nodig voordat hij weggaat.",
        ),
    }[kind]
    return generator.choice(choices)


def record_text(generator: random.Random, kind: str) -> str:
    """A record text of this type, Dutch or English (half each)."""
    return (_fill_nl if generator.random() < 0.5 else _fill_en)(generator, kind)


def query_text(generator: random.Random) -> str:
    """A natural-language question of the kind a person or a model asks the search."""
    if generator.random() < 0.5:
        document, topic, company = _pick(generator, DOCUMENTS_NL), _pick(generator, TOPICS_NL), _pick(generator, COMPANIES)
        return generator.choice(
            (
                f"hoe wil {company} de {document} ontvangen",
                f"wat weten we over {topic} bij {company}",
                f"wanneer moet de {document} over {topic} klaar zijn",
                f"wie van {company} doet de {topic}",
                f"waar woont {_pick(generator, FIRST_NAMES)}",
            )
        )
    document, topic, company = _pick(generator, DOCUMENTS_EN), _pick(generator, TOPICS_EN), _pick(generator, COMPANIES)
    return generator.choice(
        (
            f"how does {company} want its {document}",
            f"what do we know about {topic} at {company}",
            f"when is the {topic} {document} due",
            f"who at {company} handles {topic}",
            f"where does {_pick(generator, FIRST_NAMES)} live",
        )
    )


def turn_input(generator: random.Random) -> str:
    """A person's message that opens a turn (the block's topic)."""
    return generator.choice(
        (
            f"Kun je de {_pick(generator, DOCUMENTS_NL)} voor {_pick(generator, COMPANIES)} klaarzetten?",
            f"Wat staat er nog open over {_pick(generator, TOPICS_NL)}?",
            f"Can you draft the {_pick(generator, DOCUMENTS_EN)} for {_pick(generator, PROJECTS)}?",
            f"Remind me what we agreed on {_pick(generator, TOPICS_EN)} with {_pick(generator, COMPANIES)}.",
        )
    )
