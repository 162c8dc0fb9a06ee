"""Dev-only, outside the wheel: writes data/corrections_updates.jsonl and data/corrections_lookalikes.jsonl, the evaluation
set of `recallite-mcp eval corrections` (run: python tests/benchmarks/make_corrections_set.py).

Topics are written by hand: each has its own ways of stating a value, of announcing a change
(or none: a plain restatement, sometimes phrased another way) and of asking. Look-alike pairs
state the same kind of thing about two different subjects (staging vs production, web vs mobile,
Maria vs Tom, two errors in one module), both true at once. The dev/holdout split is drawn once,
from the pair id, before any tuning: `split` in each record.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

# Each topic: subjects (with sibling subjects for look-alikes), values, stating templates,
# change templates ({S} subject, {A} old value, {B} new value), questions.
TOPICS = [
    dict(cat="number", name="port",
         subjects=[("the staging server", "the production server"), ("the metrics exporter", "the log shipper"),
                   ("the admin dashboard", "the public API gateway"), ("the dev database proxy", "the test database proxy"),
                   ("the websocket relay", "the webhook receiver")],
         values=["8080", "9090", "3000", "5432", "8443", "6379", "8000", "4000", "9200", "7070"],
         state=["{S} runs on port {A}.", "{S} listens on port {A}.", "Port {A} is what {S} listens on."],
         plain=["{S} runs on port {B}.", "{S} listens on port {B}."],
         para=["{S} is reachable on port {B}.", "Point clients of {S} at port {B}."],
         cue=["{S} moved to port {B} last week.", "{S} no longer uses port {A}; it is on port {B} now.",
              "We changed the port of {S} from {A} to {B}.", "{S} now listens on port {B} instead of {A}."],
         q=["Which port does {S} use?", "What port should I connect to for {S}?"]),
    dict(cat="number", name="timeout",
         subjects=[("the checkout API", "the search API"), ("the nightly export job", "the hourly sync job"),
                   ("the payment webhook", "the shipping webhook"), ("the image resizer", "the PDF renderer")],
         values=["30 seconds", "45 seconds", "60 seconds", "90 seconds", "2 minutes", "5 minutes", "10 seconds", "15 seconds"],
         state=["The timeout for {S} is {A}.", "{S} times out after {A}.", "Requests to {S} are cut off after {A}."],
         plain=["The timeout for {S} is {B}.", "{S} times out after {B}."],
         para=["{S} gives up after {B}.", "We allow {S} {B} before timing out."],
         cue=["The timeout for {S} was raised from {A} to {B}.", "{S} now times out after {B}, not {A}.",
              "We bumped the timeout of {S} to {B}."],
         q=["What is the timeout of {S}?", "How long before {S} times out?"]),
    dict(cat="number", name="limit",
         subjects=[("the free plan", "the team plan"), ("the upload endpoint", "the download endpoint"),
                   ("the public API", "the internal API"), ("guest users", "signed-in users")],
         values=["100 requests per minute", "500 requests per minute", "1000 requests per minute", "50 requests per minute",
                 "20 requests per second", "10 requests per second"],
         state=["The rate limit on {S} is {A}.", "{S} is rate limited to {A}."],
         plain=["The rate limit on {S} is {B}.", "{S} is rate limited to {B}."],
         para=["{S} may make at most {B}.", "Throttling kicks in for {S} above {B}."],
         cue=["The rate limit on {S} changed from {A} to {B}.", "{S} is no longer limited to {A}; the limit is {B} now.",
              "As of this release {S} is limited to {B}."],
         q=["What is the rate limit for {S}?", "How many requests may {S} make?"]),
    dict(cat="number", name="price",
         subjects=[("the Pro subscription", "the Basic subscription"), ("the annual licence", "the monthly licence"),
                   ("a seat on the Team tier", "a seat on the Enterprise tier")],
         values=["$12 per month", "$15 per month", "$20 per month", "$9 per month", "$49 per month", "$99 per month", "$29 per month"],
         state=["{S} costs {A}.", "The price of {S} is {A}."],
         plain=["{S} costs {B}.", "The price of {S} is {B}."],
         para=["Customers pay {B} for {S}.", "We charge {B} for {S}."],
         cue=["{S} went up from {A} to {B}.", "{S} now costs {B} instead of {A}.", "Price change: {S} is {B} from now on."],
         q=["How much does {S} cost?", "What do we charge for {S}?"]),
    dict(cat="number", name="size",
         subjects=[("the worker pool", "the scheduler pool"), ("the Redis cache", "the CDN cache"),
                   ("the build agents", "the test agents"), ("the upload batch", "the import batch")],
         values=["4", "8", "16", "32", "12", "24", "64", "6"],
         state=["{S} has {A} instances.", "We run {S} with {A} instances."],
         plain=["{S} has {B} instances.", "We run {S} with {B} instances."],
         para=["{S} is scaled to {B} instances.", "There are {B} instances in {S}."],
         cue=["{S} was scaled from {A} to {B} instances.", "{S} now has {B} instances, up from {A}.",
              "We no longer run {A} instances of {S}; it is {B} now."],
         q=["How many instances does {S} have?", "What size is {S}?"]),
    dict(cat="number", name="retention",
         subjects=[("application logs", "audit logs"), ("database backups", "file backups"),
                   ("crash reports", "usage analytics")],
         values=["7 days", "14 days", "30 days", "90 days", "1 year", "6 months", "3 days"],
         state=["We keep {S} for {A}.", "{S} are retained for {A}."],
         plain=["We keep {S} for {B}.", "{S} are retained for {B}."],
         para=["{S} get deleted after {B}.", "The retention of {S} is {B}."],
         cue=["Retention of {S} changed from {A} to {B}.", "{S} are now kept for {B} instead of {A}."],
         q=["How long do we keep {S}?", "What is the retention period for {S}?"]),
    dict(cat="version", name="runtime",
         subjects=[("the billing service", "the reporting service"), ("the mobile backend", "the web backend"),
                   ("the data pipeline", "the ML pipeline"), ("the auth service", "the notification service")],
         values=["Python 3.9", "Python 3.10", "Python 3.11", "Python 3.12", "Python 3.13"],
         state=["{S} runs on {A}.", "{S} is built with {A}.", "{S} targets {A}."],
         plain=["{S} runs on {B}.", "{S} is built with {B}."],
         para=["{S} needs {B} to run.", "Use {B} for {S}."],
         cue=["{S} was upgraded to {B}; do not use {A} anymore.", "{S} moved from {A} to {B}.",
              "{S} now runs on {B}.", "We upgraded {S} from {A} to {B} last sprint."],
         q=["Which Python version does {S} use?", "What runtime is {S} on?"]),
    dict(cat="version", name="node",
         subjects=[("the storefront", "the admin panel"), ("the docs site", "the marketing site"), ("the CLI", "the SDK")],
         values=["Node 16", "Node 18", "Node 20", "Node 22"],
         state=["{S} is built on {A}.", "{S} requires {A}."],
         plain=["{S} is built on {B}.", "{S} requires {B}."],
         para=["Build {S} with {B}.", "{B} is what {S} needs."],
         cue=["{S} was upgraded from {A} to {B}.", "{S} no longer supports {A}; use {B}.", "{S} switched to {B}."],
         q=["Which Node version does {S} need?", "What Node does {S} build with?"]),
    dict(cat="version", name="dependency",
         subjects=[("the frontend", "the design system"), ("the API server", "the worker"), ("the mobile app", "the desktop app")],
         values=["React 17", "React 18", "React 19", "Django 4.2", "Django 5.0", "Spring Boot 2.7", "Spring Boot 3.2"],
         state=["{S} depends on {A}.", "{S} is pinned to {A}."],
         plain=["{S} depends on {B}.", "{S} is pinned to {B}."],
         para=["{S} uses {B}.", "{B} is the version {S} is on."],
         cue=["{S} was bumped from {A} to {B}.", "{S} is now pinned to {B}.", "{S} upgraded to {B}; {A} is gone."],
         q=["Which version is {S} pinned to?", "What does {S} depend on?"],
         same_family=True),
    dict(cat="version", name="api_version",
         subjects=[("the payments client", "the orders client"), ("the partner integration", "the internal integration")],
         values=["v1", "v2", "v3", "v4", "2023-10-01", "2024-06-15"],
         state=["{S} calls API version {A}.", "{S} talks to the {A} API."],
         plain=["{S} calls API version {B}.", "{S} talks to the {B} API."],
         para=["The API version for {S} is {B}.", "{S} sends requests to API {B}."],
         cue=["{S} migrated from API {A} to {B}.", "{S} no longer calls API {A}; it uses {B}."],
         q=["Which API version does {S} call?", "What API version is {S} on?"]),
    dict(cat="person", name="lead",
         subjects=[("the platform team", "the data team"), ("the mobile squad", "the web squad"),
                   ("the payments team", "the growth team"), ("the security group", "the SRE group")],
         values=["Maria", "Tom", "Aisha", "Kenji", "Lucas", "Priya", "Olu", "Sven", "Ines", "Dmitri"],
         state=["{A} leads {S}.", "The lead of {S} is {A}.", "{A} is the team lead of {S}."],
         plain=["{B} leads {S}.", "The lead of {S} is {B}."],
         para=["Ask {B}, who runs {S}.", "{S} reports to {B}."],
         cue=["{A} left; {B} now leads {S}.", "{B} took over {S} from {A}.", "The lead of {S} is no longer {A}; it is {B}."],
         q=["Who leads {S}?", "Who is the lead of {S}?"]),
    dict(cat="person", name="oncall",
         subjects=[("the checkout service", "the inventory service"), ("the database cluster", "the message broker")],
         values=["Maria", "Tom", "Aisha", "Kenji", "Lucas", "Priya", "Chen", "Fatima"],
         state=["{A} is on call for {S} this week.", "The on-call engineer for {S} is {A}."],
         plain=["{B} is on call for {S} this week.", "The on-call engineer for {S} is {B}."],
         para=["Page {B} if {S} breaks.", "{B} holds the pager for {S}."],
         cue=["{B} swapped with {A}: {B} is on call for {S} now.", "{A} is no longer on call for {S}; page {B}."],
         q=["Who is on call for {S}?", "Whom do I page when {S} fails?"]),
    dict(cat="person", name="owner",
         subjects=[("the billing dashboard", "the sales dashboard"), ("the release checklist", "the incident runbook"),
                   ("the Terraform modules", "the Helm charts")],
         values=["Maria", "Tom", "Aisha", "Kenji", "Lucas", "Priya", "Noor", "Rafael"],
         state=["{A} owns {S}.", "{S} is maintained by {A}."],
         plain=["{B} owns {S}.", "{S} is maintained by {B}."],
         para=["Send changes to {S} to {B}.", "{B} is responsible for {S}."],
         cue=["Ownership of {S} moved from {A} to {B}.", "{B} now owns {S}; {A} handed it over."],
         q=["Who owns {S}?", "Who maintains {S}?"]),
    dict(cat="place", name="office",
         subjects=[("Zara", "Omar"), ("Maria", "Tom"), ("the design team", "the support team"), ("Kenji", "Aisha")],
         values=["Berlin", "Lisbon", "Toronto", "Nairobi", "Osaka", "Madrid", "Austin", "Dublin", "Warsaw"],
         state=["{S} works from the {A} office.", "{S} is based in {A}."],
         plain=["{S} works from the {B} office.", "{S} is based in {B}."],
         para=["{S} sits in {B} these days.", "You'll find {S} in the {B} office."],
         cue=["{S} moved from {A} to {B}.", "{S} relocated to {B}.", "{S} is no longer in {A}; {S} works from {B} now."],
         q=["Where is {S} based?", "Which office does {S} work from?"]),
    dict(cat="place", name="region",
         subjects=[("the primary database", "the analytics warehouse"), ("the EU customers' data", "the US customers' data"),
                   ("the build cache", "the artifact store")],
         values=["eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-southeast-1", "ap-northeast-1"],
         state=["{S} lives in {A}.", "{S} is hosted in region {A}."],
         plain=["{S} lives in {B}.", "{S} is hosted in region {B}."],
         para=["{S} sits in the {B} region.", "Region {B} hosts {S}."],
         cue=["{S} was migrated from {A} to {B}.", "{S} moved to {B}.", "{S} is no longer in {A}; it is in {B}."],
         q=["Which region hosts {S}?", "Where does {S} live?"]),
    dict(cat="place", name="meeting",
         subjects=[("the weekly planning", "the sprint demo"), ("the architecture review", "the retro")],
         values=["room Atlas", "room Borealis", "room Cedar", "the third-floor kitchen", "room Delta", "the library"],
         state=["{S} happens in {A}.", "We hold {S} in {A}."],
         plain=["{S} happens in {B}.", "We hold {S} in {B}."],
         para=["Go to {B} for {S}.", "{B} is where {S} takes place."],
         cue=["{S} moved from {A} to {B}.", "{S} is in {B} now, not {A}."],
         q=["Where is {S} held?", "Which room is {S} in?"]),
    dict(cat="tool", name="ci",
         subjects=[("deploys", "nightly tests"), ("the mobile builds", "the web builds"), ("release tagging", "dependency scans")],
         values=["Jenkins", "GitHub Actions", "GitLab CI", "CircleCI", "Buildkite", "Travis CI"],
         state=["{S} run on {A}.", "We use {A} for {S}."],
         plain=["{S} run on {B}.", "We use {B} for {S}."],
         para=["{B} handles {S}.", "{S} are handled by {B}."],
         cue=["We replaced {A} with {B} for {S}.", "{S} switched from {A} to {B}.", "{S} run on {B} now; {A} is retired."],
         q=["What runs {S}?", "Which CI do we use for {S}?"]),
    dict(cat="tool", name="database",
         subjects=[("the orders service", "the catalog service"), ("Zara's side project", "Omar's side project"),
                   ("the analytics stack", "the session store")],
         values=["PostgreSQL", "MySQL", "SQLite", "MongoDB", "DynamoDB", "CockroachDB", "Redis"],
         state=["{S} stores its data in {A}.", "The database of {S} is {A}."],
         plain=["{S} stores its data in {B}.", "The database of {S} is {B}."],
         para=["{S} keeps everything in {B}.", "{B} backs {S}."],
         cue=["{S} migrated from {A} to {B}.", "{S} no longer uses {A}; it is on {B} now.", "We swapped {A} for {B} in {S}."],
         q=["Which database does {S} use?", "Where does {S} store its data?"]),
    dict(cat="tool", name="monitoring",
         subjects=[("the backend services", "the mobile apps"), ("the data jobs", "the edge workers")],
         values=["Datadog", "Grafana", "New Relic", "Prometheus", "Sentry", "Honeycomb"],
         state=["We monitor {S} with {A}.", "Alerts for {S} come from {A}."],
         plain=["We monitor {S} with {B}.", "Alerts for {S} come from {B}."],
         para=["{B} watches {S}.", "Dashboards for {S} live in {B}."],
         cue=["We moved monitoring of {S} from {A} to {B}.", "{S} are now monitored with {B} instead of {A}."],
         q=["What do we monitor {S} with?", "Where do alerts for {S} come from?"]),
    dict(cat="tool", name="queue",
         subjects=[("order events", "audit events"), ("email jobs", "thumbnail jobs")],
         values=["RabbitMQ", "Kafka", "SQS", "NATS", "Redis Streams", "Pub/Sub"],
         state=["{S} go through {A}.", "We publish {S} to {A}."],
         plain=["{S} go through {B}.", "We publish {S} to {B}."],
         para=["{B} carries {S}.", "{S} are queued in {B}."],
         cue=["{S} were moved from {A} to {B}.", "We switched {S} to {B}.", "{S} no longer go through {A}; they use {B}."],
         q=["Which queue carries {S}?", "Where are {S} published?"]),
    dict(cat="tool", name="cloud",
         subjects=[("the production cluster", "the staging cluster"), ("the ML training runs", "the batch reports")],
         values=["AWS", "GCP", "Azure", "Hetzner", "Fly.io", "DigitalOcean"],
         state=["{S} runs on {A}.", "We host {S} on {A}."],
         plain=["{S} runs on {B}.", "We host {S} on {B}."],
         para=["{S} is deployed to {B}.", "{B} is where {S} is hosted."],
         cue=["{S} migrated from {A} to {B}.", "{S} left {A} for {B}.", "{S} is on {B} now, not {A}."],
         q=["Which cloud hosts {S}?", "Where is {S} deployed?"]),
    dict(cat="policy", name="deploy_day",
         subjects=[("production deploys", "staging deploys"), ("schema migrations", "feature flag changes")],
         values=["Fridays", "weekends", "after 4pm", "during the holiday freeze", "on Mondays"],
         state=["{S} are not allowed {A}.", "No {S} {A}."],
         plain=["{S} are not allowed {B}.", "No {S} {B}."],
         para=["Avoid {S} {B}.", "We block {S} {B}."],
         cue=["{S} are no longer blocked {A}; the freeze now applies {B}.", "The rule changed: {S} are blocked {B}, not {A}."],
         q=["When are {S} not allowed?", "When can't we do {S}?"],
         time_values=True),
    dict(cat="policy", name="approvals",
         subjects=[("pull requests to main", "pull requests to release branches"), ("infrastructure changes", "copy changes")],
         values=["one approval", "two approvals", "three approvals", "a security review", "a lead's sign-off"],
         state=["{S} need {A}.", "{S} require {A} before merging."],
         plain=["{S} need {B}.", "{S} require {B} before merging."],
         para=["Get {B} for {S}.", "Merging {S} takes {B}."],
         cue=["{S} now need {B} instead of {A}.", "We changed the rule: {S} require {B}.", "{S} no longer need {A}; {B} is enough."],
         q=["What do {S} need before merging?", "How many approvals for {S}?"]),
    dict(cat="policy", name="branching",
         subjects=[("the backend repo", "the infra repo"), ("the mobile repo", "the docs repo")],
         values=["trunk-based development", "GitFlow", "release branches", "squash merges", "rebase merges"],
         state=["{S} uses {A}.", "In {S} we follow {A}."],
         plain=["{S} uses {B}.", "In {S} we follow {B}."],
         para=["Work in {S} follows {B}.", "{B} is the rule in {S}."],
         cue=["{S} switched from {A} to {B}.", "{S} no longer uses {A}; we do {B}."],
         q=["Which branching model does {S} use?", "How do we merge in {S}?"]),
    dict(cat="preference", name="editor",
         subjects=[("Zara", "Omar"), ("Priya", "Lucas"), ("Kenji", "Ines")],
         values=["VS Code", "Neovim", "IntelliJ", "Emacs", "Zed", "Sublime Text"],
         state=["{S} uses {A} as editor.", "{S} prefers {A} for editing."],
         plain=["{S} uses {B} as editor.", "{S} prefers {B} for editing."],
         para=["{S} writes code in {B}.", "{B} is {S}'s editor of choice."],
         cue=["{S} switched from {A} to {B}.", "{S} no longer uses {A}; {S} is on {B} now."],
         q=["Which editor does {S} use?", "What does {S} edit code with?"]),
    dict(cat="preference", name="indent",
         subjects=[("the team", "the data scientists"), ("Zara", "Omar")],
         values=["tabs", "spaces", "two-space indents", "four-space indents"],
         state=["{S} prefers {A}.", "For indentation {S} prefers {A}."],
         plain=["{S} prefers {B}.", "For indentation {S} prefers {B}."],
         para=["{S} indents with {B}.", "{S} likes {B} for indentation."],
         cue=["{S} prefers {B} now, not {A}.", "{S} switched from {A} to {B}."],
         q=["Does {S} prefer tabs or spaces?", "How does {S} like to indent?"],
         plain_words=True),
    dict(cat="preference", name="food",
         subjects=[("Zara", "Omar"), ("Maria", "Tom"), ("the client from Acme", "the client from Globex")],
         values=["sushi", "tacos", "pizza", "ramen", "falafel", "curry", "dumplings"],
         state=["{S}'s favourite food is {A}.", "{S} loves {A}."],
         plain=["{S}'s favourite food is {B}.", "{S} loves {B}."],
         para=["If you order for {S}, get {B}.", "{S} always picks {B}."],
         cue=["{S}'s favourite food is no longer {A}; it is {B} now.", "{S} went off {A}; {S} prefers {B} now."],
         q=["What is {S}'s favourite food?", "What should I order for {S}?"],
         plain_words=True),
    dict(cat="preference", name="format",
         subjects=[("the CFO", "the CTO"), ("Zara", "Omar"), ("the legal team", "the sales team")],
         values=["PDF reports", "spreadsheets", "slide decks", "short emails", "Notion pages", "bullet summaries"],
         state=["{S} wants updates as {A}.", "{S} prefers {A}."],
         plain=["{S} wants updates as {B}.", "{S} prefers {B}."],
         para=["Send {S} {B}.", "{S} reads {B}."],
         cue=["{S} wants {B} now instead of {A}.", "{S} no longer wants {A}; send {B}."],
         q=["How does {S} want updates?", "What format does {S} prefer?"],
         plain_words=True),
    dict(cat="preference", name="language",
         subjects=[("Zara", "Omar"), ("the support bot", "the sales bot"), ("Maria", "Tom")],
         values=["English", "Spanish", "German", "French", "Portuguese", "Japanese"],
         state=["{S} wants replies in {A}.", "{S} speaks {A} with customers."],
         plain=["{S} wants replies in {B}.", "{S} speaks {B} with customers."],
         para=["Write to {S} in {B}.", "Answer {S} in {B}."],
         cue=["{S} wants replies in {B} now, not {A}.", "{S} switched from {A} to {B}."],
         q=["Which language does {S} want?", "In what language should I reply to {S}?"]),
    dict(cat="preference", name="theme",
         subjects=[("Zara", "Omar"), ("the kiosk app", "the TV app")],
         values=["dark mode", "light mode", "high-contrast mode", "sepia mode"],
         state=["{S} uses {A}.", "{S} likes {A}."],
         plain=["{S} uses {B}.", "{S} likes {B}."],
         para=["Set {S} to {B}.", "{S} runs in {B}."],
         cue=["{S} switched from {A} to {B}.", "{S} no longer likes {A}; use {B}."],
         q=["Which theme does {S} use?", "Dark or light for {S}?"],
         plain_words=True),
]

# Look-alikes that are not one topic on two subjects: two different events or facts about one
# module or thing, sharing most words, both true at once.
EVENT_LOOKALIKES = [
    ("The billing module failed with a permission error while writing the invoice cache.",
     "The billing module failed with a connection reset while writing the invoice cache.",
     "Why did billing fail with a permission error?", "Why did billing get a connection reset?"),
    ("The import job crashed on a malformed CSV header in the customers file.",
     "The import job crashed on an out-of-memory error in the customers file.",
     "What malformed header broke the import?", "Did the import run out of memory?"),
    ("Login fails on Safari because third-party cookies are blocked.",
     "Login fails on Firefox because the CSP header blocks the inline script.",
     "Why does login fail on Safari?", "Why does login fail on Firefox?"),
    ("The web app stores sessions in Redis.", "The mobile app stores sessions in the device keychain.",
     "Where does the web app keep sessions?", "Where does the mobile app keep sessions?"),
    ("Uploads over 2 GB time out on the web client.", "Uploads over 2 GB are split into chunks on the desktop client.",
     "What happens to big uploads on the web client?", "How does the desktop client handle big uploads?"),
    ("The search index is rebuilt every night at 2am.", "The search cache is flushed every night at 2am.",
     "When is the search index rebuilt?", "When is the search cache flushed?"),
    ("Run make test before pushing to the backend repo.", "Run make lint before pushing to the backend repo.",
     "Which test command before pushing?", "Which lint command before pushing?"),
    ("The payments service retries failed charges three times.", "The payments service refunds failed orders three days later.",
     "How often are failed charges retried?", "When are failed orders refunded?"),
    ("A 502 from the gateway means the upstream pod restarted.", "A 504 from the gateway means the upstream query was too slow.",
     "What does a 502 from the gateway mean?", "What does a 504 from the gateway mean?"),
    ("The iOS build signs with the App Store certificate.", "The Android build signs with the Play upload key.",
     "What does the iOS build sign with?", "What does the Android build sign with?"),
    ("Maria reviews the database migrations.", "Maria reviews the API changelog.",
     "Who reviews the database migrations?", "Who reviews the API changelog?"),
    ("The cron job cleans temp files in /var/tmp every hour.", "The cron job rotates logs in /var/log every hour.",
     "What cleans /var/tmp?", "What rotates the logs in /var/log?"),
    ("The staging database is reset every Monday.", "The staging bucket is emptied every Monday.",
     "When is the staging database reset?", "When is the staging bucket emptied?"),
    ("Zara likes concise answers with code first.", "Zara likes detailed answers when reviewing architecture.",
     "How does Zara like answers with code?", "How does Zara like architecture reviews?"),
    ("The frontend tests run with Vitest.", "The end-to-end tests run with Playwright.",
     "What runs the frontend unit tests?", "What runs the end-to-end tests?"),
    ("Invoices are generated on the first day of the month.", "Payouts are sent on the first day of the month.",
     "When are invoices generated?", "When are payouts sent?"),
    ("The auth service logs failed logins to the security channel.", "The auth service logs password resets to the audit table.",
     "Where are failed logins logged?", "Where are password resets logged?"),
    ("Customer A's contract renews in March.", "Customer B's contract renews in March.",
     "When does customer A renew?", "When does customer B renew?"),
    ("The export button is hidden for viewers.", "The delete button is hidden for editors.",
     "Who can't see the export button?", "Who can't see the delete button?"),
    ("The worker crashes when the queue is empty because of a nil message.",
     "The worker stalls when the queue is full because of back-pressure.",
     "Why does the worker crash?", "Why does the worker stall?"),
]


# Added in session 7, dev only (the holdout is left as drawn): one person's or team's two
# preferences said with two verbs of one kind ("prefers" / "likes" / "wants"), both true at once.
# Detection that takes "loves curry" -> "picks ramen" for a change must leave these apart.
DEV_PREFERENCE_LOOKALIKES = [
    ("Lucas prefers dark roast coffee.", "Lucas likes standing meetings before lunch.",
     "What coffee does Lucas drink?", "When does Lucas like to meet?"),
    ("Kenji likes short commit messages with a ticket number.", "Kenji prefers tabs.",
     "How does Kenji write commit messages?", "Does Kenji indent with tabs?"),
    ("The CFO wants weekly cost reports.", "The CFO prefers meetings on Thursdays.",
     "How often does the CFO want cost reports?", "Which day does the CFO meet?"),
    ("Aisha loves pair programming on Fridays.", "Aisha prefers email over chat for code reviews.",
     "When does Aisha pair program?", "How does Aisha want code reviews?"),
    ("The design team picks Figma for mockups.", "The design team wants written feedback after each sprint.",
     "Which tool does the design team use for mockups?", "How does the design team want feedback?"),
    ("Omar likes window seats on long flights.", "Omar prefers vegetarian meals at team dinners.",
     "Where does Omar sit on flights?", "What does Omar eat at team dinners?"),
]


# Added in session 23 (a new user's trial): a preference reversed, the same two options the other
# way round ("prefers tabs over spaces" -> "now prefers spaces over tabs"), in several forms; and
# look-alikes: one subject's two preferences about two things with the same two options, both
# true at once ("... over spaces in Python" / "... over tabs in YAML"). Drawn with their own
# random generator after the rest, so the pairs above stay as drawn; split by pair id as above.
REVERSAL_SUBJECTS = ["the user", "Zara", "Omar", "the team", "Priya", "Lucas", "Kenji", "the CFO"]
REVERSAL_OPTIONS = [("tabs", "spaces"), ("dark mode", "light mode"), ("PDF reports", "slide decks"),
                    ("email", "chat"), ("short answers", "long explanations"), ("Vim", "Emacs"),
                    ("morning meetings", "afternoon meetings"), ("squash merges", "merge commits")]
# {S} subject, {A} the option kept, {B} the other; the change keeps {B} over {A}.
REVERSAL_STATE = ["{S} prefers {A} over {B}.", "{S} prefers {A} rather than {B}.", "{S} likes {A} more than {B}.",
                  "{S} prefers {A}, not {B}.", "{S} prefers {A} to {B}.", "{S} wants {A} instead of {B}."]
REVERSAL_CHANGE = ["{S} now prefers {B} over {A}.", "{S} prefers {B} over {A} now.", "{S} prefers {B} rather than {A}.",
                   "{S} now likes {B} more than {A}.", "{S} prefers {B}, not {A}.", "{S} now wants {B} instead of {A}.",
                   "{S} prefers {B} to {A} these days."]
REVERSAL_Q = ["Does {S} prefer {A} or {B}?", "Which does {S} prefer, {A} or {B}?"]
# Two things one subject has the same two options for: (thing, thing), each said as a tail.
REVERSAL_THINGS = [("in Python", "in YAML"), ("in the editor", "in the terminal"), ("for code reviews", "for planning"),
                   ("for bug reports", "for release notes"), ("on weekdays", "on weekends"),
                   ("in the backend repo", "in the docs repo")]


def _pick(rng: random.Random, seq, not_in=()):
    choices = [x for x in seq if x not in not_in]
    return rng.choice(choices)


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _fill(t: str, S: str, A: str, B: str = "") -> str:
    out = t.replace("{S}", S).replace("{A}", A).replace("{B}", B)
    return _cap(out)


def _split(pid: str, holdout_share: float = 0.4) -> str:
    h = int(hashlib.sha256(pid.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "holdout" if h < holdout_share else "dev"


def updates(rng: random.Random, per_subject: int = 2) -> list[dict]:
    out = []
    for t in TOPICS:
        for subj_pair in t["subjects"]:
            for S in subj_pair:
                for _ in range(per_subject):
                    A = _pick(rng, t["values"])
                    B = _pick(rng, t["values"], {A})
                    old = _fill(rng.choice(t["state"]), S, A)
                    form = rng.choices(["cue", "plain", "para"], weights=[5, 3, 2])[0]
                    new = _fill(rng.choice(t[form]), S, A, B)
                    qs = [_fill(q, S, A) for q in rng.sample(t["q"], k=len(t["q"]))]
                    pid = f"u-{t['name']}-{len(out)}"
                    out.append({"id": pid, "split": _split(pid), "category": t["cat"], "topic": t["name"],
                                "subjects": [S], "form": form, "old": old, "new": new, "questions": qs})
    return out


def lookalikes(rng: random.Random, per_pair: int = 3) -> list[dict]:
    out = []
    for t in TOPICS:
        for S1, S2 in t["subjects"]:
            for _ in range(per_pair):
                A = _pick(rng, t["values"])
                B = A if rng.random() < 0.4 else _pick(rng, t["values"], {A})  # the same value or another
                tpl = rng.choice(t["state"])
                first, second = _fill(tpl, S1, A), _fill(tpl if rng.random() < 0.7 else rng.choice(t["state"]), S2, B)
                q = rng.choice(t["q"])
                pid = f"l-{t['name']}-{len(out)}"
                out.append({"id": pid, "split": _split(pid), "category": t["cat"], "topic": t["name"],
                            "subjects": [S1, S2], "first": first, "second": second,
                            "first_questions": [_fill(q, S1, A)], "second_questions": [_fill(q, S2, B)]})
    for n, (a, b, qa, qb) in enumerate(EVENT_LOOKALIKES):
        pid = f"l-event-{n}"
        out.append({"id": pid, "split": _split(pid), "category": "event", "topic": "event", "subjects": [pid], "first": a, "second": b,
                    "first_questions": [qa], "second_questions": [qb]})
    for n, (a, b, qa, qb) in enumerate(DEV_PREFERENCE_LOOKALIKES):
        pid = f"l-preference-{n}"
        out.append({"id": pid, "split": "dev", "category": "preference", "topic": "preference", "subjects": [pid],
                    "first": a, "second": b, "first_questions": [qa], "second_questions": [qb]})
    return out


def reversals(rng: random.Random, n: int = 40) -> list[dict]:
    """Update pairs: a preference reversed, with its subject, options and rest said again."""
    out = []
    for k in range(n):
        S, (A, B) = rng.choice(REVERSAL_SUBJECTS), rng.choice(REVERSAL_OPTIONS)
        if rng.random() < 0.5:
            A, B = B, A
        pid = f"u-reversal-{k}"
        out.append({"id": pid, "split": _split(pid), "category": "preference", "topic": "reversal", "subjects": [S],
                    "form": "cue" if "now" in (t := rng.choice(REVERSAL_CHANGE)) else "plain",
                    "old": _fill(rng.choice(REVERSAL_STATE), S, A, B), "new": _fill(t, S, A, B),
                    "questions": [_fill(q, S, A, B) for q in REVERSAL_Q]})
    return out


def same_options(rng: random.Random, n: int = 30) -> list[dict]:
    """Look-alike pairs: one subject, two things, the same two options each way round."""
    out = []
    for k in range(n):
        S, (A, B), (t1, t2) = rng.choice(REVERSAL_SUBJECTS), rng.choice(REVERSAL_OPTIONS), rng.choice(REVERSAL_THINGS)
        first = _fill(rng.choice(REVERSAL_STATE), S, A, B).rstrip(".") + f" {t1}."
        second = _fill(rng.choice(REVERSAL_STATE), S, B, A).rstrip(".") + f" {t2}."
        pid = f"l-same-options-{k}"
        out.append({"id": pid, "split": _split(pid), "category": "preference", "topic": "same_options",
                    "subjects": [f"{S} {t1}", f"{S} {t2}"], "first": first, "second": second,
                    "first_questions": [f"Does {S} prefer {A} or {B} {t1}?"],
                    "second_questions": [f"Does {S} prefer {A} or {B} {t2}?"]})
    return out


# Added in session 24 (a new user's trial): a subject holds a relation such as "prefers" or "uses"
# with many values at once. Look-alikes: two of one subject's values from two domains, the second
# said plainly, with "now", or as the change of a third value of its own domain ("The user prefers
# tabs." / "The user no longer prefers dark mode; they prefer light mode."), all true at once.
# Updates: a value replaced, the new text naming the old one. Own random generator, split by id.
MANY_SUBJECTS = ["the user", "Zara", "Omar", "Priya", "the data team", "Lucas"]
MANY_THING_SUBJECTS = ["the API", "the billing service", "the mobile app", "the backend"]
# domain: (values, question about {S}'s value in it, verbs that state it)
P, U = ["prefers", "likes"], ["uses", "prefers"]
MANY_DOMAINS = {
    "indent": (["tabs", "spaces"], "How does {S} indent code?", U),
    "theme": (["dark mode", "light mode"], "Which colour theme does {S} want?", P + ["wants"]),
    "tests": (["pytest", "unittest"], "Which test runner does {S} use?", U),
    "os": (["Linux", "macOS"], "Which operating system does {S} work on?", U),
    "browser": (["Firefox", "Chrome"], "Which browser does {S} use?", U + ["likes"]),
    "answers": (["concise answers", "detailed explanations"], "How long should answers to {S} be?", P + ["wants"]),
    "packages": (["uv", "Poetry"], "Which Python package manager does {S} use?", U),
    "chat": (["Slack", "Microsoft Teams"], "Which chat tool does {S} use?", U),
    "editor": (["Vim", "VS Code"], "Which editor does {S} use?", U + ["likes"]),
    "drink": (["green tea", "espresso"], "What does {S} drink?", P + ["drinks"]),
}
D = ["uses", "depends on"]
MANY_THING_DOMAINS = {
    "web": (["FastAPI", "Flask"], "Which web framework does {S} use?", D),
    "validation": (["Pydantic", "Marshmallow"], "Which validation library does {S} use?", D),
    "cache": (["Redis", "Memcached"], "Which cache does {S} use?", D),
    "queue": (["RabbitMQ", "Kafka"], "Which message queue does {S} use?", D),
    "logging": (["structlog", "loguru"], "Which logging library does {S} use?", D),
    "http": (["httpx", "requests"], "Which HTTP client does {S} use?", D),
}


def _many_pick(rng: random.Random, thing: bool):
    subjects, domains = (MANY_THING_SUBJECTS, MANY_THING_DOMAINS) if thing else (MANY_SUBJECTS, MANY_DOMAINS)
    return rng.choice(subjects), domains


def many_values(rng: random.Random, n: int = 48) -> list[dict]:
    """Look-alike pairs: one subject's two values of a many-valued relation, two domains."""
    out = []
    for k in range(n):
        thing = k % 3 == 2
        S, domains = _many_pick(rng, thing)
        d1, d2 = rng.sample(sorted(domains), 2)
        (v1, q1, verbs1), (v2, q2, verbs2) = domains[d1], domains[d2]
        A, B = rng.choice(v1), rng.choice(v2)
        C = next(x for x in v2 if x != B)
        verb = rng.choice(verbs2)
        first = _cap(f"{S} {rng.choice(verbs1)} {A}.")
        form = rng.choice(["plain", "now", "named"])
        second = {"plain": f"{S} {verb} {B}.", "now": f"{S} now {verb} {B}.",
                  "named": f"{S} no longer {verb} {C}; it is {B} now."}[form]
        pid = f"l-many-{k}"
        out.append({"id": pid, "split": _split(pid), "category": "preference" if not thing else "tool",
                    "topic": "many_values", "subjects": [f"{S} {d1}", f"{S} {d2}"], "first": first,
                    "second": _cap(second), "first_questions": [_fill(q1, S, "")],
                    "second_questions": [_fill(q2, S, "")]})
    return out


