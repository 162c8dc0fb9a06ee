"""Kinds of software tools: what a question asks for ("Which web framework ...?") and which
well-known tools a memory names (Flask is a web framework, httpx an HTTP client).

The embedder knows little of this: "Which web framework does the backend use?" finds
"The backend depends on httpx." nearer than "The backend depends on Flask.", and "Which message
queue ...?" finds Pydantic nearer than Kafka. A short gazetteer of well-known tools, grouped by
kind, lets ranking tell them apart (``policy.kind_ranking``), and tells detection that "Zara writes
code in Vim." and "Zara uses Chrome." are two facts, not one changed (``policy.corrections``). A
name it does not know counts for nothing either way: it only ever decides between memories that
name tools it knows. Names that are also people's or plain words ("Hugo", "got") are left out, or
matched only as written ("Linear", "Slack", "Poetry").
"""

from __future__ import annotations

import re
from functools import lru_cache

# One kind per line: its name | how a question names it | its members. A member written with a
# leading "=" is a common word too ("Linear", "Poetry", "Slack") and is matched as written only.
_GAZETTEER = """
web framework | web framework, backend framework, server framework, api framework, http framework \
| Django, =Flask, FastAPI, =Express, Express.js, =Rails, Ruby on Rails, Spring Boot, Laravel, \
Starlette, Sinatra, NestJS, =Gin, Actix, Axum, Koa, Hapi, =Tornado, =Pyramid, Sanic, Litestar, ASP.NET, \
ASP.NET Core, Symfony, CherryPy, =Bottle, =Falcon, =Quart, Fastify, Micronaut, Quarkus, Ktor, =Fiber
frontend framework | frontend framework, front-end framework, ui framework, ui library, frontend library \
| =React, Vue, Vue.js, Angular, Svelte, SvelteKit, SolidJS, Preact, Next.js, Nuxt, =Remix, =Astro, \
htmx, Alpine.js, jQuery, Qwik
http client | http client, http library, http client library | requests, httpx, aiohttp, urllib3, urllib, \
axios, OkHttp, =Retrofit, node-fetch, reqwest, HTTPie, libcurl
message queue | message queue, message broker, queue, event bus, broker, streaming platform, pub/sub \
| Kafka, Apache Kafka, Redis Streams, RabbitMQ, SQS, Amazon SQS, NATS, =Pulsar, Apache Pulsar, ActiveMQ, ZeroMQ, \
Pub/Sub, Google Pub/Sub, Kinesis, Redpanda, Azure Service Bus, Event Hubs, SNS, Mosquitto, NSQ
task queue | task queue, queue, job queue, background job, background jobs, worker queue \
| =Celery, RQ, Sidekiq, Dramatiq, BullMQ, =Bull, Resque, =Temporal, Arq
cache | cache, caching layer, cache layer, cache server, key-value store \
| Redis, Memcached, Varnish, Valkey, Hazelcast, Ehcache, KeyDB, Dragonfly
database | database, db, datastore, data store, primary database, sql database \
| PostgreSQL, Postgres, MySQL, SQLite, MongoDB, DynamoDB, Cassandra, CockroachDB, MariaDB, =Oracle, \
SQL Server, Microsoft SQL Server, Redis, Elasticsearch, OpenSearch, Firestore, =Firebase, Supabase, \
Neo4j, ClickHouse, =Snowflake, BigQuery, Redshift, TimescaleDB, InfluxDB, CouchDB, Couchbase, ScyllaDB, \
PlanetScale, =Aurora, Cloud Spanner, FaunaDB, RethinkDB, DuckDB, Db2, Vitess, YugabyteDB, TiDB
ci | ci, ci system, ci server, ci service, ci pipeline, ci/cd, continuous integration, build system, build server \
| Jenkins, GitHub Actions, GitLab CI, GitLab CI/CD, CircleCI, Travis CI, Buildkite, TeamCity, \
 Drone CI, Azure Pipelines, Bitbucket Pipelines, Bamboo, AppVeyor, =Concourse, =Woodpecker, \
Argo Workflows, Tekton, =Semaphore, Codeship, AWS CodeBuild, Cloud Build, =Harness
chat tool | chat tool, chat app, chat, messenger, messaging app, chat client, team chat \
| =Slack, Microsoft Teams, MS Teams, Discord, Mattermost, Zulip, Rocket.Chat, Google Chat, \
WhatsApp, Telegram, Webex
issue tracker | issue tracker, bug tracker, ticket tracker, ticketing system, tracker, project tracker \
| Jira, =Linear, GitHub Issues, GitLab Issues, YouTrack, Trello, Asana, Clubhouse, Bugzilla, \
Redmine, Pivotal Tracker, Monday.com, ClickUp, Azure Boards
bundler | bundler, module bundler, build tool, asset bundler \
| webpack, Vite, esbuild, =Rollup, =Parcel, Turbopack, Browserify, Snowpack, Rspack, SWC, Gulp, Grunt
test runner | test runner, test framework, testing framework, unit test framework, test library \
| pytest, Jest, =Mocha, Vitest, unittest, JUnit, TestNG, RSpec, Minitest, =Jasmine, =Karma, \
AVA, xUnit, NUnit, PHPUnit, =Cypress, Playwright, =Selenium, =Hypothesis, doctest, =Ward
package manager | package manager, dependency manager, python package manager, javascript package manager \
| pip, =Poetry, =uv, pipenv, conda, mamba, PDM, =Hatch, pip-tools, npm, yarn, pnpm, =Bun, =Cargo, Maven, \
Gradle, Homebrew, apt, =Composer, =Bundler, NuGet, Go modules
programming language | programming language, coding language, backend language \
| Python, =Go, Golang, =Rust, =Java, TypeScript, JavaScript, =Ruby, Kotlin, =Swift, C#, C++, Scala, Elixir, \
PHP, Haskell, Clojure, Erlang, OCaml, F#, =Dart, =Lua, =Perl, Zig, Objective-C
editor | editor, text editor, code editor, ide \
| Vim, Neovim, Emacs, VS Code, Visual Studio Code, VSCode, IntelliJ, IntelliJ IDEA, PyCharm, WebStorm, \
Sublime Text, =Sublime, =Helix, =Zed, =nano, =Atom, Visual Studio, =Eclipse, Xcode, Android Studio, =Cursor, \
=Windsurf, GoLand, RubyMine, CLion, =Rider, Notepad++
browser | browser, web browser | Firefox, =Chrome, Google Chrome, =Safari, Microsoft Edge, =Brave, \
=Arc, =Opera, Vivaldi, Chromium, LibreWolf, Tor Browser
operating system | operating system, os, desktop os, linux distribution, distro \
| Linux, Ubuntu, macOS, =Windows, Debian, Fedora, Arch Linux, FreeBSD, NixOS, CentOS, RHEL, \
Red Hat Enterprise Linux, Alpine Linux, openSUSE, Pop!_OS, Linux Mint, Manjaro, ChromeOS, \
Windows 10, Windows 11, WSL
laptop | laptop, work laptop \
| MacBook, MacBook Pro, MacBook Air, ThinkPad, Dell XPS, XPS, Framework Laptop, Surface Laptop, \
 ZenBook, EliteBook, Chromebook, Razer Blade, IdeaPad
monitoring | monitoring, monitoring tool, monitoring system, observability, observability tool, apm, \
alerting, metrics system, error tracker, error tracking \
| Datadog, Prometheus, Grafana, New Relic, Sentry, Honeycomb, Nagios, Zabbix, Dynatrace, Splunk, \
AppDynamics, PagerDuty, Opsgenie, Grafana Cloud, Elastic APM, Lightstep, Bugsnag, Rollbar, \
Checkmk, Icinga, SigNoz, Uptime Kuma, CloudWatch, Stackdriver, Jaeger, Zipkin, OpenTelemetry
logging library | logging library, logger, logging framework, log library \
| OpenTelemetry, loguru, structlog, log4j, Log4j, logback, SLF4J, =winston, pino, bunyan, zap, zerolog, logrus, Serilog, NLog
validation library | validation library, validator, schema library, data validation library \
| Pydantic, marshmallow, attrs, cattrs, Cerberus, Voluptuous, Zod, Joi, =Yup, jsonschema, msgspec
orm | orm, object-relational mapper, database toolkit, query builder \
| SQLAlchemy, Django ORM, Prisma, TypeORM, Hibernate, Sequelize, Peewee, Tortoise ORM, SQLModel, \
=Drizzle, Knex, ActiveRecord, Entity Framework, GORM, =Diesel, Ecto, MikroORM, Pony ORM
cloud | cloud, cloud provider, cloud platform, hosting provider \
| AWS, Amazon Web Services, GCP, Google Cloud, Google Cloud Platform, Azure, Microsoft Azure, \
DigitalOcean, Heroku, Fly.io, Vercel, Netlify, Linode, Hetzner, Cloudflare, OVH
orchestrator | orchestrator, container orchestrator, orchestration, cluster manager \
| Kubernetes, k8s, =Nomad, ECS, Amazon ECS, EKS, GKE, AKS, Docker Swarm, OpenShift, Mesos, k3s
infrastructure as code | infrastructure as code, iac, provisioning tool, infrastructure tool \
| Terraform, OpenTofu, Pulumi, CloudFormation, Ansible, =Puppet, SaltStack, CDK, AWS CDK, Crossplane, =Bicep
code host | code host, git host, repository host, git hosting, source control, version control, vcs \
| Git, GitHub, GitLab, Bitbucket, Gitea, Forgejo, SourceHut, Azure Repos, Gerrit, Perforce, Subversion, SVN, Mercurial
formatter | formatter, code formatter, linter, type checker, static analyzer \
| =Black, Ruff, =Prettier, ESLint, flake8, isort, mypy, Pylint, pyright, autopep8, YAPF, gofmt, rustfmt, \
Clippy, RuboCop, StandardJS, =Biome, dprint, golangci-lint, Stylelint, TSLint
shell | shell, command shell, login shell | bash, zsh, fish shell, PowerShell, nushell, tcsh, ksh
terminal | terminal, terminal emulator, terminal app | iTerm2, iTerm, Alacritty, =kitty, WezTerm, \
Windows Terminal, GNOME Terminal, Konsole, Ghostty, Terminal.app, tmux, =Terminator
container runtime | container runtime, container engine, container tool | Docker, Podman, containerd, \
CRI-O, LXC, LXD, Rancher Desktop, Colima, OrbStack
web server | web server, reverse proxy, proxy, load balancer, http server \
| nginx, =Apache, Apache HTTP Server, Caddy, Traefik, HAProxy, =Envoy, IIS, Lighttpd, Gunicorn, uWSGI, \
Uvicorn, Hypercorn, =Puma, =Unicorn, Tomcat, =Jetty, =Kong
colour theme | colour theme, color theme, theme, editor theme, colour scheme, color scheme, ui theme \
| Dracula, Solarized, Solarized Dark, Solarized Light, Monokai, Nord, Gruvbox, One Dark, Tokyo Night, \
Catppuccin, Night Owl, GitHub Dark, Ayu, Material Theme, Tomorrow Night, Zenburn, Cobalt2, Rosé Pine, \
dark mode, light mode, dark theme, light theme, high-contrast mode, high contrast
runtime | runtime, javascript runtime, js runtime, node runtime, language runtime \
| Node.js, =Node, Deno, =Bun, GraalVM, CPython, PyPy, Python, =Java, JVM, .NET, =Ruby, Erlang/OTP, =BEAM
docs tool | docs tool, documentation tool, docs generator, documentation generator, static site generator, \
wiki | =Sphinx, MkDocs, Docusaurus, Read the Docs, Confluence, =Notion, GitBook, Jekyll, =Gatsby, \
=Eleventy, Docsify, VitePress, Javadoc, Doxygen, pdoc
"""

