"""Deterministic task generator for the closed-loop learning benchmark.

The benchmark built on top of this module lets a simulated agent play rounds of tasks
against a fresh memory store. Each round, for each task family, the agent asks the memory
for context with a paraphrased query (limit 3), acts on the top memory, succeeds iff that
memory is the family's WORKING memory, and sends feedback. Learning is visible when the
success rate climbs from the no-feedback baseline towards 1.

Task families
=============
A :class:`TaskFamily` is one recurring developer-agent task (deploy billing to staging, run
the orders migrations, fix a CrashLoopBackOff, ...). It carries:

* ``working``: the one memory whose advice works in this project;
* ``distractors`` (2-4): plausible memories on the same task, written with the same topic
  words and about the same length, that do not work here (an outdated procedure, the rule of
  another product or environment, a half-right fix);
* ``drift_replacement``: the memory that becomes the working one in the drift scenario;
* ``queries`` (8): neutral paraphrases of the TASK (never of the solution) as an agent would
  type them at task start. They never contain a token that only the working memory has
  (:func:`solution_tokens`).

Distractors are balanced by wording: before any feedback, a hybrid retriever (bm25 +
MiniLM cosine, fused by RRF) ranks the working memory first for about ``1/(1+d)`` of the
queries of a family with ``d`` distractors, and the family's own memories fill the top 3.
``/work/experiments/learning/check_balance.py`` (outside the repository) measures that.

Determinism
===========
Everything is pure data plus ``random.Random`` seeded with strings (``random`` hashes str
seeds with SHA-512, so results do not depend on ``PYTHONHASHSEED`` or the machine).

* :func:`generate_families` returns all 48 families (catalog order) or, for ``n < 48``, a
  seeded subset that keeps interference pairs whole where possible. Each family's query
  tuple is put in a seeded order.
* :func:`query_for` picks the query of a round: rounds are cut into blocks of ``len(queries)``
  and each block is a fresh seeded permutation, so every variant is played equally often and
  the sequence differs between seeds.
* :func:`store_memories` lists the memories to insert, in a seeded order so that insertion
  order (a common tie-breaker) does not favour working memories.

Drift scenario
==============
After round :data:`DRIFT_AFTER_ROUND` (5) the working memory of a quarter of the families
(:func:`drift_families`) stops working and the family's ``drift_replacement`` is inserted;
from then on success for those families means using the replacement
(:func:`working_key`). The replacement is worded like the others (same lead phrase, same
topic words), so it is retrievable; the learner must demote the old winner and promote the
newcomer.

Interference scenario
=====================
Interference tests whether a learner keeps what it learned in one context from leaking into
another. :data:`INTERFERENCE_PAIRS` lists 10 ordered pairs ``(A, B)`` of families with
overlapping topics (``npm ci`` for the CI install vs adding a package; Docker build cache vs
Docker image size; CrashLoopBackOff diagnosis vs OOMKilled sizing; ConfigMap rollout restart
vs rolling back a release; rebasing a feature branch vs undoing a pushed commit; JWT
validation in the gateway vs refreshing the CRM client's OAuth token; JSON logging setup vs
temporary debug level; slow Postgres query vs connection exhaustion; PyPI trusted publishing
vs publishing the scoped npm package; large S3 uploads vs browser uploads). Each family is in
at most one pair.

For each pair, :class:`InterferencePair` carries 6 extra query variants for B. They describe
B's task (so B's working memory remains the right answer and stays retrievable) but are
worded with A's topic words, and usually with a "bridge" term that appears in A's WORKING
memory but not in A's distractors nor in A's own queries (for example ``exit code 137`` /
``OOMKilled``, ``rollout``, ``trusted publishing``, ``multipart``, ``exp`` and ``leeway``).
So B's interference queries pull A's working memory into their top 3, while A's own balance
is untouched (A's queries never contain the bridge term). A's working memory is wrong for B.

Suggested protocol: play A with ``query_for(A, r, seed)`` and B with
``interference_query_for(pair, r, seed)`` every round. A learner that keeps one global
usefulness score per memory promotes A's working memory from A's successes, then serves it
on B's queries, where it fails; the negative feedback demotes it for A as well, and A's
success rate oscillates. A learner whose credit depends on the query (or that keeps a
memory's positive evidence from other contexts) drives both A and B to success. Report A's
success rate with and without B's interference rounds.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

__all__ = [
    "MemorySpec",
    "TaskFamily",
    "InterferencePair",
    "MEMORY_TYPES",
    "ROLES",
    "DRIFT_AFTER_ROUND",
    "INTERFERENCE_PAIRS",
    "catalog_size",
    "generate_families",
    "query_for",
    "store_memories",
    "solution_tokens",
    "tokenize",
    "drift_families",
    "working_key",
    "interference_pairs",
    "interference_pair",
    "interference_query_for",
]

MEMORY_TYPES = ("lesson", "procedure", "fact", "constraint")
ROLES = ("working", "distractor", "drift_replacement")
DRIFT_AFTER_ROUND = 5


@dataclass(frozen=True)
class MemorySpec:
    """One memory to insert: ``key`` is unique across the catalog (``family:role[-n]``)."""

    key: str
    type: str
    title: str
    content: str
    role: str

    @property
    def family_key(self) -> str:
        return self.key.split(":", 1)[0]

    @property
    def text(self) -> str:
        """Title and content as one string (what an indexer would see)."""
        return f"{self.title}. {self.content}"


@dataclass(frozen=True)
class TaskFamily:
    """One recurring task with its working memory, distractors, drift replacement and queries."""

    key: str
    topic: str
    working: MemorySpec
    distractors: tuple[MemorySpec, ...]
    drift_replacement: MemorySpec
    queries: tuple[str, ...]

    @property
    def memories(self) -> tuple[MemorySpec, ...]:
        """The memories present from round 0: working first, then the distractors."""
        return (self.working, *self.distractors)

    @property
    def all_memories(self) -> tuple[MemorySpec, ...]:
        """Working, distractors and the drift replacement."""
        return (self.working, *self.distractors, self.drift_replacement)

    @property
    def n_distractors(self) -> int:
        return len(self.distractors)


@dataclass(frozen=True)
class InterferencePair:
    """Family ``a``'s working memory is pulled by ``queries`` (tasks of family ``b``) but fails there."""

    a: str
    b: str
    bridge: str
    queries: tuple[str, ...]
    rationale: str


# ---------------------------------------------------------------------------------------------
# Catalog. Each entry: key, topic, working, distractors, drift replacement, queries.
# A memory is (type, title, content). Keep the family's memories the same length and lead
# phrase; queries describe the task only.
# ---------------------------------------------------------------------------------------------

_M = tuple  # (type, title, content)


def _fam(key: str, topic: str, working: _M, distractors: Sequence[_M], drift: _M, queries: Sequence[str]) -> dict:
    return {
        "key": key,
        "topic": topic,
        "working": working,
        "distractors": tuple(distractors),
        "drift": drift,
        "queries": tuple(queries),
    }