def many_changes(rng: random.Random, n: int = 30) -> list[dict]:
    """Update pairs: one of a many-valued relation's values replaced, the new text naming the old."""
    out = []
    for k in range(n):
        thing = k % 3 == 2
        S, domains = _many_pick(rng, thing)
        d = rng.choice(sorted(domains))
        values, q, verbs = domains[d]
        A, B = rng.sample(values, 2)
        verb = rng.choice(verbs)
        new = rng.choice([f"{S} switched from {A} to {B}.", f"{S} no longer {verb} {A}; it is {B} now.",
                          f"{S} now {verb} {B} instead of {A}.", f"{S} replaced {A} with {B}."])
        pid = f"u-many-{k}"
        out.append({"id": pid, "split": _split(pid), "category": "preference" if not thing else "tool",
                    "topic": "many_changes", "subjects": [f"{S} {d}"], "form": "cue",
                    "old": _cap(f"{S} {verb} {A}."), "new": _cap(new), "questions": [_fill(q, S, "")]})
    return out


# Session 25: the new text says outright which value it replaces ("replaced X with Y", "X was
# replaced by Y", "switched from X to Y", "dropped X in favour of Y", ...), against an old text that
# states X in its own words. Written after the rule that reads them (compare's replacement step),
# with forms that rule does not read among them. Look-alikes: the same value replaced for a
# sibling subject, or another value of the same subject replaced.
REPLACE_THINGS = ["the checkout service", "the mobile app", "the data platform", "the billing API", "the docs site",
                  "the search service"]