# How a question asks for a kind: "Which web framework does ...", "What's our message broker?",
# "What do we use for CI?". The kind must head its phrase: "the queue length limit", "runtime
# errors" and "the build cache" ask for no tool.
_ARTICLE = r"(?:(?:a|an|the|its|their|our|his|her|my|your)\s+)?"
_LEADS = (r"\b(?:which|what)(?:'s|\u2019s)?\s+(?:is\s+" + _ARTICLE + r"|are\s+" + _ARTICLE
          + r"|kind\s+of\s+|sort\s+of\s+|type\s+of\s+|" + _ARTICLE + r")(?:[\w.+#-]+\s+){0,2}?",
          r"\b(?:use[sd]?|using|runs?|picked|chose|choose)\s+(?:as|for)\s+" + _ARTICLE)
_HEAD = (r"(?=\s+(?:does|do|did|is|are|was|were|will|would|should|can|could|has|have|had|we|they|you|i|our|the"
         r"|this|that|for|in|on|at|of|to|with|by|from|runs|builds|hosts|carries|handles|monitors|tracks|powers|backs"
         r"|serves|stores|sends|holds|keeps|deploys|tests|checks|formats|bundles|compiles|manages|ships)\b"
         r"|\s*[?.!,;:]|\s*$)")
# What watches a service: "What monitors the mobile app?"
_MONITORS = re.compile(r"\b(?:what|which)(?:\s+tool)?\s+(?:monitors|watches|alerts\s+on|observes)\b", re.IGNORECASE)
# Bugs and tickets are tracked somewhere: "Where are bugs of the docs site tracked?"
_TRACKED = re.compile(r"\b(?:bugs?|issues?|tickets?|defects?)\b.{0,60}\b(?:tracked|filed|logged|reported|kept)\b"
                      r"|\b(?:track|file|log|report)s?\s+(?:its\s+|their\s+|our\s+)?(?:bugs|issues|tickets)\b",
                      re.IGNORECASE)


