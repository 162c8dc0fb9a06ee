"""Dev-only, outside the wheel: writes the knowledge-update set (data/history_updates.jsonl):
`python tests/benchmarks/make_update_set.py`.

Eight simulated users (v1-v8) talk to an assistant over 12-16 sessions each, days apart, with
10-15 exchanges per session. Each user has 9-10 update threads: a fact about the user (job,
city, car, phone, diet, rent, GP, pet, editor, ...) is stated in one session and changed in a
later one, sometimes twice (A, then B, then C). The change is worded in different ways: with
explicit change words, as a plain new statement, in passing, with the subject worded
differently, as a negation, or as a new number. Around the threads: everyday talk, assistant
replies that repeat the old value, and other people stating values on the same topics
(usually after the user's last mention, so the newest turn on a topic is often not the answer).

Every question is kind "update" and comes in two wordings: "lexical" (repeats words of the
evidence) and "paraphrase" (few shared words). gold lists the user's own mentions of the
thread, oldest to newest; the newest (latest timestamp) is what holds now.

The set was written independently of the ranking code. The dev part (v1-v4) and holdout part
(v5-v8), the templates and the seed were fixed before any ranking was measured on it. The
generator uses only the standard library and is seeded: the file it writes is the committed one.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

SEED = 20240201
START = 1_706_745_600  # 2024-02-01 UTC
DAY = 86_400
NAMES = ["Amara", "Lukas", "Mei", "Oisin", "Priyanka", "Joaquin", "Solveig", "Theo"]


def T(topic, form, vals, m, q, other, echo=None, group=None):
    """A thread template. vals: per-user value tuples ({0}, {1}, ...); m: the user's mentions
    (user turn, assistant reply), oldest first; q: (lexical, paraphrase); other: another
    person on the same topic (filled from a different value tuple); echo: a later exchange, before
    the first change, whose assistant reply repeats the old value."""
    return {"topic": topic, "form": form, "vals": vals, "m": m, "q": q, "other": other, "echo": echo,
            "group": group or topic}


TEMPLATES = [
    T("employer", "reworded", [("bakery", "Hale Street", "nurse", "St Brigid's"),
                               ("print shop", "Canal Road", "paramedic", "the county ambulance service"),
                               ("garden centre", "the ring road", "pharmacist", "Greenway Pharmacy")],
      [("I'm at the {0} on {1} by half six most mornings, opening up before anyone else gets in.",
        "Early starts! At least the {0} is quiet before the customers arrive."),
       ("Long shifts at {3} wear me out, but honestly I like being a {2} more than anything I've done before.",
        "That's a lot of hours on your feet, so protect your rest days.")],
      ("Where does the user work their shifts these days?", "How do I make a living?"),
      ("{P} just got taken on as a {2} at {3}.", "Good for them, that's demanding but rewarding work."),
      ("Any tips for not crashing mid-afternoon after an early start?",
       "Since you're opening the {0} at dawn, a short nap right after work and a fixed bedtime help a lot."), "work"),
    T("city", "explicit", [("Lyon", "Grenoble", "Annecy"), ("Rotterdam", "Utrecht", "Haarlem"),
                           ("Glasgow", "Edinburgh", "Dundee")],
      [("I've been renting in {0} since university and never quite left.", "{0} is a great base. Do you still like it there?"),
       ("We moved from {0} to {1} in the spring, and I'm still finding boxes.",
        "Welcome to {1}! Unpacking always takes longer than you expect."),
       ("Relocated again, {2} this time; the new job made it an easy call.", "Another move already! I hope {2} feels like home soon.")],
      ("Where have I relocated to most recently?", "Which city is the user based in at present?"),
      ("{P} is moving to {1} for a teaching post.", "That's a big move, exciting for them."),
      ("Is it worth getting a bike for getting around town?",
       "For the distances around {0}, a decent second-hand e-bike would make a lot of sense."), "home"),
    T("neighbourhood", "indirect", [("Clifton", "Bedminster"), ("Moabit", "Neukölln"), ("Leith", "Morningside")],
      [("Our flat in {0} is tiny, but the park is two minutes away.", "A park on the doorstep makes up for a lot of missing square metres."),
       ("After we settled into the {1} place I finally unpacked the books and built a proper desk.",
        "A real desk changes everything. Want ideas for setting it up?")],
      ("Where is the place we've settled into?", "In what district does the user live?"),
      ("{P} just found a flat in {1}, right by the station.", "Being close to the station is so handy."),
      ("Where can I go for a long walk on Sunday?", "From {0} you could loop round the park and along the water, about an hour."), "home"),
    T("team", "indirect", [("the payments team", "the search team", "the new checkout squad"),
                           ("Project Heron", "Project Kestrel", "the billing migration"),
                           ("the mobile app group", "the data platform group", "the reliability team")],
      [("I'm on {0} at work, mostly fixing bugs at the moment.", "Bug-fixing stretches on {0} can be oddly satisfying."),
       ("They've moved me over to {1}; totally new codebase.", "A fresh codebase is a good chance to learn. Start by reading the tests."),
       ("First standup leading {2} went fine, I don't think anyone noticed I was nervous.", "Leading is a big step, and it sounds like it went well.")],
      ("Which team am I leading at work?", "What group does the user belong to in their company?"),
      ("{P} just joined {1} at a new company.", "Hope it's a good fit."), None, "work"),
    T("manager", "indirect", [("Gareth", "Marta"), ("Priya", "Jonah"), ("Lena", "Koji")],
      [("My manager {0} is fine, but micromanages every spreadsheet.", "That can be draining. Have you raised it with {0}?"),
       ("My new boss {1} wants the quarterly review by Friday, can you help me outline it?",
        "Sure. Let's start with the three numbers {1} will care about most.")],
      ("Who is my boss?", "Who does the user report to at work?"),
      ("{P} has a new boss called {1}, apparently a dream to work for.", "A good boss makes all the difference."),
      ("How do I ask for a Friday off without it being awkward?", "Just be direct with {0}: give the date and say who'll cover for you."), "work"),
    T("car", "plain", [("Skoda Fabia", "Kia Niro"), ("Ford Focus estate", "Hyundai Ioniq"), ("Vauxhall Corsa", "Mazda CX-30")],
      [("I drive a {0}; it's ancient, but it starts every single time.", "A reliable {0} is worth a lot, so keep up with the oil changes."),
       ("My daily driver is a {1}. What tyre pressure should I run for a long motorway trip?",
        "Look at the sticker inside the driver's door of the {1}; it lists pressures for a full load.")],
      ("What is the user's daily driver?", "Which vehicle do I get around in?"),
      ("{P} just bought a {1} and keeps sending me photos of it.", "Sounds like someone's thrilled."),
      ("Should I bother with winter tyres this year?", "For a {0} you use every day, winter tyres are a sensible investment."), "transport"),
    T("commute", "plain", [("number 38 bus", "7:40 train"), ("X4 coach", "6:55 tram"), ("park-and-ride shuttle", "8:10 ferry")],
      [("The {0} to the office takes forever, it stops at every lamppost.", "That sounds tedious. A good podcast might help."),
       ("I take the {1} to work. Is a monthly pass worth it?",
        "If you do the trip four or more days a week, the monthly pass usually pays for itself.")],
      ("What do I take to work?", "How does the user travel to their job in the morning?"),
      ("{P} catches the {1} every morning and it's always late.", "Unreliable transport is so frustrating."),
      ("What podcast should I try for the morning ride?", "On the {0} a chatty interview show works well, easy to dip in and out of."), "transport"),
    T("bike", "negation", [("Honda Jazz", "a secondhand Brompton"), ("Peugeot 208", "an electric cargo bike"),
                           ("Toyota Yaris", "a steel touring bike")],
      [("Filled up the {0} today, petrol prices are absurd.", "They really are. Does the {0} do decent mileage at least?"),
       ("I don't drive any more. I sold the {0} and get everywhere on {1}.", "That's a big change! Want a basic bike maintenance checklist?")],
      ("Do I still drive, or how do I get everywhere?", "What does the user rely on to get from A to B?"),
      ("{P} just bought a {0}, a first car at last.", "A first car is a big milestone."), None, "transport"),
    T("phone", "explicit", [("iPhone 11", "iPhone 15"), ("Pixel 6a", "Pixel 8 Pro"), ("Galaxy S20", "Galaxy S24")],
      [("The battery on my {0} barely lasts until lunch these days.", "Battery health drops with age; on the {0} you can check it in the settings."),
       ("Finally upgraded to the {1}, and the camera is ridiculous.", "Enjoy it! Move your two-factor apps over before wiping the old one.")],
      ("Which phone did I upgrade to?", "What handset does the user carry?"),
      ("{P} showed off a new {1} at lunch today.", "New gadgets always steal the conversation."),
      ("How do I free up storage on my phone?", "On the {0}, the storage page in settings shows which apps take the most space.")),
    T("laptop", "reworded", [("ThinkPad T480", "MacBook Air"), ("Dell XPS 13", "Framework 13"), ("HP Envy", "Surface Laptop")],
      [("The fan on my {0} sounds like a jet taking off.", "Try cleaning the vents; a {0} that age is probably full of dust."),
       ("Typing this on a {1} I picked up last week, and the keyboard is lovely.", "Nice! Give the battery a few full cycles before judging it.")],
      ("What laptop am I typing on?", "Which computer does the user work on?"),
      ("{P} got a {1} for uni.", "Good choice for lectures, light with a long battery.")),
    T("editor", "plain", [("Vim", "VS Code"), ("Sublime Text", "PyCharm"), ("Emacs", "Neovim")],
      [("I've done all my coding in {0} for years; the muscle memory is real.", "{0} rewards the years you put into it."),
       ("How do I set up a Python debugger in {1}? That's where I write all my code.",
        "In {1}, add a Python debug configuration pointing at your script, then set breakpoints.")],
      ("Which editor does the user write code in?", "What tool do I use to write software?"),
      ("{P} insists {1} is the only sane editor.", "Editor arguments never end.")),
    T("language", "explicit", [("Python", "Rust"), ("Java", "Kotlin"), ("PHP", "Go"), ("C#", "TypeScript")],
      [("My favourite language is {0}; I reach for it for everything.", "{0} is a great all-rounder."),
       ("I've switched to {1} for my side projects, the compiler catches so much.", "{1} does make a lot of mistakes impossible.")],
      ("Which language did I switch to for side projects?", "What does the user prefer to program in?"),
      ("{P} is learning {1} on a bootcamp.", "Bootcamps are intense but effective.")),
    T("diet", "negation", [("steak and chips", "vegetarian"), ("chicken wings", "plant-based"), ("a pork roast on Sundays", "pescatarian")],
      [("Honestly, my favourite meal in the world is {0}.", "Nothing wrong with a classic like {0}."),
       ("I don't eat meat any more. I've been {1} since the start of the month.", "That's a big shift. Want some {1} recipes to keep it interesting?")],
      ("Do I still eat meat?", "What eating pattern does the user follow?"),
      ("{P} went {1} in January and swears by it.", "Lots of people find it easier than they expected."),
      ("What should I cook for friends on Saturday?", "You could make your favourite, {0}; a crowd-pleaser is a crowd-pleaser.")),
    T("sport", "explicit", [("five-a-side football", "rowing"), ("squash", "swimming"), ("CrossFit", "yoga")],
      [("I play {0} on Tuesday nights with some old school friends.", "Regular {0} is a great way to stay fit and see your friends."),
       ("I quit {0} after my knee complained, and started {1} instead.", "Sensible, {1} is much kinder on the joints.")],
      ("What sport did I start after I quit {0}?", "How does the user keep fit?"),
      ("{P} has taken up {1} and won't talk about anything else.", "New hobbies do that to people."),
      ("What should I eat before my Tuesday game?", "Before {0}, a light carb-heavy snack about two hours out works well."), "leisure"),
    T("hobby", "plain", [("knitting", "bouldering", "baking sourdough"),
                         ("playing chess online", "birdwatching", "throwing pots at the studio"),
                         ("practising guitar", "painting watercolours", "trail running")],
      [("Spent the whole evening {0}; it's the only thing that switches my brain off.", "It's good to have something like that. How long have you been into it?"),
       ("Gave up {0}. These days my free time goes on {1}.", "Interesting switch! What drew you to {1}?"),
       ("Saturday was all {2}, I'm completely hooked.", "Sounds like a perfect Saturday.")],
      ("What is the user hooked on these days?", "What pastime am I into at the moment?"),
      ("{P} got really into {1} over the summer.", "It's great when something just clicks."), None, "leisure"),
    T("wake", "number", [("6:30", "5:15"), ("7:00", "6:00"), ("8:15", "6:45")],
      [("My alarm goes off at {0} on weekdays and I hit snooze twice.", "Snoozing can make you groggier; try putting the phone across the room."),
       ("I've been getting up at {1} so I can fit a run in before work.", "Impressive discipline! Make sure you're getting to bed early enough.")],
      ("What time am I getting up before work?", "When does the user's day start?"),
      ("{P} gets up at {1} for the gym, which is madness.", "Early birds are a different species.")),
    T("pet", "negation", [("rabbit", "Clover", "whippet", "Dash"), ("hamster", "Nibbles", "tabby cat", "Miso"),
                          ("budgie", "Kiwi", "spaniel", "Rolo")],
      [("{1}, my {0}, chewed through the laptop cable again.", "Cable protectors are cheap and worth it with a {0} around."),
       ("We don't have {1} any more; she went to a family with a big garden. Our {2}, {3}, keeps us busy now.",
        "That sounds like a good home for {1}. How is {3} settling in?")],
      ("Which pet keeps us busy these days?", "What animal lives with the user?"),
      ("{P} just adopted a {2} called {3}.", "How lovely, adoptions are the best.")),
    T("rent", "number", [("900", "1,050", "1,120"), ("1,250", "1,400", "1,480"), ("675", "760", "800")],
      [("My rent is {0} a month for a one-bed, which is okay for the area.", "That's reasonable for a one-bed. Are bills included?"),
       ("The landlord put the rent up to {1}, so I'm redoing my budget.", "Annoying. Let's go through the budget line by line."),
       ("I'm paying {2} for the same flat after this year's increase, ridiculous.", "That adds up fast. Worth checking what similar flats nearby go for.")],
      ("How much is the user paying for the flat?", "What do my housing costs come to each month?"),
      ("{P} pays {1} a month for a place half the size of mine.", "Rents are wild at the moment."), None, "money"),
    T("salary", "number", [("38,000", "44,500"), ("52,000", "61,000"), ("29,500", "33,000")],
      [("I'm on {0} a year, fine but not amazing.", "{0} is a solid base; there may be room to negotiate at your next review."),
       ("With a salary of {1}, how much should I be putting into my pension?",
        "A common rule of thumb is 10-15% of {1}, counting any employer match.")],
      ("What is my salary?", "How much does the user earn annually?"),
      ("{P} just got offered {1} at a startup.", "That's a strong offer."), None, "money"),
    T("mobile plan", "number", [("12", "20GB", "18"), ("9", "10GB", "14"), ("15", "30GB", "25")],
      [("My phone plan is {0} a month for {1} of data.", "That's a decent deal for {1}."),
       ("Now I'm paying {2} a month, but the data's unlimited.", "If you use a lot of data on the go, unlimited can be worth it.")],
      ("How much am I paying a month for data?", "What does the user's mobile contract cost?"),
      ("{P} pays {2} a month for unlimited data.", "Plans are all over the place.")),
    T("school", "indirect", [("Maya", "Greenfield Primary", "Oakridge Academy"), ("Leo", "St Anne's Primary", "Hillcrest School"),
                             ("Ines", "Brookside Infants", "Meadowview Juniors")],
      [("{0} started year two at {1} and already adores the teacher.", "A good teacher makes all the difference at that age."),
       ("Pick-up at {2} is chaos, the car park is tiny. {0} settled in fast, though.",
        "Glad {0} is settling in. Maybe park further away and walk the last bit?")],
      ("Which school has {0} settled into?", "Where is the user's child enrolled?"),
      ("{P}'s twins just started at {2}.", "Exciting times for the family.")),
    T("doctor", "explicit", [("Dr Hughes", "Dr Okafor"), ("Dr Lindqvist", "Dr Patel"), ("Dr Moreau", "Dr Adeyemi"),
                             ("Dr Brennan", "Dr Nakamura")],
      [("{0} has been my GP since I was a teenager.", "That kind of continuity is valuable; {0} must know your history well."),
       ("I changed practices, so I'm registered with {1} now.", "Good to have that sorted. Check that your records were transferred.")],
      ("Which doctor is the user registered with?", "Who looks after my health?"),
      ("{P} sees {1} at the surgery and can't praise them enough.", "A doctor you trust is worth a lot.")),
    T("subscription", "explicit", [("Netflix", "Disney+"), ("Spotify Premium", "YouTube Music"), ("Apple Music", "Tidal")],
      [("I pay for {0} and use it every night.", "Then it's probably worth the money."),
       ("Cancelled {0}; I'm paying for {1} instead.", "Fair enough, rotating subscriptions is a good way to save.")],
      ("Which subscription am I paying for?", "What service does the user currently subscribe to?"),
      ("{P} just signed up for {1}.", "Hope it's worth it.")),
    T("language learning", "reworded", [("Spanish", "Japanese"), ("Italian", "Korean"), ("German", "Portuguese")],
      [("Practised my {0} verbs on the tram, forty-day streak!", "Forty days is impressive; consistency is everything with languages."),
       ("My {1} tutor has me on an hour of listening a day, and it's far more fun than {0} ever was.",
        "An hour of listening a day will pay off quickly.")],
      ("Which language does the user's tutor teach?", "What foreign tongue am I working on?"),
      ("{P} is learning {1} before a trip.", "A few phrases go a long way.")),
    T("keep", "plain", [("spare key", "under the blue plant pot", "with the neighbour at number 12"),
                        ("passport", "in the desk drawer", "in the fireproof box in the wardrobe"),
                        ("bike lock key", "on the hook by the door", "in the tin on the fridge")],
      [("My {0} lives {1}, so I always know where it is.", "Good system, as long as everyone in the house knows it too."),
       ("The {0} is {2}. Remind me of that if I panic.", "Noted: {2}.")],
      ("Where is my {0}?", "Where would the user find the {0} if they needed it?"),
      ("{P} keeps a {0} {2}, which seems risky to me.", "Everyone has their own system.")),
    T("relationship", "indirect", [("Alex",), ("Robin",), ("Noor",)],
      [("I'm single and honestly quite happy that way.", "That's great; being happy on your own is underrated."),
       ("Dinner with {0}'s parents went well; three months together and they already like me.",
        "That's a lovely milestone. Sounds like things are going well with {0}.")],
      ("Am I single or together with someone?", "What is the user's relationship status?"),
      ("{P} just got engaged to {0}.", "Congratulations to them!")),
]

PEOPLE = ["My brother", "My sister", "My flatmate", "My cousin", "My neighbour", "My best friend", "My aunt", "Tariq",
          "My old manager", "My brother-in-law", "Ayesha", "Our landlord", "Jonas next door"]
CARS = ["Volvo XC40", "Renault Clio", "Tesla Model Y", "Fiat 500", "BMW 3 Series", "Nissan Qashqai", "Dacia Duster", "MG4"]
CITIES = ["Bristol", "Valencia", "Bergen", "Montreal", "Leipzig", "Lisbon", "Galway", "Bologna", "Tallinn"]
PHONES = ["Pixel 7", "iPhone 13 mini", "Galaxy A54", "OnePlus 12", "Fairphone 5"]
JOBS = ["a dental hygienist", "an electrician", "a paralegal", "a sous-chef", "a lab technician", "a bus driver",
        "a UX researcher", "a midwife", "a structural engineer"]
COMPANIES = ["Halden Logistics", "the city council", "Northgate Bank", "Pinecone Games", "Marlow Foods", "Tidewater Energy"]
TOPICS = ["compound interest", "how tides work", "inflation", "how a heat pump works", "the offside rule", "DNS"]
DISHES = ["a lamb tagine", "pad thai", "a mushroom pie", "okonomiyaki", "a bean chilli", "gnocchi with sage butter"]
INGREDIENTS = ["spinach", "leftover potatoes", "feta", "a courgette", "some chorizo"]
SCHOOLS = ["Riverside Primary", "Elmhurst Academy", "Kingsway Juniors", "Northfield School"]

# Everyday exchanges (user, assistant). Anyone named here is not the user: near misses only.
FILLER = [
    ("{P} just bought a {car}, second-hand but barely used.", "Nice find. Cars that age well are worth their weight in gold."),
    ("{P} is moving to {city} next month for a job.", "That's a big step. Will you visit once everything's settled?"),
    ("{P} got a new {phone} and spent all of lunch showing me the camera.", "Phone cameras really have become absurdly good."),
    ("{P} started as {job} at {co} on Monday.", "Exciting! The first weeks are always a blur."),
    ("What's a quick dinner with {ingredient}, eggs and half an onion?",
     "A frittata: soften the onion, add the {ingredient}, pour over beaten eggs and finish under the grill."),
    ("Can you explain {topic} in plain words?", "Sure, here's the short version, then we can dig into whichever part is unclear."),
    ("I can't decide whether to start a new series or just go to bed.", "If you're yawning already, bed wins. The series will keep."),
    ("The washing machine is making a horrible grinding noise.", "Check the drum for coins or a bra wire first; that's the usual culprit."),
    ("How long do leftovers of cooked rice keep in the fridge?", "About a day, ideally. Cool it quickly and reheat until steaming hot."),
    ("{P}'s house sale fell through at the last minute.", "That's rough, especially so late. Is there a backup buyer?"),
    ("{P}'s boss just quit without notice.", "That always causes a scramble. Hope it settles down soon."),
    ("Give me a five-minute stretch for after sitting all day.",
     "Neck rolls, a doorway chest stretch, hip flexor lunges, a seated twist and a forward fold, a minute each."),
    ("It has rained every single day this week.", "Grim. A good excuse for a slow evening with something warm to drink."),
    ("{P} rents a two-bed in {city} for less than I'd expect.", "Prices vary so much from street to street."),
    ("What's a polite way to decline a wedding invitation?", "Thank them warmly, say you can't make it without over-explaining, and send a card."),
    ("I keep forgetting to water the basil.", "Put it somewhere you pass every morning, like next to the kettle."),
    ("{P} traded in an old hatchback for a {car}.", "Sounds like an upgrade. Electric or petrol?"),
    ("Help me write a message to move a dentist appointment.",
     "Try: 'Hi, I need to move my Thursday appointment. Could you offer me another slot next week? Thanks.'"),
    ("{P} finally got the job at {co}, over the moon about it.", "Lovely news, sounds like a lot of hard work paid off."),
    ("Is it normal for a sourdough starter to smell like nail polish?", "Yes, it usually means it's hungry. Feed it more often."),
    ("What's the difference between an index fund and an ETF?",
     "An ETF trades on an exchange like a share; many index funds are ETFs, others are bought straight from the provider."),
    ("{P}'s kid just started at {school}.", "Hope the first weeks go smoothly."),
    ("The neighbours are having their kitchen ripped out, drilling from eight every morning.",
     "Noise-cancelling headphones might be your best friend for a few weeks."),
    ("Suggest a board game for four adults who hate long rules.", "Codenames or Just One; both take two minutes to explain."),
    ("I left my umbrella on the bus again.", "Lost property sometimes has it, worth a call before buying another."),
    ("{P} switched to a {phone} and already regrets it.", "Switching ecosystems takes a few weeks to feel normal."),
    ("{P} is {job} and works the weirdest hours.", "Shift patterns like that take a real toll."),
    ("Can you recommend something to listen to on a long drive?", "A narrative podcast works well on the road; it keeps you alert."),
    ("How do I get candle wax out of a tablecloth?", "Freeze it, scrape off what you can, then iron through brown paper."),
    ("What should I pack for a weekend of hiking in the hills?", "Layers, waterproofs, a map, snacks, plenty of water and a small first aid kit."),
    ("{P} bought a flat in {city} with a view of the river.", "A river view is a real treat."),
    ("I tried {dish} at a new place down the road, really good.", "Always nice when a new spot nails it."),
    ("My mum wants help setting up video calls on her tablet.", "Pick one app, make a home-screen shortcut and do a practice call together."),
    ("Any trick for remembering people's names at parties?", "Repeat the name back straight away and link it to something about them."),
    ("{P}'s dog ate an entire birthday cake.", "If it had chocolate in it, call a vet just in case."),
    ("Why does my bread come out so dense?", "Usually under-proofing or too little water. Give it longer somewhere warm."),
    ("{P} drives a {car} and swears it never breaks down.", "Some models really do earn that reputation."),
    ("How many hours of sleep do adults actually need?", "Most adults do best on seven to nine hours, on a steady schedule."),
    ("{P} just moved into a new place in {city}; the commute is much shorter.", "A shorter commute is a quality-of-life upgrade in itself."),
    ("Got a parking ticket, I was two minutes late back.", "Annoying! Some councils have a grace period, so it may be worth appealing."),
    ("What's a houseplant that's hard to kill?", "A snake plant or a pothos; both shrug off neglect."),
    ("{P} took a job as {job} in {city}.", "New job and new city at once, that's a lot of change."),
    ("Help me plan a birthday picnic for eight people.", "Finger food, two salads, something sweet, a cool box of drinks and a few blankets."),
    ("{P} is complaining that the rent went up again.", "Rent rises are everywhere at the moment, sadly."),
    ("Can you check my maths: 15% off 240?", "15% of 240 is 36, so it comes to 204."),
    ("What's a good gift for someone who has everything?", "An experience works well: a class, a tasting or tickets to something."),
]
GREETINGS = [("Morning! Got a few random things today.", "Morning! Go ahead."), ("Hi again, quick questions.", "Hi! What's up?"),
             ("Back again, long day.", "Welcome back. How can I help?"), ("Hey, you there?", "I'm here. What do you need?"),
             ("Evening. Bit of a brain dump incoming.", "Ready when you are.")]


def _fill(rng: random.Random, pair: tuple[str, str]) -> tuple[str, str]:
    """One everyday exchange, its slots filled the same way in the question and the reply."""
    slots = dict(P=rng.choice(PEOPLE), car=rng.choice(CARS), city=rng.choice(CITIES), phone=rng.choice(PHONES),
                       job=rng.choice(JOBS), co=rng.choice(COMPANIES), topic=rng.choice(TOPICS), dish=rng.choice(DISHES),
                       ingredient=rng.choice(INGREDIENTS), school=rng.choice(SCHOOLS))
    return pair[0].format(**slots), pair[1].format(**slots)


def _user(rng: random.Random, u: int, uses: dict[str, int]) -> tuple[dict, list[dict]]:
    user, name = f"v{u + 1}", NAMES[u]
    n_sessions, n_threads = rng.randint(12, 16), rng.randint(9, 10)
    order = sorted(TEMPLATES, key=lambda t: (uses[t["topic"]], rng.random()))  # least-used templates first
    chosen, groups = [], set()
    for t in order:
        if len(chosen) < n_threads and t["group"] not in groups:
            chosen.append(t)
            groups.add(t["group"])
    specials: dict[int, list] = {}  # session -> [(order, tiebreak, tag, user text, assistant text)]
    threads = []
    for i, t in enumerate(chosen):
        k, vi = len(t["m"]), uses[t["topic"]] % len(t["vals"])
        uses[t["topic"]] += 1
        vals, others = t["vals"][vi], [t["vals"][(vi + j) % len(t["vals"])] for j in (1, 2)]
        first = rng.randint(0, n_sessions // 2 - 1)
        last = rng.randint(max(first + 2, n_sessions // 2), n_sessions - 1)
        sess = [first] + sorted(rng.sample(range(first + 1, last), k - 2)) + [last]
        for j, (said, reply) in enumerate(t["m"]):
            specials.setdefault(sess[j], []).append((2 * j, rng.random(), (i, j), said.format(*vals), reply.format(*vals)))
        if t["echo"]:
            s = rng.randint(sess[0], sess[1] - 1)
            specials.setdefault(s, []).append((1, rng.random(), None, t["echo"][0].format(*vals), t["echo"][1].format(*vals)))
        n_other = 2 if rng.random() < 0.4 else 1
        for j in range(n_other):
            s = rng.randint(last, n_sessions - 1) if j == 0 and rng.random() < 0.8 else rng.randint(0, n_sessions - 1)
            person = rng.choice(PEOPLE)
            specials.setdefault(s, []).append((9, rng.random(), None, t["other"][0].format(*others[j], P=person),
                                               t["other"][1].format(*others[j])))
        threads.append({"t": t, "vals": vals, "sessions": sess, "others": n_other})
    pool = rng.sample(FILLER, 34)  # this user's everyday talk
    turns, where = [], {}
    day = START + DAY * rng.randint(0, 6)
    for s in range(n_sessions):
        day += DAY * (rng.randint(3, 9) if s else 0)
        ts = day + 3600 * rng.randint(7, 21) + 60 * rng.randint(0, 59)
        sp = sorted(specials.get(s, []))
        n_fill = max(rng.randint(10, 15) - 1 - len(sp), 4)
        fill = [(None,) + _fill(rng, pair) for pair in rng.sample(pool, n_fill)]
        pos = sorted(rng.sample(range(n_fill + len(sp)), len(sp)))
        pairs = list(fill)
        for p, (_, _, tag, said, reply) in zip(pos, sp):
            pairs.insert(p, (tag, said, reply))
        pairs.insert(0, (None,) + rng.choice(GREETINGS))
        for n, (tag, said, reply) in enumerate(pairs):
            for r, (role, text) in enumerate(((name, said), ("assistant", reply))):
                tid = f"{user}:s{s + 1}:t{2 * n + r + 1}"
                if tag is not None and role == name:
                    where[tag] = tid
                ts += rng.randint(30, 240)
                turns.append({"id": tid, "session": f"{user}-s{s + 1}", "role": role, "content": text, "timestamp": ts})
    questions = []
    for i, th in enumerate(threads):
        gold = [where[(i, j)] for j in range(len(th["t"]["m"]))]
        th["gold"] = gold
        for w, text in zip(("lexical", "paraphrase"), th["t"]["q"]):
            questions.append({"id": f"{user}:q{i + 1}{'a' if w == 'lexical' else 'b'}", "text": text.format(*th["vals"]),
                              "gold": gold, "kind": "update", "wording": w})
    return ({"user": user, "name": name, "part": "dev" if u < 4 else "holdout", "turns": turns, "questions": questions},
            threads)


def generate(seed: int = SEED) -> tuple[list[dict], list[list[dict]]]:
    """The users (the file's rows) and, per user, the threads behind their questions."""
    rng = random.Random(seed)
    uses = {t["topic"]: 0 for t in TEMPLATES}
    rows, threads = [], []
    for u in range(len(NAMES)):
        row, th = _user(rng, u, uses)
        rows.append(row)
        threads.append(th)
    return rows, threads


def main(argv: list[str] | None = None) -> int:
    path = Path(__file__).resolve().parents[2] / "recallite_mcp" / "benchmarks" / "data" / "history_updates.jsonl"
    rows, threads = generate()
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    forms: dict[str, int] = {}
    for th in (x for ths in threads for x in ths):
        key = th["t"]["form"] + (" (3-step)" if len(th["gold"]) == 3 else "")
        forms[key] = forms.get(key, 0) + 1
    print(f"wrote {path}: {len(rows)} users, {sum(len(r['turns']) for r in rows)} turns, "
          f"{sum(len(r['questions']) for r in rows)} questions; threads by form: {dict(sorted(forms.items()))}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