REPLACE_PEOPLE = ["Zara", "Omar", "Priya", "the user", "Lucas"]
# domain: (values, ways of stating {S}'s value {A}, question about it, about people)
REPLACE_DOMAINS = {
    "ci": (["Jenkins", "CircleCI", "GitHub Actions", "Buildkite", "GitLab CI", "Travis CI"],
           ["{S} runs its builds on {A}.", "CI for {S} is {A}.", "Builds of {S} run in {A}."],
           "Which CI system builds {S}?", False),
    "tracker": (["Jira", "Linear", "GitHub Issues", "YouTrack"],
                ["{S} tracks bugs in {A}.", "Tickets for {S} live in {A}."], "Where are bugs of {S} tracked?", False),
    "monitoring": (["Datadog", "Grafana", "New Relic", "Honeycomb"],
                   ["{S} is monitored with {A}.", "Metrics of {S} go to {A}."], "What monitors {S}?", False),
    "database": (["PostgreSQL", "MySQL", "MongoDB", "DynamoDB"],
                 ["{S} stores its data in {A}.", "The database behind {S} is {A}."], "Which database does {S} use?", False),
    "bundler": (["webpack", "Vite", "esbuild", "Parcel"],
                ["{S} is bundled with {A}.", "{S} builds its assets with {A}."], "Which bundler does {S} use?", False),
    "drink": (["green tea", "espresso", "oat latte", "filter coffee"],
              ["{S} drinks {A} every morning.", "{S} starts the day with {A}."], "What does {S} drink in the morning?", True),
    "editor": (["Vim", "VS Code", "Emacs", "Zed"],
               ["{S} writes code in {A}.", "{S} does all editing in {A}."], "Which editor does {S} use?", True),
    "laptop": (["a ThinkPad", "a MacBook Air", "a Dell XPS", "a Framework laptop"],
               ["{S} works on {A}.", "{S}'s work machine is {A}."], "Which laptop does {S} work on?", True),
}
# {S} subject, {W} "we" or the subject, {A} old value, {B} new value
REPLACE_FORMS = ["{W} replaced {A} with {B}.", "{A} was replaced by {B} for {S}.", "{S} switched from {A} to {B}.",
                 "{S} moved from {A} to {B}.", "{S} swapped {A} for {B}.", "{A} has been replaced by {B} in {S}.",
                 "{B} replaced {A} for {S}.", "{S} dropped {A} in favour of {B}.", "{S} ditched {A} for {B}.",
                 "{A} is gone from {S}; it is {B} now.", "{S} traded {A} for {B}.", "{S} migrated off {A} onto {B}."]