_CATALOG: tuple[dict, ...] = (
    _fam(
        "billing-staging-deploy",
        "Deploy the billing service to the staging environment",
        ("procedure", "Billing staging deploy with Helm",
         "To deploy the billing service to staging, run `helm upgrade --install billing charts/billing -n billing-staging "
         "-f values/staging.yaml --atomic --timeout 10m`. With --atomic Helm rolls the release back by itself if the pods "
         "never become ready."),
        [
            ("procedure", "Billing staging deploy with the deploy script",
             "To deploy the billing service to staging, run `./scripts/deploy.sh billing staging` from the ops repo. The "
             "script applies the manifests in k8s/billing/ with kubectl apply and then restarts the billing deployment."),
            ("constraint", "Billing deploys go through a change ticket",
             "Deploys of the billing service need an approved change ticket first, then `helm upgrade billing charts/billing "
             "-n billing-prod -f values/prod.yaml --wait`; staging uses the same chart, namespace and values file."),
            ("lesson", "Billing staging deploy keeps the previous values",
             "When you deploy the billing service to staging with `helm upgrade billing charts/billing -n billing-staging`, "
             "pass --reuse-values so the staging overrides from the last release are kept instead of a values file."),
            ("procedure", "Billing staging deploy from rendered templates",
             "To deploy the billing service to staging, run `helm template billing charts/billing -f values/staging.yaml | "
             "kubectl apply -n billing-staging -f -`; rendering locally avoids stale Helm release state."),
        ],
        ("procedure", "Billing staging deploy through Argo CD",
         "To deploy the billing service to staging, bump the image tag in gitops/billing/staging/values.yaml and merge it, "
         "then run `argocd app sync billing-staging --prune` and wait until the app reports Healthy."),
        [
            "deploy the billing service to staging",
            "set up the staging deploy for the billing service",
            "push the latest billing build to the staging environment",
            "release the billing service on staging so QA can test it",
            "how do we ship billing changes to staging",
            "staging deployment of the billing service",
            "get the billing branch running in staging",
            "update billing in the staging cluster to the current version",
        ],
    ),
    _fam(
        "orders-db-migrations",
        "Apply database schema migrations for the orders API",
        ("procedure", "Orders schema migrations run from the release job",
         "Apply orders API schema migrations with `alembic -c orders/alembic.ini upgrade head` in the release job before "
         "the new pods start. Do not migrate on boot: several replicas race on the alembic_version table."),
        [
            ("procedure", "Orders schema migrations run at container start",
             "Orders API schema migrations are applied at container start: the entrypoint runs `alembic upgrade head` before "
             "gunicorn boots, so every deploy migrates the orders database without a separate step."),
            ("procedure", "Orders schema migrations with Flyway",
             "Apply orders API schema migrations with `flyway -configFiles=orders/flyway.conf migrate`. The versioned SQL "
             "scripts live in orders/db/migration and are named like V42__add_refund_column.sql."),
            ("lesson", "Orders schema migrations start with autogenerate",
             "Before applying orders API schema migrations, run `alembic revision --autogenerate` against the production "
             "database so pending model changes are captured, then run `alembic upgrade head`."),
        ],
        ("procedure", "Orders schema migrations as a Helm hook",
         "Orders API schema migrations now run in the migrate-orders Kubernetes Job, a Helm pre-upgrade hook that calls "
         "`alembic upgrade head`; trigger it with `make migrate ENV=prod` instead of running alembic by hand."),
        [
            "run the database migrations for the orders api",
            "apply the pending schema changes to the orders database",
            "migrate the orders schema before the release",
            "the orders api release adds columns, update the database schema",
            "how are orders api migrations applied",
            "upgrade the orders database to the latest schema",
            "schema migration step for the orders service deploy",
            "bring the orders database schema up to date",
        ],
    ),
    _fam(
        "flaky-integration-tests",
        "Deal with flaky integration tests that fail the CI pipeline",
        ("lesson", "Flaky integration tests get targeted reruns",
         "Mark a flaky integration test with `@pytest.mark.flaky(reruns=2, reruns_delay=5)` from pytest-rerunfailures and "
         "file a ticket labelled flaky-test. Rerunning the whole CI pipeline hides real regressions."),
        [
            ("lesson", "Flaky integration tests get a pipeline rerun",
             "When integration tests are flaky in CI, press 'Re-run failed jobs' up to three times before looking deeper; "
             "most failures on the shared runners are infrastructure noise."),
            ("procedure", "Flaky integration tests go to a quarantine file",
             "Quarantine a flaky integration test by adding its node id to tests/quarantine.txt; the CI step runs `pytest "
             "--deselect-from tests/quarantine.txt` so the test is skipped until it is fixed."),
            ("lesson", "Flaky integration tests come from test order",
             "Flaky integration tests in CI usually depend on test order; run the suite with `pytest -p no:randomly` so the "
             "order is fixed and the intermittent failures stop showing up."),
            ("lesson", "Flaky integration tests need longer timeouts",
             "Flaky integration tests in CI are nearly always timing problems; raise `timeout = 300` in pytest.ini and add "
             "`time.sleep(2)` before assertions that wait on the queue."),
        ],
        ("procedure", "Flaky integration tests go to the nightly flake job",
         "Mark a flaky integration test with `@pytest.mark.quarantine`; the main CI run skips it and the nightly job runs "
         "`pytest -m quarantine --count 20` (pytest-repeat) to confirm a fix before unmarking."),
        [
            "integration tests fail randomly in CI",
            "deal with a flaky integration test that breaks the pipeline",
            "the integration suite passes locally but fails intermittently in CI",
            "CI is red again because of an unreliable integration test",
            "what to do about flaky tests in the integration suite",
            "an integration test fails one run in five on CI",
            "stop flaky integration tests from blocking merges",
            "handle intermittent integration test failures in the CI pipeline",
        ],
    ),
    _fam(
        "npm-ci-install",
        "Install the frontend's JavaScript dependencies in CI reproducibly",
        ("procedure", "Frontend CI install with npm ci",
         "In CI, install the frontend's JavaScript dependencies with `npm ci`: it removes node_modules, installs exactly "
         "what package-lock.json pins and fails when the lockfile and package.json disagree."),
        [
            ("procedure", "Frontend CI install with npm install",
             "In CI, install the frontend's JavaScript dependencies with `npm install --no-audit --prefer-offline`; it reuses "
             "the cached node_modules and refreshes package-lock.json if versions drifted."),
            ("procedure", "Frontend CI install with yarn",
             "In CI, install the frontend's JavaScript dependencies with `yarn install --frozen-lockfile` so yarn.lock is "
             "never rewritten and the job fails if the lockfile needs changes."),
            ("lesson", "Frontend CI install needs legacy peer deps",
             "In CI, install the frontend's JavaScript dependencies with `npm ci --legacy-peer-deps`; without the flag the "
             "install stops on peer dependency conflicts recorded in package-lock.json."),
        ],
        ("procedure", "Frontend CI install with pnpm",
         "In CI, install the frontend's JavaScript dependencies with `corepack enable` followed by `pnpm install "
         "--frozen-lockfile`; it fails when pnpm-lock.yaml and package.json disagree."),
        [
            "install the frontend dependencies in the CI job",
            "set up the dependency install step for the frontend pipeline",
            "make the frontend CI install reproducible",
            "CI installs different JavaScript package versions than my laptop",
            "which command installs node modules for the frontend build in CI",
            "frontend pipeline dependency installation",
            "install JavaScript packages for the web frontend on the build server",
            "the frontend CI job needs its node dependencies installed",
        ],
    ),
    _fam(
        "npm-add-dependency",
        "Add a new npm package to the frontend",
        ("procedure", "Adding a frontend package updates the lockfile",
         "To add a package to the frontend, run `npm install <pkg> --save-exact` locally and commit package.json and "
         "package-lock.json together in the same pull request; CI then verifies the lockfile."),
        [
            ("procedure", "Adding a frontend package by editing package.json",
             "To add a package to the frontend, add it to dependencies in package.json by hand and push; the CI install step "
             "resolves it and regenerates package-lock.json for you."),
            ("procedure", "Adding a frontend package without touching the lockfile",
             "To add a package to the frontend, run `npm install <pkg> --package-lock=false` so package-lock.json stays "
             "untouched and reviewers only see the package.json change."),
        ],
        ("procedure", "Adding a frontend package with pnpm",
         "To add a package to the frontend, run `pnpm add <pkg> --save-exact` and commit package.json with the updated "
         "pnpm-lock.yaml in the same pull request."),
        [
            "add a new npm package to the frontend",
            "the frontend needs a new library, add the dependency",
            "add date-fns as a dependency of the web frontend",
            "introduce a third-party package in the frontend code",
            "how do I add a dependency to the frontend project",
            "bring in a new JavaScript library for the frontend",
            "use an extra npm library in the frontend app",
            "frontend dependency addition for a new feature",
        ],
    ),
    _fam(
        "docker-build-cache",
        "Speed up the API Docker image build in CI",
        ("procedure", "API image CI builds use the registry cache",
         "Speed up the api image build in CI with BuildKit's registry cache: `docker buildx build --cache-from "
         "type=registry,ref=ghcr.io/acme/api:buildcache --cache-to type=registry,ref=ghcr.io/acme/api:buildcache,mode=max "
         "--push .`"),
        [
            ("procedure", "API image CI builds reuse the previous image",
             "Speed up the api image build in CI by pulling ghcr.io/acme/api:latest first and running `docker build "
             "--cache-from ghcr.io/acme/api:latest -t ghcr.io/acme/api:$SHA .` so matching layers are reused."),
            ("lesson", "API image CI builds skip the layer cache",
             "Speed up the api image build in CI by avoiding stale-layer reruns: build with `DOCKER_BUILDKIT=1 docker build "
             "--no-cache --pull .` so every build starts from a fresh base image."),
            ("procedure", "API image CI builds use the GitHub Actions cache",
             "Speed up the api image build in CI with the GitHub Actions cache backend: `docker buildx build --cache-from "
             "type=gha --cache-to type=gha,mode=max --push .`; it also works on the self-hosted GitLab runners."),
        ],
        ("procedure", "API image CI builds use the remote builder",
         "Speed up the api image build in CI with the shared BuildKit builder: `docker buildx build --builder ci-remote "
         "--push .`; the remote builder keeps its layer cache between jobs, so no cache flags are needed."),
        [
            "the docker build of the api image is slow in CI",
            "speed up docker image builds in the pipeline",
            "CI rebuilds every docker layer of the api image on each run",
            "make the api container build faster on the build server",
            "reduce the time the pipeline spends building the api docker image",
            "docker layer caching for the api image in CI",
            "api image build takes 15 minutes in CI",
            "how to reuse docker build layers between CI runs",
        ],
    ),
    _fam(
        "docker-image-size",
        "Shrink the Python service Docker image",
        ("procedure", "Python service image built in two stages",
         "Shrink the Python service image with a multi-stage Dockerfile: build wheels in python:3.12 with `pip wheel -w "
         "/wheels -r requirements.txt`, then install them in python:3.12-slim with `pip install --no-cache-dir /wheels/*`."),
        [
            ("procedure", "Python service image on Alpine",
             "Shrink the Python service image by switching the base to python:3.12-alpine and adding `apk add build-base` "
             "for packages that compile; musl images are much smaller than Debian ones."),
            ("lesson", "Python service image cleaned in the last layer",
             "Shrink the Python service image by ending the Dockerfile with `RUN apt-get clean && rm -rf /root/.cache "
             "/var/lib/apt/lists/*`; removing caches in the final layer cuts the pushed image size."),
        ],
        ("procedure", "Python service image with uv and distroless",
         "Shrink the Python service image with uv: run `uv sync --frozen --no-dev` in the builder stage, then copy only "
         ".venv into gcr.io/distroless/python3-debian12 for the final stage."),
        [
            "the python service docker image is too big",
            "shrink the docker image of the python service",
            "reduce the size of our python container image",
            "the python image is 1.8 GB, make it smaller",
            "slim down the Dockerfile for the python service",
            "cut the pull time of the python service image by reducing its size",
            "smaller docker image for the python api",
            "python container image size optimization",
        ],
    ),
    _fam(
        "k8s-crashloop",
        "Debug a pod stuck in CrashLoopBackOff",
        ("procedure", "CrashLoopBackOff: read the previous container logs",
         "For a pod in CrashLoopBackOff, read the crashed container's output with `kubectl logs <pod> --previous` and check "
         "Last State in `kubectl describe pod <pod>`: exit code 137 means OOMKilled, 1 means the app failed at startup."),
        [
            ("procedure", "CrashLoopBackOff: follow the pod logs",
             "For a pod in CrashLoopBackOff, run `kubectl logs <pod> -f` and wait for the next restart; the current container "
             "prints the same startup error before it crashes again."),
            ("lesson", "CrashLoopBackOff: delete the pod",
             "For a pod in CrashLoopBackOff, run `kubectl delete pod <pod>` so the deployment schedules a fresh one on another "
             "node; the backoff timer resets and the pod usually starts."),
            ("procedure", "CrashLoopBackOff: exec into the container",
             "For a pod in CrashLoopBackOff, open a shell with `kubectl exec -it <pod> -- sh` and inspect the config files and "
             "environment variables to find why the app failed at startup."),
            ("procedure", "CrashLoopBackOff: read the namespace events",
             "For a pod in CrashLoopBackOff, run `kubectl get events -n <ns> --sort-by=.lastTimestamp`; the event stream "
             "carries the application's error output from each failed start."),
        ],
        ("procedure", "CrashLoopBackOff: query the logs in Grafana",
         "For a pod in CrashLoopBackOff, kubectl logs is blocked by the restricted RBAC role; query `{namespace=\"<ns>\", "
         "pod=\"<pod>\"}` in Grafana Explore against Loki to read the crashed container's output."),
        [
            "a pod is stuck in CrashLoopBackOff",
            "debug the crashing pod in the payments namespace",
            "the new deployment's pods keep restarting",
            "find out why a kubernetes pod crashes on start",
            "pod status shows CrashLoopBackOff after the release",
            "troubleshoot a container that restarts over and over",
            "investigate the crash loop of the worker pod",
            "kubernetes pod keeps failing and backing off",
        ],
    ),
    _fam(
        "k8s-oom",
        "Stop pods from being OOMKilled",
        ("procedure", "OOMKilled pods: size memory from observed usage",
         "When pods are OOMKilled, measure usage with `kubectl top pod --containers`, set the memory request equal to the "
         "limit at about 1.3x the observed peak, and for JVM services add `-XX:MaxRAMPercentage=75`."),
        [
            ("lesson", "OOMKilled pods: drop the memory limit",
             "When pods are OOMKilled, remove the memory limit from the container spec and keep only the request; the pod can "
             "then use whatever memory the node has free."),
            ("lesson", "OOMKilled pods: raise only the request",
             "When pods are OOMKilled, raise the memory request and leave the limit as it is; the limit is a soft ceiling that "
             "the kubelet lets containers exceed for short bursts."),
            ("procedure", "OOMKilled pods: match the JVM heap to the limit",
             "When pods of JVM services are OOMKilled, set `-Xmx` to the full container memory limit so the heap can use all "
             "of it and the garbage collector runs less often."),
        ],
        ("procedure", "OOMKilled pods: apply the VPA recommendation",
         "When pods are OOMKilled, read the Vertical Pod Autoscaler recommendation with `kubectl describe vpa <name>` and copy "
         "its memory target into the chart's resources; the VPA runs in recommend-only mode."),
        [
            "pods are getting OOMKilled",
            "the worker pods run out of memory and get killed",
            "fix memory settings for a service that keeps being OOM killed",
            "kubernetes kills the container for exceeding memory",
            "set the right memory resources for the api pods",
            "the JVM service is killed by the kernel OOM killer in the cluster",
            "memory usage of the pods goes over what is allowed",
            "stop containers from being killed for using too much memory",
        ],
    ),
    _fam(
        "k8s-config-rollout",
        "Get running pods to use a changed ConfigMap",
        ("procedure", "ConfigMap change needs a rollout restart",
         "After changing a ConfigMap that pods read as environment variables, run `kubectl rollout restart "
         "deployment/<name>`; env vars are read only when a container starts, so running pods keep the old values."),
        [
            ("lesson", "ConfigMap change is picked up by the kubelet",
             "After changing a ConfigMap, running pods pick up the new values within about a minute because the kubelet syncs "
             "ConfigMaps; environment variables refresh without a restart."),
            ("procedure", "ConfigMap change applied with force",
             "After changing a ConfigMap, run `kubectl apply -f configmap.yaml --force` so the API server pushes the new values "
             "into the environment variables of running pods."),
            ("procedure", "ConfigMap change by scaling to zero",
             "After changing a ConfigMap, run `kubectl scale deployment/<name> --replicas=0` and then scale back up; the pods "
             "start again and read the new environment variables."),
        ],
        ("procedure", "ConfigMap changes through the Kustomize generator",
         "ConfigMaps now come from Kustomize's configMapGenerator: edit config/app.env and run `kubectl apply -k "
         "overlays/prod`; the new name hash changes the pod template, so the deployment rolls by itself."),
        [
            "I changed a configmap but the pods still use the old values",
            "apply an updated configmap to the running deployment",
            "get a configuration change into the pods",
            "new config values are not picked up by the service",
            "update environment configuration for a kubernetes deployment",
            "the app still reads the previous setting after editing the configmap",
            "push a config change to pods without a new image",
            "make the deployment use the edited configmap",
        ],
    ),
    _fam(
        "k8s-rollback",
        "Roll back a bad Kubernetes release",
        ("procedure", "Rolling back a bad release to a known revision",
         "To roll back a bad release, find the last good revision with `kubectl rollout history deployment/<name>`, run "
         "`kubectl rollout undo deployment/<name> --to-revision=<n>`, and pause the deploy pipeline until the fix lands."),
        [
            ("procedure", "Rolling back a bad release by redeploying",
             "To roll back a bad release, re-run the deploy job of the previous pipeline; it rebuilds the image from the older "
             "commit and applies the manifests to the deployment again."),
            ("procedure", "Rolling back a bad release by editing the image",
             "To roll back a bad release, run `kubectl edit deployment/<name>` and set the image tag back to the previous one; "
             "the edit stays in place on later deploys."),
        ],
        ("procedure", "Rolling back a bad release in Argo CD",
         "To roll back a bad release, disable auto-sync and run `argocd app rollback <app> <history-id>`; with auto-sync on, "
         "Argo CD re-applies the bad commit from git within minutes."),
        [
            "roll back the bad release of the checkout service",
            "the latest deploy broke checkout, go back to the previous version",
            "revert a kubernetes deployment to the last good release",
            "undo the release that just went out",
            "restore the previous version of the service after a failed deploy",
            "production is broken after the release, roll it back",
            "return the deployment to the earlier image",
            "emergency rollback of a kubernetes service",
        ],
    ),
    _fam(
        "git-update-branch",
        "Update a feature branch with the latest main",
        ("procedure", "Feature branch update by rebasing on origin/main",
         "To bring a feature branch up to date with main, run `git fetch origin` and `git rebase origin/main`, resolve "
         "conflicts, then `git push --force-with-lease` so a teammate's newer commits are never overwritten."),
        [
            ("procedure", "Feature branch update by merging main",
             "To bring a feature branch up to date with main, run `git pull origin main` on the branch and push; the merge "
             "commit records the update and no force push is needed."),
            ("procedure", "Feature branch update by rebasing on local main",
             "To bring a feature branch up to date with main, run `git rebase main` on the branch and then `git push --force`; "
             "the local main branch is recent enough for a rebase."),
            ("procedure", "Feature branch update from the pull request page",
             "To bring a feature branch up to date with main, press 'Update branch' on the pull request; GitHub rebases the "
             "branch on main and keeps the signed commits intact."),
        ],
        ("procedure", "Feature branch update through the merge queue",
         "Main now has a merge queue: do not bring a feature branch up to date with main by hand; run `gh pr merge --auto "
         "--squash` and the queue rebases and tests it against main."),
        [
            "my feature branch is behind main, update it",
            "bring the branch up to date with the latest main",
            "sync my pull request branch with main before review",
            "main moved on, get its changes into my feature branch",
            "update the feature branch so the PR shows no conflicts with main",
            "pick up the latest commits from main on my branch",
            "refresh a stale feature branch against main",
            "the PR says the branch is out of date with main",
        ],
    ),
    _fam(
        "git-undo-pushed-commit",
        "Undo a bad commit already pushed to main",
        ("procedure", "Pushed bad commit on main is reverted",
         "To undo a bad commit already pushed to main, run `git revert <sha>` on a new branch and merge it as a normal pull "
         "request; history stays intact for everyone who pulled main."),
        [
            ("procedure", "Pushed bad commit on main is reset away",
             "To undo a bad commit already pushed to main, run `git reset --hard HEAD~1` on main and `git push --force`; "
             "admins may bypass branch protection for this."),
            ("procedure", "Pushed bad commit on main is amended",
             "To undo a bad commit already pushed to main, check out main, fix the files, run `git commit --amend --no-edit` "
             "and push; the bad commit is replaced in place."),
            ("lesson", "Pushed bad merge on main is reverted without a parent",
             "To undo a bad merge commit already pushed to main, run `git revert <sha>` with no other options; git picks the "
             "mainline parent of the merge on its own."),
        ],
        ("procedure", "Pushed bad commit on main is reverted through the queue",
         "To undo a bad commit already pushed to main, run `gh pr revert <number>`; it opens a revert pull request that goes "
         "through the merge queue like any other change."),
        [
            "undo a commit that is already on main",
            "a broken commit got pushed to main, take it back",
            "remove the bad change I pushed to the main branch",
            "I pushed a mistake to main, how do I back it out",
            "get rid of a pushed commit on the shared branch",
            "main has a commit that breaks the build, undo it",
            "cancel the last commit pushed to main",
            "back out a bad change from main safely",
        ],
    ),
    _fam(
        "python-deps-lock",
        "Pin and lock a service's Python dependencies",
        ("procedure", "Python dependency lock with pip-compile hashes",
         "Lock a service's Python dependencies with pip-tools: list direct ones in requirements.in, run `pip-compile "
         "--generate-hashes -o requirements.txt requirements.in`, and install with `pip install --require-hashes -r "
         "requirements.txt`."),
        [
            ("procedure", "Python dependency lock with pip freeze",
             "Lock a service's Python dependencies by running `pip freeze > requirements.txt` inside your development "
             "virtualenv and committing the file; the Docker build runs `pip install -r requirements.txt`."),
            ("procedure", "Python dependency lock with Poetry export",
             "Lock a service's Python dependencies with Poetry: run `poetry lock --no-update`, then `poetry export -f "
             "requirements.txt -o requirements.txt` for the Docker build to install."),
            ("procedure", "Python dependency lock with pip-compile",
             "Lock a service's Python dependencies with pip-tools: run `pip-compile requirements.in` to write "
             "requirements.txt, and install with `pip install --require-hashes -r requirements.txt` in Docker."),
            ("lesson", "Python dependency lock in setup.py",
             "Lock a service's Python dependencies by pinning exact versions with == in install_requires of setup.py; pip "
             "then installs identical versions on every build."),
        ],
        ("procedure", "Python dependency lock with uv",
         "Lock a service's Python dependencies with uv: declare them in pyproject.toml, run `uv lock` to write uv.lock, and "
         "install in the Docker build with `uv sync --frozen --no-dev`."),
        [
            "pin the python dependencies of the service",
            "lock python package versions so builds are reproducible",
            "a transitive python dependency changed and broke the build",
            "set up a lockfile for the service's python requirements",
            "make the python requirements deterministic",
            "keep python package versions stable between builds",
            "manage python dependency versions for the service",
            "reproducible python installs for the service image",
        ],
    ),
    _fam(
        "github-api-rate-limit",
        "Handle GitHub API rate limiting in the sync client",
        ("lesson", "GitHub sync client honours Retry-After",
         "When the GitHub API answers the sync client with 403 or 429 and a Retry-After header, sleep that many seconds; if "
         "x-ratelimit-remaining is 0, wait until the x-ratelimit-reset time before retrying."),
        [
            ("lesson", "GitHub sync client retries quickly",
             "When the GitHub API rate limits the sync client, retry the request right away up to five times with a fixed one "
             "second delay; the limit usually clears within seconds."),
            ("lesson", "GitHub sync client falls back to anonymous calls",
             "When the GitHub API rate limits the sync client, switch the request to unauthenticated calls, which have their "
             "own separate hourly quota, until the token's limit resets."),
            ("constraint", "GitHub sync client treats 403 as fatal",
             "The GitHub API signals rate limits only with 429 Too Many Requests; the sync client treats any 403 as a "
             "permissions error and fails the job without retrying."),
        ],
        ("lesson", "GitHub sync client uses conditional requests",
         "The sync client now sends If-None-Match with the stored ETag on every GitHub API request; 304 Not Modified answers "
         "do not count against the rate limit, so keep ETags in the cache table."),
        [
            "the github sync client hits rate limits",
            "handle rate limiting from the GitHub API",
            "the repository sync job fails with too many requests from GitHub",
            "GitHub API calls start failing during the nightly sync",
            "make the github client back off when it is throttled",
            "sync client errors after a burst of GitHub API calls",
            "deal with GitHub API quota errors in the sync",
            "throttled by GitHub while syncing repositories",
        ],
    ),
    _fam(
        "jwt-gateway-validation",
        "Validate JWT access tokens in the API gateway",
        ("procedure", "Gateway JWT validation against the JWKS",
         "Validate JWT access tokens in the gateway against the issuer's JWKS from /.well-known/jwks.json, pin algorithms to "
         "RS256, check the aud and iss claims, and allow 60 seconds of leeway on exp."),
        [
            ("procedure", "Gateway JWT validation with the shared secret",
             "Validate JWT access tokens in the gateway with the shared HS256 secret from JWT_SECRET: `jwt.decode(token, "
             "secret, algorithms=['HS256'])` checks the signature and exp."),
            ("lesson", "Gateway JWT validation of the payload",
             "Validate JWT access tokens in the gateway by decoding the payload and checking exp and aud; the identity "
             "provider already verified the signature when it issued the token."),
            ("procedure", "Gateway JWT validation with the header algorithm",
             "Validate JWT access tokens in the gateway with the issuer's JWKS, taking the algorithm from the token header so "
             "RS256 and HS256 tokens are both accepted."),
            ("procedure", "Gateway JWT validation with keys cached at startup",
             "Validate JWT access tokens in the gateway with the issuer's JWKS fetched once at startup and cached for the "
             "process lifetime; signing keys at the identity provider do not change."),
        ],
        ("procedure", "Gateway token validation by introspection",
         "Validate access tokens in the gateway through the identity provider's introspection endpoint: POST the token to "
         "/oauth2/introspect with the gateway's client credentials and accept only active=true."),
        [
            "validate access tokens in the API gateway",
            "check incoming JWTs before forwarding requests",
            "the gateway must reject forged tokens",
            "implement token verification for the gateway",
            "authenticate API requests with bearer tokens at the gateway",
            "verify JWT signatures on incoming requests",
            "gateway auth middleware for access tokens",
            "secure the gateway so only valid tokens get through",
        ],
    ),
    _fam(
        "crm-oauth-refresh",
        "Keep the CRM API client authenticated with OAuth",
        ("procedure", "CRM client refreshes early and stores the rotated token",
         "Keep the CRM client's OAuth access token fresh by refreshing it 5 minutes before expires_in runs out with "
         "grant_type=refresh_token, and store the rotated refresh token from the response; the old one is revoked."),
        [
            ("procedure", "CRM client requests a token on 401",
             "Keep the CRM client authenticated by requesting a new OAuth access token with the client_credentials grant "
             "whenever a call returns 401; server integrations need no refresh token."),
            ("lesson", "CRM client reuses the first refresh token",
             "Keep the CRM client's OAuth access token fresh with grant_type=refresh_token, always sending the refresh token "
             "from the first login; it stays valid for 90 days."),
            ("procedure", "CRM client uses a personal access token",
             "Keep the CRM client authenticated with a long-lived personal access token from the CRM admin console stored in "
             "CRM_TOKEN, so no OAuth refresh logic is needed."),
        ],
        ("procedure", "CRM client uses a JWT bearer assertion",
         "Keep the CRM client authenticated with a signed JWT assertion (grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer) "
         "using the key in crm-sa.pem; request a new OAuth access token each hour instead of refreshing."),
        [
            "keep the CRM API client logged in",
            "the CRM integration loses authentication after an hour",
            "calls to the CRM API start returning 401 after a while",
            "handle OAuth token expiry in the CRM client",
            "the CRM sync job fails with unauthorized errors overnight",
            "maintain a valid session for the CRM API integration",
            "CRM client authentication keeps expiring",
            "set up token handling for the CRM API client",
        ],
    ),
    _fam(
        "product-cache-invalidation",
        "Invalidate cached product pages after a catalog update",
        ("procedure", "Product page cache busted with a version key",
         "After a catalog update, invalidate cached product pages by running `INCR catalog:version`; page keys embed the "
         "version (product:{id}:v{version}), so stale entries are never read and expire through their TTL."),
        [
            ("procedure", "Product page cache cleared with a key scan",
             "After a catalog update, invalidate cached product pages with `redis-cli --scan --pattern 'product:*' | xargs "
             "redis-cli del`; it clears every product key in one pass."),
            ("procedure", "Product page cache flushed",
             "After a catalog update, invalidate cached product pages by running `FLUSHDB` on the cache Redis; pages are "
             "rebuilt on the next request and the database holds nothing else."),
            ("lesson", "Product page cache expires by TTL",
             "After a catalog update, cached product pages refresh on their own: every product key is written with a 24 hour "
             "TTL, so no invalidation step is needed."),
        ],
        ("procedure", "Product page cache purged at the CDN",
         "Product pages are now cached at the CDN; after a catalog update, invalidate cached product pages by surrogate key "
         "with `fastly purge --key product-<id>` instead of touching Redis."),
        [
            "customers still see old product data after the catalog update",
            "invalidate cached product pages",
            "clear the product cache after changing prices",
            "stale product pages are served from the cache",
            "refresh cached pages after editing the catalog",
            "make catalog changes show up immediately on product pages",
            "cache invalidation for product pages in redis",
            "product page cache is out of date after an import",
        ],
    ),
    _fam(
        "python-json-logging",
        "Emit structured JSON logs from the Python services",
        ("procedure", "Service JSON logs via structlog",
         "Emit JSON logs from the Python services with structlog: chain `add_log_level`, `TimeStamper(fmt='iso')` and "
         "`JSONRenderer()`, and route stdlib logging through `structlog.stdlib.ProcessorFormatter` so library logs are JSON "
         "too."),
        [
            ("lesson", "Service JSON logs via json.dumps",
             "Emit JSON logs from the Python services by calling `logger.info(json.dumps({...}))` with the fields you need; "
             "the log shipper parses any line that is valid JSON."),
            ("constraint", "Service JSON logs via LOG_FORMAT",
             "Emit JSON logs from the Python services by setting `LOG_FORMAT=json` on the deployment; the base image's "
             "logging.conf switches every handler to the JSON formatter at startup."),
            ("procedure", "Service JSON logs via the console renderer",
             "Emit JSON logs from the Python services with structlog's `ConsoleRenderer(colors=False)` as the last processor; "
             "the key=value output is indexed as structured fields by the pipeline."),
        ],
        ("procedure", "Service logs via OpenTelemetry",
         "Emit logs from the Python services through OpenTelemetry: call `configure_logging()` from acme-otel 2.x to install "
         "the OTLP log exporter; JSON on stdout is no longer collected."),
        [
            "set up structured logging in the python service",
            "the log pipeline cannot parse our service logs",
            "emit logs as JSON from the python app",
            "make the service logs searchable by field in the log platform",
            "configure logging output format for the python services",
            "structured log lines for the new python microservice",
            "our python service logs are plain text, fix the format",
            "logging setup for a new python service",
        ],
    ),
    _fam(
        "debug-log-level",
        "Turn on debug logging for one production service temporarily",
        ("procedure", "Temporary debug logging via kubectl set env",
         "To get debug logs from one production service, run `kubectl set env deployment/<name> LOG_LEVEL=DEBUG`, collect "
         "what you need, and set it back within an hour; debug volume is billed per GB of ingestion."),
        [
            ("procedure", "Temporary debug logging via logging.yaml",
             "To get debug logs from one production service, change the root level in logging.yaml to DEBUG, merge, and wait "
             "for the next release; runtime changes get overwritten."),
            ("procedure", "Temporary debug logging via the admin endpoint",
             "To get debug logs from one production service, call `POST /admin/loglevel?level=debug` on one of its pods; the "
             "change propagates to every replica within seconds."),
        ],
        ("procedure", "Temporary debug logging via a feature flag",
         "To get debug logs from one production service, switch its log-level-<service> flag to debug in the flags UI; pods "
         "poll the flag every 30 seconds, so nothing restarts."),
        [
            "turn on debug logging for the invoices service in production",
            "I need more verbose logs from one production service",
            "temporarily raise the log level of a live service",
            "enable debug output for a service to investigate a bug in prod",
            "get detailed logs from a production deployment for a while",
            "switch a production service to debug log level",
            "increase logging verbosity on a running service",
            "collect debug logs from prod for one service",
        ],
    ),
    _fam(
        "aws-cli-account",
        "Run AWS CLI commands against the right account",
        ("procedure", "AWS CLI account via SSO profiles",
         "Run AWS CLI commands against the right account with SSO profiles: `aws sso login --profile acme-staging` once a "
         "day, then pass `--profile acme-staging` or export AWS_PROFILE; verify with `aws sts get-caller-identity`."),
        [
            ("procedure", "AWS CLI account via access keys",
             "Run AWS CLI commands against the right account with access keys: put aws_access_key_id and "
             "aws_secret_access_key for each account in ~/.aws/credentials and switch with AWS_PROFILE."),
            ("procedure", "AWS CLI account via assume-role",
             "Run AWS CLI commands against the right account by assuming a role from your IAM user: `aws sts assume-role "
             "--role-arn arn:aws:iam::<account>:role/Admin`, then export the returned keys."),
            ("lesson", "AWS CLI account via a single SSO login",
             "Run AWS CLI commands against the right account after a plain `aws sso login`; one login covers every account "
             "and the CLI picks the account from the resource ARN."),
        ],
        ("procedure", "AWS CLI account via Granted",
         "Run AWS CLI commands against the right account with Granted: `assume acme-staging` exports short-lived credentials "
         "into the shell for 8 hours, so commands need no profile flag."),
        [
            "run aws cli commands against the staging account",
            "the aws cli is talking to the wrong account",
            "switch between AWS accounts on the command line",
            "log in to AWS from the terminal for the staging environment",
            "aws cli credentials for the staging account",
            "which account am I using with the aws command",
            "set up local AWS access for the staging account",
            "terminal access to our AWS accounts",
        ],
    ),
    _fam(
        "gcp-actions-auth",
        "Authenticate GitHub Actions workflows to Google Cloud",
        ("procedure", "GitHub Actions to GCP via workload identity federation",
         "Authenticate GitHub Actions to Google Cloud with workload identity federation: `google-github-actions/auth@v2` "
         "with the workload_identity_provider and service_account inputs, plus `permissions: id-token: write` on the job."),
        [
            ("procedure", "GitHub Actions to GCP via a key secret",
             "Authenticate GitHub Actions to Google Cloud with a service account JSON key stored in the GCP_SA_KEY secret and "
             "passed as credentials_json to `google-github-actions/auth@v2`."),
            ("procedure", "GitHub Actions to GCP via setup-gcloud",
             "Authenticate GitHub Actions to Google Cloud with `google-github-actions/setup-gcloud@v0` and its "
             "service_account_key input; the action logs gcloud in for the later steps."),
            ("lesson", "GitHub Actions to GCP with default permissions",
             "Authenticate GitHub Actions to Google Cloud with workload identity federation through "
             "`google-github-actions/auth@v2`; the default `permissions: contents: read` is enough for the OIDC token."),
        ],
        ("procedure", "GitHub Actions to GCP via the runner's service account",
         "Authenticate GitHub Actions to Google Cloud through the self-hosted runners' attached service account: run the job "
         "on `runs-on: [self-hosted, gcp]` and skip the auth action entirely."),
        [
            "authenticate a github actions workflow to google cloud",
            "the deploy workflow needs gcloud access",
            "log in to GCP from GitHub Actions",
            "give the CI workflow permission to deploy to google cloud",
            "gcloud commands fail in the workflow with no credentials",
            "connect GitHub Actions to our GCP project",
            "google cloud credentials for the CI pipeline",
            "set up GCP auth in the github workflow",
        ],
    ),
    _fam(
        "terraform-state-lock",
        "Recover from a stuck Terraform state lock",
        ("procedure", "Terraform lock released with force-unlock",
         "If Terraform reports the state is locked, first confirm no apply for that workspace is still running in CI, then run "
         "`terraform force-unlock <LOCK_ID>` with the ID shown in the error."),
        [
            ("procedure", "Terraform lock skipped for one apply",
             "If Terraform reports the state is locked, run `terraform apply -lock=false`; the lock is stale, and skipping it "
             "for a single apply is safe."),
            ("procedure", "Terraform lock deleted in DynamoDB",
             "If Terraform reports the state is locked, delete the lock item from the terraform-locks DynamoDB table in the "
             "console; force-unlock does not work with the S3 backend."),
            ("lesson", "Terraform lock waited out",
             "If Terraform reports the state is locked, rerun with `-lock-timeout=30m`; Terraform waits and takes the lock as "
             "soon as the stale one expires."),
        ],
        ("procedure", "Terraform lock released in Terraform Cloud",
         "Terraform state now lives in Terraform Cloud: if a workspace is locked, unlock it under Settings > Locking or POST to "
         "/api/v2/workspaces/<id>/actions/force-unlock with a team token."),
        [
            "terraform says the state is locked",
            "terraform plan fails with error acquiring the state lock",
            "a stuck terraform lock blocks the infrastructure change",
            "terraform cannot proceed because of a lock",
            "clear the terraform state lock left by a cancelled job",
            "infrastructure pipeline blocked on terraform locking",
            "release the terraform lock on the network workspace",
            "state lock error when running terraform",
        ],
    ),
    _fam(
        "vite-env-vars",
        "Expose environment variables to the Vite frontend build",
        ("fact", "Frontend env vars need the VITE_ prefix",
         "Only variables prefixed with VITE_ reach the Vite frontend bundle: define VITE_API_URL in .env.production and read "
         "`import.meta.env.VITE_API_URL`; values are inlined at build time, so rebuild after changing one."),
        [
            ("fact", "Frontend env vars need the REACT_APP_ prefix",
             "Expose environment variables to the frontend bundle by naming them REACT_APP_API_URL and reading "
             "`process.env.REACT_APP_API_URL`; the build inlines them at build time."),
            ("lesson", "Frontend env vars read at runtime",
             "Expose environment variables to the Vite frontend by setting them on the container at runtime; "
             "`import.meta.env.API_URL` reads them when the page loads, no rebuild needed."),
            ("procedure", "Frontend env vars via define",
             "Expose environment variables to the Vite frontend with `define: { 'process.env': process.env }` in "
             "vite.config.ts so every variable from the build machine is available."),
        ],
        ("procedure", "Frontend config rendered at container start",
         "Expose configuration to the Vite frontend at runtime: the nginx entrypoint renders /config.js from environment "
         "variables and the app reads `window.__APP_CONFIG__.apiUrl`, so one bundle serves every environment."),
        [
            "pass the API url to the frontend build",
            "the frontend cannot read an environment variable",
            "configure environment variables for the vite app",
            "the web app needs a different backend url in production",
            "use env vars in the frontend code",
            "frontend build ignores the variable I set in the environment",
            "make a config value available to the browser bundle",
            "environment-specific settings for the frontend",
        ],
    ),
    _fam(
        "frontend-bundle-size",
        "Reduce the web app's production JavaScript bundle",
        ("procedure", "Web app bundle cut by lazy routes",
         "To cut the web app's production bundle, find heavy chunks with `npx vite-bundle-visualizer`, lazy-load routes with "
         "`React.lazy(() => import('./pages/Reports'))`, and replace moment with date-fns."),
        [
            ("lesson", "Web app bundle warning limit raised",
             "To cut the web app's production bundle, raise `build.chunkSizeWarningLimit` to 2000 in vite.config.ts; the large "
             "chunk warning was the only problem Vite reported."),
            ("procedure", "Web app bundle split with webpack",
             "To cut the web app's production bundle, run `npx webpack-bundle-analyzer dist/stats.json` and enable "
             "`optimization.splitChunks` in webpack.config.js for the vendor chunk."),
            ("lesson", "Web app bundle trimmed by named lodash imports",
             "To cut the web app's production bundle, import lodash helpers as `import { debounce } from 'lodash'`; tree "
             "shaking then removes every function you do not use."),
        ],
        ("procedure", "Web app bundle held by a size budget",
         "To cut the web app's production bundle, run `npx size-limit`; .size-limit.json caps the main chunk at 250 kB gzip in "
         "CI, and `size-limit --why` shows what grew."),
        [
            "the web app's javascript bundle is too large",
            "reduce the production bundle size of the frontend",
            "the frontend loads slowly because of a huge bundle",
            "shrink the main JavaScript chunk of the web app",
            "make the web app download less javascript",
            "frontend bundle grew to 3 MB, cut it down",
            "optimize the size of the built frontend assets",
            "vite build produces a very large chunk",
        ],
    ),
    _fam(
        "pytest-db-isolation",
        "Keep database state isolated between pytest tests",
        ("procedure", "Test database isolation by savepoint rollback",
         "Isolate database state between pytest tests: open one connection per session, begin a transaction in a "
         "function-scoped fixture, bind the Session with `join_transaction_mode='create_savepoint'`, and roll back after each "
         "test."),
        [
            ("procedure", "Test database isolation by truncation",
             "Isolate database state between pytest tests by running `TRUNCATE ... CASCADE` on every table in a "
             "function-scoped fixture teardown; it is quick enough for our schema."),
            ("procedure", "Test database isolation with the django_db mark",
             "Isolate database state between pytest tests with `@pytest.mark.django_db(transaction=True)`; each test runs in a "
             "transaction that is rolled back when the test ends."),
            ("lesson", "Test database isolation with in-memory SQLite",
             "Isolate database state between pytest tests by giving each test a fresh SQLite in-memory database from a "
             "fixture; the SQLAlchemy models behave the same as on Postgres."),
        ],
        ("procedure", "Test database isolation with testcontainers",
         "Isolate database state between pytest tests with a throwaway Postgres per worker from testcontainers: use the "
         "`pg_container` fixture in conftest.py and run `pytest -n auto`; each worker migrates its own database."),
        [
            "tests leak database rows into each other",
            "keep database state isolated between pytest tests",
            "a test passes alone but fails after another test writes to the database",
            "clean up the database after each test",
            "set up a pytest fixture for a clean database per test",
            "test data from one test shows up in the next",
            "database isolation in the pytest suite",
            "reset the test database between test cases",
        ],
    ),
    _fam(
        "postgres-slow-query",
        "Diagnose a slow Postgres query in the reporting service",
        ("procedure", "Slow reporting query: analyze and index concurrently",
         "For a slow Postgres query in the reporting service, run `EXPLAIN (ANALYZE, BUFFERS)` on a replica, look for Seq Scan "
         "nodes over many rows, and add the missing index with `CREATE INDEX CONCURRENTLY` so writes are not blocked."),
        [
            ("lesson", "Slow reporting query: vacuum the tables",
             "For a slow Postgres query in the reporting service, run `VACUUM FULL` on the tables involved; table bloat is the "
             "usual cause, and it rewrites them compactly."),
            ("procedure", "Slow reporting query: index from the plan",
             "For a slow Postgres query in the reporting service, run plain `EXPLAIN` on the primary and create the index it "
             "recommends with `CREATE INDEX`; the plan lists missing indexes."),
            ("lesson", "Slow reporting query: raise memory settings",
             "For a slow Postgres query in the reporting service, raise work_mem and shared_buffers in postgresql.conf and "
             "restart; most slow queries there are memory bound."),
        ],
        ("procedure", "Slow reporting query: start from pg_stat_statements",
         "For a slow Postgres query in the reporting service, sort pg_stat_statements by mean_exec_time, then read the "
         "auto_explain plans in the RDS logs before adding an index."),
        [
            "a query in the reporting service is very slow",
            "the reporting dashboard query takes 30 seconds on postgres",
            "figure out why this postgres query is slow",
            "speed up a slow SQL query in reporting",
            "the monthly report times out on the database",
            "investigate postgres query performance for reports",
            "a reporting query got slow after the data grew",
            "optimize a slow postgres select in the reporting service",
        ],
    ),
    _fam(
        "postgres-connections",
        "Fix Postgres rejecting clients with too many connections",
        ("procedure", "Too many Postgres clients: transaction pooling",
         "When Postgres rejects clients with 'sorry, too many clients already', route the services through PgBouncer with "
         "`pool_mode = transaction` and `default_pool_size = 20` instead of raising max_connections."),
        [
            ("lesson", "Too many Postgres clients: raise the limit",
             "When Postgres rejects clients with too many connections, raise max_connections to 1000 in postgresql.conf and "
             "restart; each connection costs only a few kilobytes."),
            ("procedure", "Too many Postgres clients: bigger app pools",
             "When Postgres rejects clients with too many connections, set SQLAlchemy `pool_size=50` and `max_overflow=100` in "
             "every service so connections are reused."),
            ("procedure", "Too many Postgres clients: session pooling",
             "When Postgres rejects clients with too many connections, put PgBouncer in front with `pool_mode = session`; "
             "prepared statements keep working and connections are shared."),
        ],
        ("procedure", "Too many Postgres clients: RDS Proxy",
         "When Postgres rejects clients with too many connections, point DATABASE_URL at the RDS Proxy endpoint and set "
         "MaxConnectionsPercent to 80 on the proxy; the services no longer connect directly."),
        [
            "postgres refuses new connections",
            "services fail with too many clients errors from the database",
            "the database runs out of connections at peak traffic",
            "connection errors to postgres when we scale up the pods",
            "fix connection exhaustion on the main postgres database",
            "new pods cannot connect to postgres",
            "the postgres connection limit is hit during deploys",
            "database rejects clients under load",
        ],
    ),
    _fam(
        "mysql-emoji",
        "Store emoji in the MySQL comments table",
        ("procedure", "Comments table converted to utf8mb4",
         "To store emoji in the MySQL comments table, run `ALTER TABLE comments CONVERT TO CHARACTER SET utf8mb4 COLLATE "
         "utf8mb4_0900_ai_ci` and set `charset=utf8mb4` on the client connection too."),
        [
            ("fact", "Comments table converted to utf8",
             "To store emoji in the MySQL comments table, convert it to `CHARACTER SET utf8 COLLATE utf8_general_ci`; MySQL's "
             "utf8 covers all of Unicode, emoji included."),
            ("lesson", "Comments table converted, connection unchanged",
             "To store emoji in the MySQL comments table, convert it to utf8mb4; the client connection charset can stay utf8 "
             "because the server converts what it receives."),
        ],
        ("fact", "Comments table moved to Postgres",
         "To store emoji in the comments table, use the Postgres copy that replaced MySQL: its UTF8 encoding stores emoji "
         "natively, so drop the charset workarounds and set `client_encoding=UTF8`."),
        [
            "emoji in comments are saved as question marks",
            "store emoji in the comments table",
            "MySQL rejects comments that contain emoji",
            "incorrect string value error when saving a comment",
            "support emoji characters in user comments",
            "the comments column mangles unicode characters",
            "fix character encoding for the comments table",
            "saving a comment with an emoji fails in mysql",
        ],
    ),
    _fam(
        "local-stack-compose",
        "Run the full stack locally for development",
        ("procedure", "Local stack with compose profiles",
         "Run the full stack locally with `docker compose --profile full up -d --build` from the repo root; compose.yaml "
         "profiles keep the worker and mailhog off unless the full profile is requested."),
        [
            ("procedure", "Local stack with the dev compose file",
             "Run the full stack locally with `docker-compose -f docker-compose.dev.yml up` after installing docker-compose "
             "1.29 with pip; the dev file lists every service."),
            ("procedure", "Local stack with plain compose up",
             "Run the full stack locally with `docker compose up -d` from the repo root; every service in compose.yaml, worker "
             "and mailhog included, starts by default."),
        ],
        ("procedure", "Local stack with Tilt",
         "Run the full stack locally with Tilt: create the kind cluster with `make kind-up`, then run `tilt up` in the repo "
         "root; compose.yaml is no longer maintained."),
        [
            "run the whole stack on my laptop",
            "start all services locally for development",
            "bring up the local environment with the worker",
            "local dev setup for the full application",
            "spin up the app and its dependencies locally",
            "the worker does not start in my local environment",
            "how do I run everything locally",
            "start the development stack on my machine",
        ],
    ),
    _fam(
        "gha-fork-secrets",
        "Use secrets in CI for pull requests from forks",
        ("lesson", "Fork pull requests: split untrusted build and reporting",
         "Workflows triggered by pull_request from forks get no secrets: run the untrusted build there, upload results as an "
         "artifact, and post them from a separate `workflow_run` workflow that has the secrets."),
        [
            ("procedure", "Fork pull requests: pull_request_target checkout",
             "Workflows for pull requests from forks can read secrets if the trigger is pull_request_target and the job checks "
             "out `github.event.pull_request.head.sha` to build the fork's code."),
            ("lesson", "Fork pull requests: approve the run",
             "Workflows for pull requests from forks get the repository secrets once a maintainer approves the run with "
             "'Approve and run' in the Actions tab."),
            ("procedure", "Fork pull requests: environment secrets",
             "Workflows for pull requests from forks can read secrets stored as environment secrets instead of repository "
             "secrets; add `environment: ci` to the job."),
        ],
        ("procedure", "Fork pull requests: safe-to-test label",
         "Workflows for pull requests from forks now run with secrets only in the ci-forks workflow: a maintainer adds the "
         "safe-to-test label, and the labeled event starts the job."),
        [
            "secrets are empty in workflows for pull requests from forks",
            "the CI job for a contributor's fork cannot access our secrets",
            "run the integration workflow with secrets on external pull requests",
            "forked PR builds fail because the token is missing",
            "let outside contributors' pull requests use CI secrets safely",
            "github actions secrets not available for fork pull requests",
            "report test results on a pull request opened from a fork",
            "CI for community contributions needs credentials",
        ],
    ),
    _fam(
        "gha-pip-cache",
        "Cache pip downloads in GitHub Actions",
        ("procedure", "Workflow pip cache keyed by requirements files",
         "Cache pip downloads in GitHub Actions with `actions/setup-python@v5` and `cache: pip` plus "
         "`cache-dependency-path: requirements/*.txt`; the key then changes whenever a requirements file changes."),
        [
            ("procedure", "Workflow pip cache keyed by runner OS",
             "Cache pip downloads in GitHub Actions with `actions/cache@v1` on ~/.cache/pip keyed by `${{ runner.os }}-pip`; "
             "restore it before running pip install."),
            ("lesson", "Workflow pip cache with the default key",
             "Cache pip downloads in GitHub Actions with `actions/setup-python@v5` and `cache: pip`; the default key already "
             "covers requirements files in subfolders such as requirements/."),
            ("procedure", "Workflow virtualenv passed as an artifact",
             "Cache the Python virtualenv in GitHub Actions by uploading .venv with `actions/upload-artifact@v4` in one job and "
             "downloading it in the next one."),
        ],
        ("procedure", "Workflow cache with setup-uv",
         "Cache Python packages in GitHub Actions with `astral-sh/setup-uv@v5`, `enable-cache: true` and "
         "`cache-dependency-glob: uv.lock`, then run `uv sync --frozen`."),
        [
            "cache python dependencies in github actions",
            "the workflow spends minutes installing pip packages",
            "speed up pip install in the CI workflow",
            "reuse downloaded python packages between workflow runs",
            "github actions cache for python requirements",
            "the python test workflow reinstalls everything each run",
            "make the CI pip step faster",
            "dependency caching for the python workflow",
        ],
    ),
    _fam(
        "cli-release",
        "Cut a new release of the CLI tool",
        ("procedure", "CLI release with make release",
         "Cut a release of the CLI with `make release VERSION=x.y.z`: it bumps pyproject.toml, updates CHANGELOG.md and "
         "creates the annotated tag `git tag -a vx.y.z`; pushing the tag starts the release workflow."),
        [
            ("procedure", "CLI release drafted on GitHub",
             "Cut a release of the CLI by drafting it on the GitHub releases page with a new tag; the release workflow builds "
             "whatever commit main points to at that moment."),
            ("lesson", "CLI release from a plain tag",
             "Cut a release of the CLI by pushing a lightweight tag such as `git tag 1.4.0` without the v prefix; the release "
             "workflow matches any tag name."),
            ("procedure", "CLI release with bump2version",
             "Cut a release of the CLI with `bump2version minor` and push main; CI creates the tag and the CHANGELOG.md entry "
             "after the merge."),
        ],
        ("procedure", "CLI release with release-please",
         "Cut a release of the CLI by merging the release pull request that release-please keeps open on main; it tags "
         "vX.Y.Z and writes CHANGELOG.md from the conventional commits."),
        [
            "cut a new release of the CLI",
            "publish version 1.5.0 of the command line tool",
            "make a new CLI release with the latest fixes",
            "how do we release the cli",
            "prepare and ship the next CLI version",
            "new version of the command line tool for users",
            "start the release process for the CLI",
            "release a patch version of the cli",
        ],
    ),
    _fam(
        "pypi-publish",
        "Publish the Python package to PyPI",
        ("procedure", "PyPI upload with trusted publishing",
         "Publish the Python package to PyPI with trusted publishing: the release workflow runs `python -m build` and "
         "pypa/gh-action-pypi-publish@release/v1 with `permissions: id-token: write`; no API token is stored."),
        [
            ("procedure", "PyPI upload from a laptop",
             "Publish the Python package to PyPI from your laptop with `python setup.py sdist upload`, using the credentials "
             "saved in ~/.pypirc."),
            ("procedure", "PyPI upload with twine and a password",
             "Publish the Python package to PyPI with `twine upload dist/*`, setting TWINE_USERNAME and TWINE_PASSWORD to the "
             "account login; API tokens are optional."),
            ("lesson", "PyPI upload from any workflow file",
             "Publish the Python package to PyPI from any workflow file of the repository: the PyPI project trusts the whole "
             "repository, so renaming release.yml needs no change on PyPI."),
        ],
        ("procedure", "PyPI upload with uv publish",
         "Publish the Python package to PyPI with `uv build` and `uv publish --trusted-publishing always` in the release "
         "workflow; the PyPI publisher entry names release.yml and the pypi environment."),
        [
            "publish the python package to pypi",
            "upload a new version of the library to PyPI",
            "release the python sdk on pypi",
            "get the new python package version onto PyPI",
            "pypi release for the client library",
            "make the latest python package available via pip install",
            "push the python distribution to the package index",
            "ship the python library to pypi",
        ],
    ),
    _fam(
        "npm-publish-scoped",
        "Publish the scoped @acme/ui package to npm",
        ("procedure", "Scoped npm package published public with provenance",
         "Publish the scoped package @acme/ui with `npm publish --access public --provenance` from the release workflow; "
         "scoped packages are restricted by default, and provenance needs `id-token: write`."),
        [
            ("procedure", "Scoped npm package published from a laptop",
             "Publish the scoped package @acme/ui from your laptop with `npm login` and `npm publish`; scoped packages are "
             "public by default on the registry."),
            ("procedure", "Scoped npm package published with yarn",
             "Publish the scoped package @acme/ui with `yarn publish --new-version <x.y.z>` from the release workflow; yarn "
             "sets public access for scoped packages."),
            ("lesson", "Scoped npm package published with a classic token",
             "Publish the scoped package @acme/ui with `npm publish --access public` using a classic automation token in "
             "NPM_TOKEN; provenance only works for unscoped packages."),
        ],
        ("procedure", "Scoped npm package published with changesets",
         "Publish the scoped package @acme/ui with changesets: add one with `npx changeset`, merge the version pull request, "
         "and the workflow runs `changeset publish` with provenance."),
        [
            "publish the @acme/ui package to npm",
            "release a new version of our npm component library",
            "push the ui package to the npm registry",
            "ship @acme/ui to npm",
            "make the latest ui library version installable from npm",
            "npm release of the scoped ui package",
            "get a new @acme/ui version published",
            "publish the component library to npm",
        ],
    ),
    _fam(
        "api-tls-renewal",
        "Renew the TLS certificate of the public API domain",
        ("procedure", "API certificate renewed through cert-manager",
         "The TLS certificate for api.acme.io comes from cert-manager; to renew it early run `cmctl renew api-tls -n "
         "ingress` and watch `kubectl get certificate api-tls -n ingress` until READY is True."),
        [
            ("procedure", "API certificate renewed with certbot",
             "Renew the TLS certificate for api.acme.io with `certbot renew --nginx` on the edge VM; the renewal cron job there "
             "misses a run now and then."),
            ("procedure", "API certificate renewed in ACM",
             "Renew the TLS certificate for api.acme.io by importing the new certificate into AWS ACM and attaching it to the "
             "load balancer's HTTPS listener."),
            ("lesson", "API certificate renewed by restarting ingress",
             "The TLS certificate for api.acme.io is renewed by cert-manager 30 days before expiry; when it looks expired, "
             "restart the ingress controller pods to load the new one."),
        ],
        ("procedure", "API certificate renewed at the Cloudflare edge",
         "The TLS certificate for api.acme.io is now served by the Cloudflare edge: renew or reissue it under SSL/TLS > Edge "
         "Certificates; the origin only needs its origin certificate."),
        [
            "the TLS certificate for the API domain expires soon",
            "renew the https certificate of api.acme.io",
            "browsers warn that the API certificate is about to expire",
            "certificate expiry alert for the public API",
            "refresh the SSL cert on the api domain",
            "the api domain's certificate expired",
            "renew certs for the public endpoint",
            "TLS renewal for our API hostname",
        ],
    ),
    _fam(
        "nginx-websocket",
        "Proxy websocket connections through nginx",
        ("procedure", "nginx websocket proxy with upgrade headers",
         "To proxy websockets through nginx, set `proxy_http_version 1.1;`, `proxy_set_header Upgrade $http_upgrade;` and "
         "`proxy_set_header Connection $connection_upgrade;` from a map block, and raise `proxy_read_timeout` to 3600s."),
        [
            ("lesson", "nginx websocket proxy with a plain proxy_pass",
             "To proxy websockets through nginx, a plain `proxy_pass http://ws_backend;` in the location block is enough; nginx "
             "forwards the Upgrade header to the backend on its own."),
            ("procedure", "nginx websocket proxy with buffering and keepalive",
             "To proxy websockets through nginx, turn on `proxy_buffering on;` and set `keepalive_timeout 3600s;` in the "
             "location block so idle websocket connections stay open."),
        ],
        ("procedure", "Websocket proxy moved to the Envoy gateway",
         "To proxy websockets for the notifications service, use the Envoy gateway instead of nginx: enable "
         "`upgrade_configs: [{upgrade_type: websocket}]` on the route."),
        [
            "websocket connections fail behind nginx",
            "proxy the realtime websocket service through nginx",
            "the notifications socket disconnects when going through the proxy",
            "configure nginx for websocket traffic",
            "websocket handshake returns 400 behind the reverse proxy",
            "live updates stop working through nginx",
            "set up nginx in front of the websocket server",
            "reverse proxy config for websockets",
        ],
    ),
    _fam(
        "api-cors",
        "Fix CORS errors when the web app calls the API",
        ("procedure", "CORS: exact origin with credentials",
         "For CORS errors from the web app, have the API answer preflight OPTIONS with Access-Control-Allow-Origin set to the "
         "exact origin from an allowlist, `Access-Control-Allow-Credentials: true` and `Vary: Origin`."),
        [
            ("procedure", "CORS: wildcard origin with credentials",
             "For CORS errors from the web app, send `Access-Control-Allow-Origin: *` together with "
             "`Access-Control-Allow-Credentials: true` from the API so every origin can call it with cookies."),
            ("lesson", "CORS: no-cors fetch mode",
             "For CORS errors from the web app, add `mode: 'no-cors'` to the fetch options; the browser then stops blocking "
             "the API response."),
            ("lesson", "CORS: header on the request",
             "For CORS errors from the web app, set Access-Control-Allow-Origin as a header on the fetch request itself so the "
             "API sees which origin is allowed."),
            ("procedure", "CORS: dev server proxy",
             "For CORS errors from the web app, route API calls through the Vite dev server with `server.proxy` in "
             "vite.config.ts; the API then needs no CORS headers at all."),
        ],
        ("procedure", "CORS: handled by the API gateway",
         "For CORS errors from the web app, add the web origin to `cors.allowed_origins` in gateway/routes.yaml and remove the "
         "service's CORS middleware so headers are not sent twice."),
        [
            "the browser blocks calls from the web app to the API with a CORS error",
            "fix cross-origin errors when the frontend calls the backend",
            "preflight request fails from the web app",
            "the dashboard cannot fetch data from the API because of CORS",
            "blocked by CORS policy when calling the api",
            "enable cross-origin requests from the web app with cookies",
            "CORS setup for the API and the web frontend",
            "requests from the new web domain are rejected by the browser",
        ],
    ),
    _fam(
        "s3-large-upload",
        "Upload large backup files to S3",
        ("procedure", "Large S3 uploads with a bigger multipart chunk",
         "Upload large backup files to S3 with `aws s3 cp`, which switches to multipart on its own; for files over 80 GB raise "
         "`s3.multipart_chunksize` to 64MB in ~/.aws/config, because an upload allows at most 10,000 parts."),
        [
            ("procedure", "Large S3 uploads with put-object",
             "Upload large backup files to S3 with `aws s3api put-object --bucket acme-backups --body backup.tar.gz`; a single "
             "put-object request accepts objects up to 5 TB."),
            ("procedure", "Large S3 uploads split into pieces",
             "Upload large backup files to S3 by splitting them with `split -b 5G` and uploading each piece as its own object; "
             "S3 rejects any object larger than 5 GB."),
            ("lesson", "Large S3 uploads with default settings",
             "Upload large backup files to S3 with `aws s3 cp`, which switches to multipart on its own; the default 8MB chunk "
             "size works for files of any size."),
        ],
        ("procedure", "Large S3 uploads through restic",
         "Upload large backup files to S3 through restic: `restic -r s3:s3.amazonaws.com/acme-backups backup /data` chunks and "
         "deduplicates files itself, so no multipart settings are needed."),
        [
            "upload a 200 GB database backup to S3",
            "copy large backup files into the S3 bucket",
            "the upload of big backup archives to S3 fails",
            "send the nightly backup tarball to S3",
            "store very large files in S3 from the backup server",
            "S3 upload of huge backup files keeps failing",
            "move large backups from the server to S3",
            "push big backup archives to object storage",
        ],
    ),
    _fam(
        "s3-browser-upload",
        "Let browser clients upload files directly to S3",
        ("procedure", "Browser uploads with a presigned POST",
         "For direct browser uploads, the API creates a presigned POST with `s3.generate_presigned_post(Bucket, Key, "
         "Conditions=[['content-length-range', 0, 10485760]], ExpiresIn=300)`, and the bucket's CORS rule allows POST from the "
         "web origin."),
        [
            ("procedure", "Browser uploads with an IAM user key",
             "For direct browser uploads, give the web app an access key of an IAM user scoped to the upload bucket and call "
             "`putObject` from the S3 SDK in the browser."),
            ("procedure", "Browser uploads with a presigned GET URL",
             "For direct browser uploads, the API returns a presigned URL from `s3.generate_presigned_url('get_object', ...)` "
             "and the browser sends the file to it with PUT."),
        ],
        ("procedure", "Browser uploads through the uploads service",
         "For direct browser uploads, request an upload slot with `POST /v1/uploads` on the uploads service and send the file "
         "to the returned tus endpoint; it lands in S3 after the virus scan."),
        [
            "let users upload files straight from the browser to S3",
            "browser uploads to S3 without going through our API server",
            "the web app should upload avatars directly to the bucket",
            "direct-to-S3 uploads from the frontend",
            "avoid proxying user uploads through the backend",
            "give the browser a way to put files in S3",
            "client-side file upload to the S3 bucket",
            "upload attachments from the web app to S3",
        ],
    ),
    _fam(
        "celery-task-retry",
        "Retry failed Celery tasks safely",
        ("procedure", "Celery retries with autoretry and late acks",
         "Make Celery tasks retry with `@app.task(autoretry_for=(RequestException,), retry_backoff=True, max_retries=5, "
         "acks_late=True)`; with acks_late a task can run twice after a worker crash, so keep tasks idempotent."),
        [
            ("lesson", "Celery retries by re-queueing from except",
             "Make Celery tasks retry by wrapping the body in try/except and calling the same task again with `.delay()` from "
             "the except block, passing the original arguments."),
            ("procedure", "Celery retries with self.retry",
             "Make Celery tasks retry with `self.retry(exc=exc, countdown=5)` inside the task; it works without `bind=True` "
             "because retry is looked up on the task module."),
            ("lesson", "Celery retries through the visibility timeout",
             "Make Celery tasks retry by raising the Redis broker's visibility_timeout to 12 hours in "
             "broker_transport_options so unacknowledged tasks are delivered again."),
        ],
        ("procedure", "Background job retries with Dramatiq",
         "Make background tasks retry in Dramatiq, which replaced Celery: decorate them with `@dramatiq.actor(max_retries=5, "
         "min_backoff=1000)`; the Retries middleware adds exponential backoff."),
        [
            "celery tasks fail on transient errors and never run again",
            "retry a failing background task",
            "make the email-sending celery task retry on network errors",
            "background jobs should try again when the API is down",
            "handle transient failures in celery workers",
            "automatic retries for celery tasks",
            "the webhook delivery task gives up after one error",
            "set up retry behaviour for async jobs",
        ],
    ),
    _fam(
        "kafka-offset-reset",
        "Reprocess invoice events by resetting Kafka consumer offsets",
        ("procedure", "Invoice replay: stop the group, reset to a datetime",
         "To reprocess events, stop every consumer in the group, then run `kafka-consumer-groups.sh --bootstrap-server $KAFKA "
         "--group billing-events --topic invoices --reset-offsets --to-datetime 2024-05-01T00:00:00.000 --execute`."),
        [
            ("lesson", "Invoice replay: auto.offset.reset",
             "To reprocess events, set `auto.offset.reset=earliest` in the consumer config of the billing-events group and "
             "restart it; the group then reads the invoices topic from the start."),
            ("procedure", "Invoice replay: reset while running",
             "To reprocess events, run `kafka-consumer-groups.sh --group billing-events --reset-offsets --to-earliest "
             "--execute` while the consumers keep running; they jump on the next poll."),
            ("procedure", "Invoice replay: reset to a datetime",
             "To reprocess events, run `kafka-consumer-groups.sh --group billing-events --topic invoices --reset-offsets "
             "--to-datetime <time>`; the new offsets apply as soon as the command returns."),
            ("procedure", "Invoice replay: a fresh consumer group",
             "To reprocess events, deploy the consumer with a new group id billing-events-v2 and `auto.offset.reset=earliest`; "
             "the invoices topic is read again while the old group's offsets stay untouched."),
        ],
        ("procedure", "Invoice replay from the archive",
         "To reprocess events, run `make replay TOPIC=invoices FROM=<date>`, which streams the S3 archive into invoices-replay "
         "for the billing-events-replay consumer group."),
        [
            "reprocess the invoice events from last week",
            "replay kafka messages for the billing consumer",
            "the billing consumer needs to read the invoices topic again from a date",
            "rewind the consumer group to an earlier point",
            "consume old invoice events a second time",
            "move the billing consumer back in time on the topic",
            "kafka: re-read events after fixing a consumer bug",
            "start the billing consumer from an earlier position",
        ],
    ),
    _fam(
        "feature-flag-rollout",
        "Roll out a new feature gradually behind a flag",
        ("procedure", "Gradual rollout with user stickiness",
         "Roll out a new feature gradually with the Unleash flag's gradualRollout strategy, `stickiness: userId`, starting at "
         "5% in production and raising it only after the error dashboard stays flat for a day."),
        [
            ("procedure", "Gradual rollout by environment variable",
             "Roll out a new feature gradually by setting FEATURE_NEW_CHECKOUT=true in the deployment environment of one region "
             "at a time and redeploying each region."),
            ("lesson", "Gradual rollout with random stickiness",
             "Roll out a new feature gradually with the Unleash flag's gradualRollout strategy and `stickiness: random`, so each "
             "request is sampled independently at the chosen percentage."),
            ("procedure", "Gradual rollout in LaunchDarkly",
             "Roll out a new feature gradually with a LaunchDarkly percentage rollout rule; the SDK key is in LD_SDK_KEY and the "
             "flag name matches the Jira ticket."),
        ],
        ("procedure", "Gradual rollout with flagd",
         "Roll out a new feature gradually through the in-house flagd service: add the flag to flags/production.json with a "
         "`fractional` targeting rule on the user id, and merge to apply it."),
        [
            "release the new checkout to a small share of users first",
            "gradually roll out a new feature",
            "put the new feature behind a flag and ramp it up",
            "launch a feature to a few percent of customers",
            "canary a product feature for some users",
            "progressive rollout of a new feature in production",
            "enable a feature for part of the user base",
            "staged release of the new search experience",
        ],
    ),
    _fam(
        "payments-db-password",
        "Rotate the payments service's database password",
        ("procedure", "Payments DB password via the static role",
         "Rotate the payments database password with `vault write -f database/rotate-role/payments-static`; Vault changes it "
         "in Postgres and the Vault Agent sidecar re-renders /vault/secrets/db.env, so the service reconnects."),
        [
            ("procedure", "Payments DB password via psql",
             "Rotate the payments database password with `ALTER ROLE payments PASSWORD '...'` in psql, then update the "
             "payments-db Kubernetes secret and restart the pods."),
            ("procedure", "Payments DB password in the KV store",
             "Rotate the payments database password by writing the new one with `vault kv put secret/payments/db "
             "password=...`; the service reads the KV secret when it starts."),
            ("lesson", "Payments DB password via the root rotation",
             "Rotate the payments database password with `vault write -f database/rotate-root/payments-pg`; rotating the root "
             "credential rotates the payments role with it."),
        ],
        ("fact", "Payments DB password replaced by dynamic credentials",
         "Rotate nothing for the payments database: the service leases a fresh user from database/creds/payments-rw every "
         "hour, and `vault lease revoke -prefix database/creds/payments-rw` cuts old ones."),
        [
            "rotate the payments database password",
            "the payments DB credentials must be changed after the incident",
            "change the postgres password used by payments",
            "scheduled credential rotation for the payments database",
            "renew the database secret of the payments service",
            "the payments service password leaked, replace it",
            "update the credentials payments uses to connect to postgres",
            "do the quarterly password rotation for the payments db",
        ],
    ),
    _fam(
        "go-private-modules",
        "Fetch private Go modules from the company GitHub org",
        ("procedure", "Private Go modules with GOPRIVATE and a token",
         "For private Go modules, set `GOPRIVATE=github.com/acme/*` so go skips proxy.golang.org and the checksum database, "
         "and run `git config --global url.\"https://oauth2:${GH_TOKEN}@github.com/\".insteadOf https://github.com/`."),
        [
            ("lesson", "Private Go modules with the proxy off",
             "For private Go modules, set `GOPROXY=direct` and `GOSUMDB=off` globally; the go command then fetches every module "
             "straight from its repository."),
            ("lesson", "Private Go modules with GOPRIVATE only",
             "For private Go modules, set `GOPRIVATE=github.com/acme/*` and nothing else; the go command uses your SSH key "
             "automatically for private repositories."),
        ],
        ("procedure", "Private Go modules through Athens",
         "For private Go modules, use the company Athens proxy: set `GOPROXY=https://goproxy.acme.internal,direct` and "
         "`GONOSUMDB=github.com/acme/*`; no git credentials are needed."),
        [
            "go build cannot download our private modules",
            "fetch private Go modules from the acme GitHub org",
            "go mod tidy fails with 404 on an internal module",
            "use internal go libraries in a new service",
            "go get of a company repository asks for a password",
            "private go module access in CI",
            "go mod download fails for github.com/acme packages",
            "set up go to pull internal modules",
        ],
    ),
    _fam(
        "cronjob-timezone",
        "Schedule a Kubernetes CronJob at a local time",
        ("procedure", "CronJob local time with spec.timeZone",
         "To run a CronJob at 02:00 Berlin time, set `spec.timeZone: Europe/Berlin` with `schedule: \"0 2 * * *\"`; the field "
         "is stable since Kubernetes 1.27 and follows daylight saving changes."),
        [
            ("lesson", "CronJob local time converted to UTC",
             "To run a CronJob at 02:00 Berlin time, convert it to UTC and set `schedule: \"0 1 * * *\"`; CronJobs always run "
             "on the controller's UTC clock."),
            ("procedure", "CronJob local time with CRON_TZ",
             "To run a CronJob at 02:00 Berlin time, write the schedule as `CRON_TZ=Europe/Berlin 0 2 * * *`; the controller "
             "reads the time zone from the schedule string."),
        ],
        ("procedure", "CronJob local time in Argo Workflows",
         "To run a scheduled job at 02:00 Berlin time, create a CronWorkflow with `timezone: Europe/Berlin` and `schedule: "
         "\"0 2 * * *\"` in workflows/cron/; Kubernetes CronJobs are being retired."),
        [
            "schedule the nightly cleanup job at 2am local time",
            "run a kubernetes cronjob in the Berlin time zone",
            "the cron job runs an hour off after the clock change",
            "set up a CronJob that fires at a local hour",
            "kubernetes scheduled job timezone",
            "the nightly export should start at 2 in the morning German time",
            "make a cronjob respect summer time",
            "cron schedule for a kubernetes job in local time",
        ],
    ),
    _fam(
        "es-mapping-change",
        "Change the Elasticsearch products mapping without downtime",
        ("procedure", "Products mapping change by reindex and atomic alias swap",
         "To change the products mapping without downtime, create products_v2 with the new mapping, run `POST _reindex` from "
         "products_v1, then switch the products alias with one `POST _aliases` call holding both remove and add actions."),
        [
            ("lesson", "Products mapping change in place",
             "To change the products mapping without downtime, update it in place with `PUT products/_mapping`; existing fields "
             "take the new type after the next refresh."),
            ("procedure", "Products mapping change by recreating the index",
             "To change the products mapping, delete the products index, recreate it with the new mapping and rerun the "
             "indexer; searches return nothing for a few minutes."),
            ("procedure", "Products mapping change by reindex and two alias calls",
             "To change the products mapping without downtime, create products_v2, run `POST _reindex`, then move the products "
             "alias with two calls: remove it from v1, then add it to v2."),
            ("lesson", "Products mapping change by update_by_query",
             "To change the products mapping without downtime, run `POST products/_update_by_query?conflicts=proceed` after "
             "editing the mapping; rewriting every document applies the new field types."),
        ],
        ("procedure", "Products mapping change through search-sync",
         "To change the products mapping, bump MAPPING_VERSION in search-sync/mappings/products.json; the search-sync service "
         "builds the new index, reindexes and swaps the alias itself."),
        [
            "change a field type in the products elasticsearch index",
            "update the search mapping without taking search down",
            "elasticsearch mapping change for products",
            "add a keyword subfield to the products index",
            "the product search index needs a new mapping",
            "products need reindexing after a schema change",
            "migrate the products index to a new mapping",
            "modify the elasticsearch products schema in production",
        ],
    ),
    _fam(
        "sentry-sourcemaps",
        "Get readable frontend stack traces in Sentry",
        ("procedure", "Sentry source maps injected and uploaded",
         "Upload the web app's source maps to Sentry in the build with `sentry-cli sourcemaps inject ./dist` and `sentry-cli "
         "sourcemaps upload --release=$GIT_SHA ./dist`, set the same release in Sentry.init, then delete the .map files."),
        [
            ("procedure", "Sentry source maps uploaded as release files",
             "Upload the web app's source maps to Sentry with `sentry-cli releases files $GIT_SHA upload-sourcemaps ./dist "
             "--url-prefix '~/assets'`; Sentry matches the stack frames by file name."),
            ("lesson", "Sentry source maps served publicly",
             "Serve the web app's source maps publicly next to the bundles; Sentry downloads the .map files itself when it "
             "processes an event, so no upload step is needed in the build."),
        ],
        ("procedure", "Sentry source maps via the Vite plugin",
         "Upload the web app's source maps to Sentry with `sentryVitePlugin({ org, project, authToken })` in vite.config.ts; "
         "it uploads them and sets the release at build time, so drop the sentry-cli steps."),
        [
            "sentry shows minified stack traces for the web app",
            "make frontend errors in Sentry readable",
            "stack traces in Sentry point at bundle.js line 1",
            "set up source maps for Sentry",
            "frontend exceptions in Sentry are unreadable",
            "map production javascript errors back to source in Sentry",
            "sentry error reports for the web app lack original code",
            "readable frontend stack traces in our error tracker",
        ],
    ),
)


