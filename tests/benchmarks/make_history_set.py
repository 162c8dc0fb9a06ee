"""Dev-only, outside the wheel: writes the long-history set (data/history.jsonl): `python tests/benchmarks/make_history_set.py`.

Six simulated users chat with an assistant over fourteen sessions each (about 400 turns per
user). Facts about each user come up in one session and are picked up again in later ones,
some of them changing (a new job, a move, a new car: knowledge updates); the rest of each
session is everyday talk drawn from a large pool, with other people's pets, jobs and towns
in it as near misses. Every question lists the turns that hold its evidence, and comes in
two wordings: one that repeats the words of the evidence and one that does not.

Users 1-3 are the dev part and users 4-6 the holdout part; that was fixed when the set was
written, before any ranking was measured on it. The generator is seeded: the file it writes
is the one committed.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SESSIONS = 14
TURNS_PER_SESSION = 28  # user and assistant turns together, before the fact turns
START = 1_672_531_200  # 2023-01-01 UTC
DAY = 86_400

NAMES = ["Nadia", "Tomasz", "Keiko", "Rafael", "Ingrid", "Dev"]
PETS = [("beagle", "dog", "Biscuit"), ("tabby", "cat", "Pickle"), ("greyhound", "dog", "Comet"),
        ("Maine Coon", "cat", "Juniper"), ("corgi", "dog", "Waffles"), ("parrot", "bird", "Mango")]
JOBS = [("data analyst", "Brightwell Insurance"), ("high school chemistry teacher", "Westbrook Academy"),
        ("nurse", "Riverside Hospital"), ("backend developer", "Corvid Labs"), ("architect", "Stone & Finch"),
        ("accountant", "Meyer Partners"), ("product designer", "Lumen Apps"), ("pharmacist", "CityCare Pharmacy"),
        ("civil engineer", "Harbor Works"), ("journalist", "the Evening Ledger"), ("chef", "Olive Tree Bistro"),
        ("physiotherapist", "MoveWell Clinic")]
CITIES = ["Leeds", "Porto", "Denver", "Utrecht", "Adelaide", "Halifax", "Graz", "Nantes", "Tucson", "Bergen",
          "Cork", "Kraków"]
CARS = ["Honda Civic", "Volkswagen Golf", "Subaru Outback", "Ford Fiesta", "Kia Niro", "Toyota Corolla",
        "Mazda 3", "Skoda Octavia", "Tesla Model 3", "Volvo V60", "Nissan Leaf", "Peugeot 208"]
HOBBIES = [("the cello", "cello"), ("pottery", "pottery"), ("salsa dancing", "salsa"), ("rock climbing", "climbing"),
           ("oil painting", "painting"), ("Japanese", "Japanese")]
HOBBY_PROGRESS = {
    "cello": ("I started cello lessons on Thursday evenings.", "My cello teacher says my bowing is finally steady.",
              "I played a short Bach piece at the student recital and only slipped once."),
    "pottery": ("I signed up for a pottery course at the community studio.", "I managed to centre the clay on the wheel without it wobbling.",
                "My first glazed bowl came out of the kiln and it's actually usable."),
    "salsa": ("My partner and I joined a beginners' salsa class.", "We can do the cross-body lead now without stepping on toes.",
              "We danced salsa at my cousin's party and people clapped."),
    "climbing": ("I bought a bouldering pass at the climbing gym downtown.", "I sent my first V3 problem at the climbing gym.",
                 "We went climbing outdoors on real rock for the first time."),
    "painting": ("I've taken up oil painting on Sunday mornings.", "My oil painting of the harbour finally has the light right.",
                 "A local café agreed to hang three of my paintings."),
    "Japanese": ("I began studying Japanese with an app and a tutor.", "I can read hiragana and katakana now, kanji is next.",
                 "I passed the JLPT N5 practice test with a decent score."),
}
BOOKS = ["The Overstory", "Project Hail Mary", "Middlemarch", "Piranesi", "The Remains of the Day", "Circe",
         "Klara and the Sun", "Educated", "The Left Hand of Darkness", "Pachinko"]
TRIPS = [("Iceland", "the glacier hike"), ("Morocco", "the night in the desert camp"), ("Vietnam", "the boat trip in Ha Long Bay"),
         ("Scotland", "the ferry to Skye"), ("Peru", "the walk up to Machu Picchu"), ("Norway", "the fjord cruise"),
         ("Sicily", "the street food in Palermo"), ("Chile", "the stargazing in the Atacama")]
RACES = [("half marathon", "1:58"), ("10K", "52 minutes"), ("marathon", "4:21"), ("sprint triathlon", "1:31"),
         ("trail race", "2:40"), ("5K", "26 minutes")]
SIBLINGS = [("sister", "Lena"), ("brother", "Marco"), ("sister", "Aiko"), ("brother", "Jonas"), ("sister", "Priya"),
            ("brother", "Tobias")]
MONTHS = ["April", "May", "June", "July", "August", "September"]
CONDITIONS = [("my blood pressure is a bit high", "cut back on salt and walk more"),
              ("I'm low on vitamin D", "take a supplement through the winter"),
              ("my cholesterol has crept up", "eat more fibre and less red meat"),
              ("I have mild asthma", "keep an inhaler with me when I run"),
              ("I'm borderline anaemic", "eat more iron-rich food"),
              ("my thyroid is slightly underactive", "start a low dose of medication")]

# Everyday talk. {x} slots are filled from the lists below; people, pets and places here are
# not the user's own, so they are near misses for the questions.
OTHER_NAMES = ["Sofia", "Ben", "Hannah", "Omar", "Lucy", "Mateo", "Grace", "Felix", "Zara", "Ivan", "Chloe", "Yusuf"]
DISHES = ["a mushroom risotto", "lentil soup", "shakshuka", "a Thai green curry", "banana bread", "fish tacos",
          "a quiche", "ramen from scratch", "stuffed peppers", "a lemon tart"]
TOPICS = ["Python decorators", "how mortgages work", "the French Revolution", "compound interest", "black holes",
          "sourdough starters", "how vaccines work", "the rules of cricket", "SQL joins", "photosynthesis"]
FILLER_USER = [
    "Can you suggest a recipe for {dish} tonight?",
    "What's a good way to get my head around {topic}?",
    "My friend {other} just started working as {ojob} at {ocompany}.",
    "My neighbour's {obreed} barked all night again.",
    "{other} sent me photos from {ocity}, it looks lovely there.",
    "The weather has been grey and rainy all week.",
    "I watched a documentary about octopuses last night.",
    "Remind me how {topic} works, I keep forgetting.",
    "I'm thinking about repainting the hallway a pale green.",
    "Do you have tips for falling asleep faster?",
    "My colleague {other} drives a {ocar} and won't stop talking about it.",
    "I need a gift idea for {other}'s birthday.",
    "We had {dish} for dinner and it was better than expected.",
    "Traffic this morning was terrible, it took an hour to get in.",
    "Can you explain {topic} like I'm twelve?",
    "{other} is thinking of moving to {ocity} for work.",
    "I finally cleaned out the garage this weekend.",
    "What should I keep in mind when buying a new mattress?",
    "Our internet went down for half the day.",
    "{other} adopted {obreed_a} from the shelter.",
    "I've been drinking too much coffee lately.",
    "Any ideas for a rainy Sunday afternoon?",
    "My cousin {other} got a job at {ocompany}.",
    "I burned the toast again this morning.",
    "How long should I boil an egg for a runny yolk?",
    "I'm trying to drink more water during the day.",
    "{other} recommended a podcast about history, I might try it.",
    "Is it worth learning to touch type properly?",
    "The plants on my windowsill are looking sad.",
    "I spent the evening sorting old photos.",
]
FILLER_ASSISTANT = [
    "That sounds like a good plan. Want me to break it into steps?",
    "Here's a simple way to think about it, starting from the basics.",
    "Happy to help with that. A few options come to mind.",
    "That must have been frustrating. Is there anything I can do?",
    "Good question! The short answer is that it depends on a couple of things.",
    "I can put together a short list for you if you like.",
    "Sounds lovely. Let me know how it turns out.",
    "Here are three ideas you could try this week.",
    "That's a common experience, and there are a few easy fixes.",
    "Let's start with the most important part and go from there.",
    "I'd suggest keeping it simple at first.",
    "Noted! Anything else on your mind today?",
]


def _a(noun: str) -> str:
    return ("an " if noun[0].lower() in "aeiou" else "a ") + noun


def _fill(rng: random.Random, template: str) -> str:
    brd = rng.choice(PETS)
    job = rng.choice(JOBS)
    return template.format(dish=rng.choice(DISHES), topic=rng.choice(TOPICS), other=rng.choice(OTHER_NAMES),
                           ojob=_a(job[0]), ocompany=job[1], obreed=brd[0], obreed_a=_a(brd[0]), ocity=rng.choice(CITIES), ocar=rng.choice(CARS))


def _threads(rng: random.Random, u: int) -> list[dict]:
    """The facts of user ``u``: each a list of (session, user turn, assistant reply) mentions and its questions."""
    pet = PETS[u % len(PETS)]
    job1, job2 = JOBS[(2 * u) % len(JOBS)], JOBS[(2 * u + 5) % len(JOBS)]
    city1, city2 = CITIES[(2 * u) % len(CITIES)], CITIES[(2 * u + 7) % len(CITIES)]
    car1, car2 = CARS[(3 * u) % len(CARS)], CARS[(3 * u + 4) % len(CARS)]
    hobby, key = HOBBIES[u % len(HOBBIES)]
    steps = HOBBY_PROGRESS[key]
    book = BOOKS[u % len(BOOKS)]
    trip, highlight = TRIPS[u % len(TRIPS)]
    race, time_ = RACES[u % len(RACES)]
    sib, sname = SIBLINGS[u % len(SIBLINGS)]
    month = MONTHS[u % len(MONTHS)]
    cond, advice = CONDITIONS[u % len(CONDITIONS)]
    # Sessions 1-5 are early, 6-10 the middle and 11-14 late; each thread's order within them is drawn.
    early, mid, late = rng.sample(range(0, 5), 5), rng.sample(range(5, 10), 5), rng.sample(range(10, SESSIONS), 4)
    return [
        {"kind": "single", "mentions": [(early[0], f"We finally adopted {_a(pet[0])} and named it {pet[2]}.",
                                         f"Congratulations on {pet[2]}! {_a(pet[0]).capitalize()} is a wonderful companion.")],
         "questions": [f"What is the name of the user's {pet[1]}?", "What did they call the animal they brought home?"]},
        {"kind": "update", "mentions": [(early[1], f"I work as {_a(job1[0])} at {job1[1]}.", "That sounds like interesting work."),
                                        (late[0], f"Big news: I changed jobs, I'm now {_a(job2[0])} at {job2[1]}.",
                                         "Congratulations on the new role!")],
         "questions": ["Where does the user work now, and what is their job?", "How do they earn a living these days?"]},
        {"kind": "update", "mentions": [(early[2], f"I've lived in {city1} for about six years now.", f"{city1} seems like a nice place to live."),
                                        (mid[2], f"We moved to {city2} last weekend, there are boxes everywhere.",
                                         "Moving is exhausting; I hope you settle in quickly.")],
         "questions": ["Which city does the user live in at the moment?", "Where is home for them after relocating?"]},
        {"kind": "update", "mentions": [(early[3], f"My old {car1} broke down on the motorway again.", "That's no fun. Did you get it towed?"),
                                        (mid[3], f"I sold the {car1} and bought a {car2}.", "Enjoy the new ride!")],
         "questions": ["What car does the user drive now?", "Which vehicle replaced the one that kept failing?"]},
        {"kind": "multi", "mentions": [(early[4], steps[0], "What a fun thing to learn!"),
                                       (mid[0], steps[1], "That's real progress, well done."),
                                       (late[1], steps[2], "You must be proud of how far you've come.")],
         "questions": [f"How has the user's {hobby} been going over time?", "What progress have they made with their new pastime?"]},
        {"kind": "single", "mentions": [(mid[1], f"I'm halfway through {book} and can't put it down.",
                                         "That's a great pick; tell me what you think when you finish.")],
         "questions": [f"Which book was the user reading?", "What novel kept them up at night?"]},
        {"kind": "multi", "mentions": [(early[0], f"We're planning a trip to {trip} in {month}.", "How exciting! Do you need help with an itinerary?"),
                                       (late[2], f"Just got back from {trip}; {highlight} was the best part.", "Welcome back! That sounds unforgettable.")],
         "questions": [f"Where did the user travel and what did they enjoy most about {trip}?",
                       "Which holiday did they take this year and what stood out?"]},
        {"kind": "multi", "mentions": [(early[1], f"I signed up for {_a(race)} in the autumn, training starts now.", "Good luck with the training!"),
                                       (mid[4], f"Long run today, my legs are wrecked but the {race} feels doable.", "Rest up and stretch."),
                                       (late[3], f"I finished the {race} in {time_}!", "Amazing, congratulations on finishing!")],
         "questions": [f"How did the user's {race} go?", "How did their race preparation turn out in the end?"]},
        {"kind": "multi", "mentions": [(early[2], f"My {sib} {sname} is getting married in {month}.", "How lovely, congratulations to them!"),
                                       (mid[1], f"{sname}'s wedding was beautiful, I gave a speech and cried.", "That sounds like a wonderful day.")],
         "questions": [f"When did the user's {sib} get married, and how was the wedding?", "Tell me about the family celebration they spoke at."]},
        {"kind": "single", "mentions": [(mid[2], f"The doctor said {cond}, so I have to {advice}.", "It's good you caught it early.")],
         "questions": ["What did the doctor tell the user at the checkup?", "What health advice were they given recently?"]},
        {"kind": "update", "mentions": [(early[3], "I'm a big meat eater, steak is my favourite meal.", "A good steak is hard to beat."),
                                        (late[0], "I've gone fully vegetarian since last month.", "That's a big change, how is it going?")],
         "questions": ["Is the user vegetarian now?", "Do they still eat meat?"]},
    ]


def generate(seed: int = 14) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for u in range(6):
        user = f"u{u + 1}"
        part = "dev" if u < 3 else "holdout"
        threads = _threads(rng, u)
        placed: dict[int, list[tuple[int, int]]] = {}  # session -> [(thread, mention)]
        for t, th in enumerate(threads):
            for m, (sess, _, _) in enumerate(th["mentions"]):
                placed.setdefault(sess, []).append((t, m))
        turns = []
        where: dict[tuple[int, int], str] = {}
        for sess in range(SESSIONS):
            day = START + DAY * (sess * 9 + rng.randint(0, 4))
            pairs = [("u", _fill(rng, rng.choice(FILLER_USER)), rng.choice(FILLER_ASSISTANT))
                     for _ in range(TURNS_PER_SESSION // 2)]
            for t, m in placed.get(sess, []):
                pos = rng.randint(1, len(pairs))
                pairs.insert(pos, ((t, m), threads[t]["mentions"][m][1], threads[t]["mentions"][m][2]))
            for k, (tag, said, reply) in enumerate(pairs):
                tid = f"{user}:s{sess + 1}:t{2 * k + 1}"
                if tag != "u":
                    where[tag] = tid
                turns.append({"id": tid, "session": f"{user}-s{sess + 1}", "role": NAMES[u], "content": said,
                              "timestamp": day + 120 * k})
                turns.append({"id": f"{user}:s{sess + 1}:t{2 * k + 2}", "session": f"{user}-s{sess + 1}",
                              "role": "assistant", "content": reply, "timestamp": day + 120 * k + 60})
        questions = []
        for t, th in enumerate(threads):
            gold = [where[(t, m)] for m in range(len(th["mentions"]))]
            for w, text in enumerate(th["questions"]):
                questions.append({"id": f"{user}:q{t + 1}{'ab'[w]}", "text": text, "gold": gold, "kind": th["kind"],
                                  "wording": ("lexical", "paraphrase")[w]})
        out.append({"user": user, "name": NAMES[u], "part": part, "turns": turns, "questions": questions})
    return out


def main(argv: list[str] | None = None) -> int:
    path = Path(__file__).resolve().parents[2] / "recallite_mcp" / "benchmarks" / "data" / "history.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for user in generate():
            f.write(json.dumps(user, ensure_ascii=False) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