def _replace_pick(rng: random.Random):
    d = rng.choice(sorted(REPLACE_DOMAINS))
    values, states, q, people = REPLACE_DOMAINS[d]
    return d, values, states, q, (REPLACE_PEOPLE if people else REPLACE_THINGS)


def _replace_text(rng: random.Random, S: str, A: str, B: str, person: bool, we: bool = True) -> str:
    we_s = "We" if we and not person and rng.random() < 0.4 else S
    t = rng.choice(REPLACE_FORMS)
    if person:  # "for Zara" reads as a gift: people change their own things
        t = rng.choice([f for f in REPLACE_FORMS if "for {S}" not in f and "in {S}" not in f and "from {S}" not in f])
    return _cap(t.replace("{W}", we_s).replace("{S}", S).replace("{A}", A).replace("{B}", B))


def replacements(rng: random.Random, n: int = 40) -> list[dict]:
    """Update pairs: the new text names the value it replaces."""
    out = []
    for k in range(n):
        d, values, states, q, subjects = _replace_pick(rng)
        S = rng.choice(subjects)
        A, B = rng.sample(values, 2)
        pid = f"u-replace-{k}"
        out.append({"id": pid, "split": _split(pid), "category": "tool", "topic": "replacements", "subjects": [f"{S} {d}"],
                    "form": "cue", "old": _fill(rng.choice(states), S, A),
                    "new": _replace_text(rng, S, A, B, subjects is REPLACE_PEOPLE), "questions": [_fill(q, S, "")]})
    return out