# A token: a word with the dots, slashes and signs tool names carry inside ("Next.js", "C#",
# "Pub/Sub", ".NET"); what ends a sentence or a clause is stripped.
_TOKEN = re.compile(r"\.?[\w][\w.+#/!-]*")
_JOINED = re.compile(r"[/+]+|-(?=\w)|\.{2,}")  # what joins two words into one token
_LONGEST = 4  # words in the longest name ("Red Hat Enterprise Linux")


@lru_cache(maxsize=1)
def _tables() -> tuple[re.Pattern, dict[str, frozenset[str]], dict[str, frozenset[str]], dict[str, frozenset[str]],
                      frozenset[str]]:
    """The question pattern, the kinds of each alias ("queue": a message or a task queue), the kinds
    of each name (matched in lower case, and common words as written), and the words names open
    with (most words open none)."""
    loose: dict[str, set[str]] = {}
    exact: dict[str, set[str]] = {}
    alias_kind: dict[str, set[str]] = {}
    for line in _GAZETTEER.strip().splitlines():
        name, aliases, members = (part.strip() for part in line.split("|"))
        for alias in aliases.split(","):
            alias_kind.setdefault(alias.strip().lower(), set()).add(name)
        for member in members.split(","):
            member = member.strip()
            if member.startswith("="):
                exact.setdefault(member[1:], set()).add(name)
            else:
                loose.setdefault(member.lower(), set()).add(name)
    aliases = "|".join(re.escape(a) for a in sorted(alias_kind, key=len, reverse=True))
    asked = re.compile("|".join(f"{lead}(?P<k{i}>{aliases}){_HEAD}" for i, lead in enumerate(_LEADS)),
                       re.IGNORECASE)
    opens = frozenset(n.split(" ")[0] for n in loose) | frozenset(n.split(" ")[0].lower() for n in exact)
    return (asked, {k: frozenset(v) for k, v in alias_kind.items()}, {k: frozenset(v) for k, v in loose.items()},
            {k: frozenset(v) for k, v in exact.items()}, opens)