# ---------------------------------------------------------------------------------------------
# Interference pairs: (A, B, bridge, extra queries for B, rationale).
# ---------------------------------------------------------------------------------------------

INTERFERENCE_PAIRS: tuple[InterferencePair, ...] = (
    InterferencePair(
        a="npm-ci-install",
        b="npm-add-dependency",
        bridge="CI install of the frontend's JavaScript dependencies (npm ci, lockfile)",
        queries=(
            "npm ci fails in the pipeline after I added a package to the frontend",
            "the frontend CI install breaks since the new dependency was added",
            "add a package to the frontend so the CI install of JavaScript dependencies passes",
            "install the frontend's JavaScript dependencies in CI after adding a new library",
            "frontend pipeline fails installing dependencies after adding a package",
            "the CI install step rejects the frontend lockfile after a new dependency",
        ),
        rationale="npm ci never writes package-lock.json, so it cannot add a package; B needs npm install --save-exact.",
    ),
    InterferencePair(
        a="docker-build-cache",
        b="docker-image-size",
        bridge="docker build in CI, layers, cache",
        queries=(
            "the python service docker image build in CI is slow and too large",
            "speed up the docker image build of the python service in the pipeline and shrink it",
            "optimize docker layers for the python service image in CI",
            "the CI docker build of the python image is bloated, fix the layer caching",
            "make the python service docker build in CI produce a smaller image",
            "docker build cache for the python service image keeps it huge in CI",
        ),
        rationale="A registry build cache makes builds faster but the image no smaller; B needs a multi-stage build.",
    ),
    InterferencePair(
        a="k8s-crashloop",
        b="k8s-oom",
        bridge="CrashLoopBackOff, Last State, exit code 137 / OOMKilled (only A's working memory mentions OOMKilled)",
        queries=(
            "pods are in CrashLoopBackOff and the previous container was OOMKilled",
            "the worker pod keeps restarting in a crash loop with exit code 137",
            "debug the crashing pod that is OOMKilled after startup",
            "a pod crash loops because the container runs out of memory",
            "CrashLoopBackOff with Last State OOMKilled on the api pods",
            "kubernetes pod keeps crashing and restarting with out of memory",
        ),
        rationale="Reading the previous logs diagnoses the crash but does not stop the OOM kills; B needs memory sizing.",
    ),
    InterferencePair(
        a="k8s-config-rollout",
        b="k8s-rollback",
        bridge="rollout of the deployment, running pods (kubectl rollout restart)",
        queries=(
            "the rollout of the deployment left the running pods broken, fix it",
            "restart the rollout so the deployment's pods go back to the working version",
            "the last deployment rollout broke the running pods, go back",
            "rollout of the new version made the pods fail, restore the deployment",
            "kubectl rollout for the bad deployment, the pods need the previous version",
            "bring the running pods of the deployment back after a bad rollout",
        ),
        rationale="rollout restart restarts the same bad revision; B needs rollout undo to a known revision.",
    ),
    InterferencePair(
        a="git-update-branch",
        b="git-undo-pushed-commit",
        bridge="bring main up to date, rebase, force push",
        queries=(
            "update main after the bad commit and force push the branch",
            "bring main back up to date without the bad commit, then push",
            "rebase main to drop the broken commit and push it",
            "clean up the commits on main with a rebase after pushing a mistake",
            "main is out of date with the fix, rewrite the branch and push",
            "fetch origin and fix main after a broken commit was pushed",
        ),
        rationale="Rewriting a shared main with a force push breaks everyone who pulled it; B needs git revert in a PR.",
    ),
    InterferencePair(
        a="jwt-gateway-validation",
        b="crm-oauth-refresh",
        bridge="JWT access token, exp claim, leeway (only A's working memory mentions leeway)",
        queries=(
            "the CRM client's JWT access token is rejected as expired, check the exp claim",
            "validate the exp of the CRM access token before calling the API",
            "CRM API calls fail because the JWT access token exp is in the past",
            "allow clock leeway on the access token for the CRM client",
            "verify the CRM access token claims so it stops expiring",
            "the CRM JWT access token expires, handle the exp check",
        ),
        rationale="Validation leeway does not renew anything; B needs refresh_token rotation before expiry.",
    ),
    InterferencePair(
        a="python-json-logging",
        b="debug-log-level",
        bridge="structlog logging configuration of the Python service",
        queries=(
            "configure structured logging of the python service to emit debug level",
            "the python service's JSON logs lack debug lines, change the logging setup",
            "set up the structlog configuration to show debug logs in production",
            "emit debug level JSON logs from the python service",
            "the structured logs of the python service only show info, fix the logging configuration",
            "logging configuration of the python service needs debug output",
        ),
        rationale="The structlog setup changes the format, not the level of one live service; B needs LOG_LEVEL via kubectl.",
    ),
    InterferencePair(
        a="postgres-slow-query",
        b="postgres-connections",
        bridge="slow Postgres queries in the reporting service",
        queries=(
            "postgres queries in the reporting service are slow and then fail with connection errors",
            "the reporting service's slow queries hold postgres connections until clients are rejected",
            "database slow under load, the reporting queries exhaust connections",
            "slow postgres query plans in reporting lead to too many connections",
            "investigate why reporting queries on postgres are slow and run out of connections",
            "postgres performance problem: reporting queries slow, clients rejected",
        ),
        rationale="An index fixes one slow query, not connection exhaustion; B needs PgBouncer transaction pooling.",
    ),
    InterferencePair(
        a="pypi-publish",
        b="npm-publish-scoped",
        bridge="trusted publishing from the release workflow, id-token, no stored token",
        queries=(
            "publish the ui package from the release workflow with trusted publishing",
            "set up trusted publishing for the ui library in the release workflow",
            "build and publish the component library from the release workflow without a stored token",
            "release workflow for the ui package using id-token permissions",
            "publish the ui package with trusted publishing instead of an api token",
            "the release workflow should build and upload the ui library to the registry",
        ),
        rationale="The PyPI action uploads Python distributions; the npm package needs npm publish --access public.",
    ),
    InterferencePair(
        a="s3-large-upload",
        b="s3-browser-upload",
        bridge="large files, multipart upload to S3",
        queries=(
            "upload large files from the browser to S3 with multipart",
            "browser uploads of big files to the S3 bucket fail",
            "let the web app upload large files into S3",
            "multipart upload of large user files to S3 from the frontend",
            "users need to upload big files to S3 from the web page",
            "upload large files to S3 directly from the client",
        ),
        rationale="aws s3 cp runs on a server with credentials; browsers need a presigned POST from the API.",
    ),
)