def replaced_elsewhere(rng: random.Random, n: int = 30) -> list[dict]:
    """Look-alike pairs: a value the first text states, replaced for a sibling subject; or another
    value of the first text's subject replaced."""
    out = []
    for k in range(n):
        d, values, states, q, subjects = _replace_pick(rng)
        S1 = rng.choice(subjects)
        A = rng.choice(values)
        first = _fill(rng.choice(states), S1, A)
        if k % 3 == 2:  # the same subject, another domain's value replaced
            d2 = rng.choice([x for x in sorted(REPLACE_DOMAINS) if x != d and REPLACE_DOMAINS[x][3] == REPLACE_DOMAINS[d][3]])
            values2, _, q2, _ = REPLACE_DOMAINS[d2]
            S2, (A2, B2) = S1, rng.sample(values2, 2)
            subjects2 = [f"{S1} {d}", f"{S1} {d2}"]
        else:  # a sibling subject replaces the same value
            S2, A2, B2, q2 = rng.choice([x for x in subjects if x != S1]), A, rng.choice([v for v in values if v != A]), q
            subjects2 = [f"{S1} {d}", f"{S2} {d}"]
        pid = f"l-replace-{k}"
        out.append({"id": pid, "split": _split(pid), "category": "tool", "topic": "replaced_elsewhere",
                    "subjects": subjects2, "first": first,
                    "second": _replace_text(rng, S2, A2, B2, subjects is REPLACE_PEOPLE, we=False),
                    "first_questions": [_fill(q, S1, "")], "second_questions": [_fill(q2, S2, "")]})
    return out