def asked_kinds(query: str) -> frozenset[str]:
    """The kinds of tool a question asks for (empty when it asks for none)."""
    asked, alias_kind, *_ = _tables()
    found = {k for m in asked.finditer(query) for alias in m.groupdict().values() if alias
             for k in alias_kind[alias.lower()]}
    if _TRACKED.search(query):
        found.add("issue tracker")
    if _MONITORS.search(query):
        found.add("monitoring")
    return frozenset(found)


@lru_cache(maxsize=4096)  # stored texts are compared again with every new memory near them
def named_kinds(text: str) -> frozenset[str]:
    """The kinds of the well-known tools a text names (the longest name at each word: "Redis
    Streams" is a queue, not a cache; a file name such as "flask.cfg" is no tool)."""
    _, _, loose, exact, opens = _tables()
    tokens: list[str] = []
    for t in (t.rstrip(".-/!") for t in _TOKEN.findall(text)):
        if t in exact or t.lower() in loose or not _JOINED.search(t):
            tokens.append(t)
        else:  # "Postgres/MySQL", "React+TypeScript", "a Redis-backed cache": each name on its own
            tokens.extend(p for p in (p.rstrip(".-/!") for p in _JOINED.split(t)) if p)
    out: set[str] = set()
    i = 0
    while i < len(tokens):
        if tokens[i].lower() not in opens:
            i += 1
            continue
        for n in range(min(_LONGEST, len(tokens) - i), 0, -1):
            name = " ".join(tokens[i:i + n])
            kinds = exact.get(name) or loose.get(name.lower())
            if kinds:
                out |= kinds
                i += n
                break
        else:
            i += 1
    return frozenset(out)


def answers_kind(text: str, kinds: frozenset[str]) -> bool | None:
    """Whether a text names a tool of one of ``kinds`` (True), only tools of other kinds (False),
    or no tool it knows (None: it may still answer, in names the gazetteer lacks)."""
    named = named_kinds(text)
    if not named:
        return None
    return bool(named & kinds)


def other_kinds(a: str, b: str) -> bool:
    """Whether two texts both name well-known tools, and no kind is named by both (an editor and a
    browser, a language and a web framework)."""
    ka, kb = named_kinds(a), named_kinds(b)
    return bool(ka and kb) and not ka & kb