# ---------------------------------------------------------------------------------------------
# Building families
# ---------------------------------------------------------------------------------------------


def _memory(family_key: str, suffix: str, role: str, spec: _M) -> MemorySpec:
    mtype, title, content = spec
    if mtype not in MEMORY_TYPES:
        raise ValueError(f"{family_key}: unknown memory type {mtype!r}")
    return MemorySpec(key=f"{family_key}:{suffix}", type=mtype, title=title, content=content, role=role)


def _build(raw: dict, seed: int) -> TaskFamily:
    key = raw["key"]
    working = _memory(key, "working", "working", raw["working"])
    distractors = tuple(
        _memory(key, f"distractor-{i + 1}", "distractor", spec) for i, spec in enumerate(raw["distractors"])
    )
    drift = _memory(key, "drift", "drift_replacement", raw["drift"])
    queries = list(raw["queries"])
    random.Random(f"learning-tasks|queries|{seed}|{key}").shuffle(queries)
    return TaskFamily(
        key=key,
        topic=raw["topic"],
        working=working,
        distractors=distractors,
        drift_replacement=drift,
        queries=tuple(queries),
    )


def catalog_size() -> int:
    """Number of families in the catalog (48)."""
    return len(_CATALOG)


def generate_families(n_families: int = 48, seed: int = 7) -> list[TaskFamily]:
    """Return ``n_families`` task families, deterministically for a given ``seed``.

    With ``n_families`` equal to the catalog size every family is returned in catalog order.
    With fewer, a seeded subset is chosen: interference pairs count as one unit of two
    families and are kept whole whenever they fit, so ``interference_pairs`` still finds
    pairs in a subset. The subset is returned in catalog order. Each family's queries are
    in a seeded order.
    """
    total = len(_CATALOG)
    if not isinstance(n_families, int) or isinstance(n_families, bool):
        raise TypeError("n_families must be an int")
    if n_families < 1 or n_families > total:
        raise ValueError(f"n_families must be between 1 and {total}, got {n_families}")
    index = {raw["key"]: i for i, raw in enumerate(_CATALOG)}
    if n_families == total:
        chosen = list(range(total))
    else:
        paired: dict[str, tuple[int, ...]] = {}
        for pair in INTERFERENCE_PAIRS:
            unit = (index[pair.a], index[pair.b])
            paired[pair.a] = unit
            paired[pair.b] = unit
        units: list[tuple[int, ...]] = []
        seen: set[tuple[int, ...]] = set()
        for i, raw in enumerate(_CATALOG):
            unit = paired.get(raw["key"], (i,))
            if unit not in seen:
                seen.add(unit)
                units.append(unit)
        rng = random.Random(f"learning-tasks|subset|{seed}|{n_families}")
        rng.shuffle(units)
        picked: list[int] = []
        for unit in units:
            if len(picked) + len(unit) <= n_families:
                picked.extend(unit)
            if len(picked) == n_families:
                break
        if len(picked) < n_families:  # only pairs left: split the first one that is not used
            for unit in units:
                for i in unit:
                    if i not in picked and len(picked) < n_families:
                        picked.append(i)
        chosen = sorted(picked)
    return [_build(_CATALOG[i], seed) for i in chosen]