# Session 26: a value gone with nothing named in its place ("We no longer use Jenkins", "Jenkins
# was retired"), a person who left a role ("Maria left; the lead is now Tom"), and a change of one
# statement of a memory holding two ("staging is Postgres 14; production is Postgres 16" ->
# "production was upgraded to Postgres 17"; the untouched one must still answer its own question).
# Written after the rules that read them (named_changes), from a new user's trial's cases.
RETIRE_FORMS = ["{S} no longer uses {A}.", "We stopped using {A} for {S}.", "{A} is no longer used by {S}.",
                "{S} does not use {A} anymore.", "{A} has been retired from {S}.", "{S} got rid of {A}.",
                "{A} was decommissioned for {S}.", "{S} dropped {A}."]
ROLES = ["tech lead", "release manager", "on-call engineer", "product owner", "security contact"]
ROLE_PLACES = ["the webshop", "the payments team", "the mobile app", "the data platform", "the search service"]
NAMES = ["Maria", "Tom", "Priya", "Daniel", "Ines", "Kenji", "Aisha", "Lukas", "Chen", "Sofia"]
ROLE_STATES = ["{P} is the {R} for {S}.", "The {R} for {S} is {P}.", "{P} is the {R} for {S}; ask {P} before big changes."]
LEFT_FORMS = ["{P} left; the {R} for {S} is now {Q}.", "{P} left the company.", "{P} has left, and {Q} is the {R} now.",
              "{P} left; {Q} took over as {R}.", "{P} quit; the {R} is now {Q}.", "{P} has left the team.",
              "{P} left {S}; {Q} is the {R} now."]
# (what, values, subject pairs, ways of stating two, ways of changing one, question)
PARTS = [
    ("database", ["Postgres 13", "Postgres 14", "Postgres 15", "Postgres 16", "Postgres 17"],
     [("the staging database", "the production database"), ("the reporting replica", "the primary database")],
     ["{S1} is {A1}; {S2} is {A2}.", "{S1} runs {A1} and {S2} runs {A2}."],
     ["{S2} was upgraded to {B}.", "{S2} is now {B}.", "{S2} moved to {B}."], "Which Postgres version does {S} run?"),
    ("port", ["port 8080", "port 9090", "port 443", "port 8443", "port 3000"],
     [("the staging server", "the production server"), ("the admin API", "the public API")],
     ["{S1} listens on {A1}; {S2} listens on {A2}.", "{S1} runs on {A1}, while {S2} runs on {A2}."],
     ["{S2} moved to {B}.", "{S2} now listens on {B}.", "{S2} listens on {B} now."], "Which port does {S} use?"),
    ("region", ["eu-west-1", "us-east-1", "eu-central-1", "ap-south-1", "us-west-2"],
     [("the web app", "the batch jobs"), ("the EU tenant", "the US tenant")],
     ["{S1} is hosted in {A1}; {S2} is hosted in {A2}.", "{S1} runs in {A1} and {S2} runs in {A2}."],
     ["{S2} moved to {B}.", "{S2} was migrated to {B}.", "{S2} runs in {B} now."], "Which region hosts {S}?"),
    ("node", ["Node 16", "Node 18", "Node 20", "Node 22"],
     [("the frontend build", "the API server"), ("the docs site", "the admin dashboard")],
     ["{S1} uses {A1}; {S2} uses {A2}.", "{S1} is on {A1} and {S2} is on {A2}."],
     ["{S2} was upgraded to {B}.", "{S2} is on {B} now.", "{S2} switched to {B}."], "Which Node version does {S} use?"),
]