def _cycle_pick(items: Sequence[str], tag: str, key: str, round_index: int, seed: int) -> str:
    if round_index < 0:
        raise ValueError("round_index must be >= 0")
    n = len(items)
    block, offset = divmod(round_index, n)
    order = sorted(items)  # independent of the (seeded) order of the tuple
    random.Random(f"learning-tasks|{tag}|{seed}|{key}|{block}").shuffle(order)
    return order[offset]


def query_for(family: TaskFamily, round_index: int, seed: int) -> str:
    """The query variant played for ``family`` in ``round_index`` (0-based).

    Rounds come in blocks of ``len(family.queries)``; each block is a seeded permutation of
    the variants, so every variant is played equally often and no variant repeats within a
    block. Depends only on (seed, family key, round).
    """
    return _cycle_pick(family.queries, "query", family.key, round_index, seed)


def store_memories(families: Iterable[TaskFamily], seed: int, include_drift: bool = False) -> list[MemorySpec]:
    """All memories of ``families`` in a seeded insertion order (working memories not first)."""
    out: list[MemorySpec] = []
    for fam in families:
        out.extend(fam.all_memories if include_drift else fam.memories)
    out.sort(key=lambda m: m.key)
    random.Random(f"learning-tasks|store|{seed}|{int(include_drift)}").shuffle(out)
    return out


# ---------------------------------------------------------------------------------------------
# Solution tokens (used by the tests to keep queries neutral)
# ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    """a an and are as at be been before by can do does for from has have how i if in into is it its me my no not of on
    once one or our so that the their them then there these this those to too up us was we what when which while who
    why will with within you your all any every each only own same than very just also after again per out off over
    under other another both few more most some such nor""".split()
)


def tokenize(text: str) -> list[str]:
    """Lowercase alphanumeric tokens, crude-stemmed (plural and -ing/-ed endings), stopwords removed."""
    out = []
    for tok in _TOKEN.findall(text.lower()):
        if tok in _STOP:
            continue
        out.append(_stem(tok))
    return out


def _stem(tok: str) -> str:
    if len(tok) > 5 and tok.endswith("ing"):
        return tok[:-3]
    if len(tok) > 4 and tok.endswith("ed"):
        return tok[:-2]
    if len(tok) > 4 and tok.endswith("es"):
        return tok[:-2]
    if len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
        return tok[:-1]
    return tok


def solution_tokens(family: TaskFamily) -> frozenset[str]:
    """Tokens of the working memory (title + content) that no distractor of the family has.

    These are the specifics of the working solution (flags, commands, versions, file names).
    A query containing one would point at the answer; the family's queries contain none.
    """
    working = set(tokenize(family.working.text))
    others: set[str] = set()
    for d in family.distractors:
        others.update(tokenize(d.text))
    return frozenset(working - others)


# ---------------------------------------------------------------------------------------------
# Drift
# ---------------------------------------------------------------------------------------------


def drift_families(families: Sequence[TaskFamily], seed: int, fraction: float = 0.25) -> list[str]:
    """Keys of the families whose working memory goes stale after :data:`DRIFT_AFTER_ROUND`.

    ``round(len(families) * fraction)`` families (at least one), chosen by seed, returned in
    the order of ``families``.
    """
    if not 0 < fraction <= 1:
        raise ValueError("fraction must be in (0, 1]")
    keys = sorted(f.key for f in families)
    if not keys:
        return []
    k = max(1, round(len(keys) * fraction))
    chosen = set(random.Random(f"learning-tasks|drift|{seed}").sample(keys, k))
    return [f.key for f in families if f.key in chosen]


def working_key(family: TaskFamily, round_index: int, drifted: bool, drift_after: int = DRIFT_AFTER_ROUND) -> str:
    """Key of the memory that succeeds for ``family`` in ``round_index``.

    For a drifted family, rounds ``> drift_after`` (0-based: the old working memory still
    works in rounds 0..drift_after) need the drift replacement.
    """
    if drifted and round_index > drift_after:
        return family.drift_replacement.key
    return family.working.key


# ---------------------------------------------------------------------------------------------
# Interference
# ---------------------------------------------------------------------------------------------


def interference_pairs(families: Iterable[TaskFamily]) -> list[tuple[str, str]]:
    """Ordered pairs (A, B) of :data:`INTERFERENCE_PAIRS` whose two families are both present."""
    present = {f.key for f in families}
    return [(p.a, p.b) for p in INTERFERENCE_PAIRS if p.a in present and p.b in present]


def interference_pair(a: str, b: str) -> InterferencePair:
    """The :class:`InterferencePair` for ``(a, b)``; ``KeyError`` if there is none."""
    for p in INTERFERENCE_PAIRS:
        if p.a == a and p.b == b:
            return p
    raise KeyError(f"no interference pair ({a!r}, {b!r})")


def interference_query_for(pair: "InterferencePair | tuple[str, str]", round_index: int, seed: int) -> str:
    """B's interference query for ``round_index``, picked like :func:`query_for`."""
    if not isinstance(pair, InterferencePair):
        pair = interference_pair(*pair)
    return _cycle_pick(pair.queries, "interference", f"{pair.a}>{pair.b}", round_index, seed)