def _role(rng: random.Random, t: str, P: str, R: str, S: str, Q: str = "") -> str:
    return _cap(t.replace("{P}", P).replace("{R}", R).replace("{S}", S).replace("{Q}", Q))


def retirements(rng: random.Random, n: int = 40) -> list[dict]:
    """Update pairs: a tool's value gone with nothing in its place, or a person who left a role."""
    out = []
    for k in range(n):
        if k % 2:
            P, Q = rng.sample(NAMES, 2)
            R, S = rng.choice(ROLES), rng.choice(ROLE_PLACES)
            old, new = _role(rng, rng.choice(ROLE_STATES), P, R, S), _role(rng, rng.choice(LEFT_FORMS), P, R, S, Q)
            subjects, q = [P], _role(rng, "Who is the {R} for {S}?", P, R, S)
        else:
            d = rng.choice([x for x in sorted(REPLACE_DOMAINS) if not REPLACE_DOMAINS[x][3]])
            values, states, q0, _ = REPLACE_DOMAINS[d]
            S, A = rng.choice(REPLACE_THINGS), rng.choice(values)
            old, new = _fill(rng.choice(states), S, A), _fill(rng.choice(RETIRE_FORMS), S, A)
            subjects, q = [f"{S} {d}"], _fill(q0, S, "")
        pid = f"u-retire-{k}"
        out.append({"id": pid, "split": _split(pid), "category": "tool" if k % 2 == 0 else "person",
                    "topic": "retirements", "subjects": subjects, "form": "cue", "old": old, "new": new,
                    "questions": [q]})
    return out


def partial_changes(rng: random.Random, n: int = 30) -> list[dict]:
    """Update pairs of a memory stating two values, one of them changed: the newer memory answers
    the changed one's question, the older still answers the other's (``kept_questions``)."""
    out = []
    for k in range(n):
        what, values, pairs, states, changes, q = rng.choice(PARTS)
        S1, S2 = rng.choice(pairs)
        if rng.random() < 0.5:
            S1, S2 = S2, S1
        A1, A2, B = rng.sample(values, 3)
        old = _cap(rng.choice(states).replace("{S1}", S1).replace("{S2}", S2).replace("{A1}", A1).replace("{A2}", A2))
        new = _cap(rng.choice(changes).replace("{S2}", S2).replace("{B}", B))
        pid = f"u-partial-{k}"
        out.append({"id": pid, "split": _split(pid), "category": "number", "topic": "partial_changes",
                    "subjects": [f"{S1} {what}", f"{S2} {what}"], "form": "partial", "old": old, "new": new,
                    "questions": [_cap(q.replace("{S}", S2))], "kept_questions": [_cap(q.replace("{S}", S1))]})
    return out


def retired_elsewhere(rng: random.Random, n: int = 30) -> list[dict]:
    """Look-alike pairs: a value the first text states, dropped by a sibling subject; a person who
    left a role, after a statement about them that is no role; another person who left."""
    out = []
    for k in range(n):
        kind = k % 3
        if kind == 0:
            d = rng.choice([x for x in sorted(REPLACE_DOMAINS) if not REPLACE_DOMAINS[x][3]])
            values, states, q, _ = REPLACE_DOMAINS[d]
            S1, S2 = rng.sample(REPLACE_THINGS, 2)
            A = rng.choice(values)
            first, second = _fill(rng.choice(states), S1, A), _fill(rng.choice(RETIRE_FORMS), S2, A)
            q1, q2, subjects = _fill(q, S1, ""), _fill(q, S2, ""), [f"{S1} {d}", f"{S2} {d}"]
        elif kind == 1:
            d = rng.choice([x for x in sorted(REPLACE_DOMAINS) if REPLACE_DOMAINS[x][3]])
            values, states, q, _ = REPLACE_DOMAINS[d]
            P, Q = rng.sample(NAMES, 2)
            R, S = rng.choice(ROLES), rng.choice(ROLE_PLACES)
            first = _fill(rng.choice(states), P, rng.choice(values))
            second = _role(rng, rng.choice([f for f in LEFT_FORMS if "{Q}" in f and "{S}" in f]), P, R, S, Q)
            q1, q2, subjects = _fill(q, P, ""), _role(rng, "Who is the {R} for {S}?", P, R, S), [P]
        else:
            P, P2, Q = rng.sample(NAMES, 3)
            R, S = rng.choice(ROLES), rng.choice(ROLE_PLACES)
            S2 = rng.choice([x for x in ROLE_PLACES if x != S])
            first = _role(rng, rng.choice(ROLE_STATES), P, R, S)
            second = _role(rng, rng.choice([f for f in LEFT_FORMS if "{S}" in f]), P2, R, S2, Q)
            q1, q2, subjects = (_role(rng, "Who is the {R} for {S}?", P, R, S),
                                _role(rng, "Who is the {R} for {S}?", P2, R, S2), [P, P2])
        pid = f"l-retire-{k}"
        out.append({"id": pid, "split": _split(pid), "category": "tool" if kind == 0 else "person",
                    "topic": "retired_elsewhere", "subjects": subjects, "first": first, "second": second,
                    "first_questions": [q1], "second_questions": [q2]})
    return out


def main() -> None:
    rng = random.Random(20261202)
    here = Path(__file__).resolve().parents[2] / "recallite_mcp" / "benchmarks" / "data"
    ups, looks = updates(rng), lookalikes(rng)
    extra = random.Random(20261205)  # session 23's pairs: their own draws, the earlier ones unchanged
    ups += reversals(extra)
    looks += same_options(extra)
    later = random.Random(20261206)  # session 24's pairs, drawn after all the rest
    ups += many_changes(later)
    looks += many_values(later)
    replaced = random.Random(20261207)  # session 25's pairs, drawn after all the rest
    ups += replacements(replaced)
    looks += replaced_elsewhere(replaced)
    gone = random.Random(20261208)  # session 26's pairs, drawn after all the rest
    ups += retirements(gone) + partial_changes(gone)
    looks += retired_elsewhere(gone)
    for name, rows in (("corrections_updates.jsonl", ups), ("corrections_lookalikes.jsonl", looks)):
        with open(here / name, "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        dev = sum(r["split"] == "dev" for r in rows)
        print(f"{name}: {len(rows)} pairs ({dev} dev, {len(rows) - dev} holdout)")


if __name__ == "__main__":
    main()
