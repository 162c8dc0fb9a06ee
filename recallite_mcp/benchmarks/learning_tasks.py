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

All memories of a family share one ``type`` (families differ: procedure, lesson, fact,
constraint), so the type carries no hint of the role and type multipliers of a recall
profile cannot favour the working memory.

Distractors are balanced by wording: before any feedback, a hybrid retriever (FTS5 bm25 +
MiniLM cosine, fused by RRF k=60) over the whole store (all 48 families, 189 memories) ranks
the working memory first for about ``1/(1+d)`` of the queries of a family with ``d``
distractors (0.24-0.27 over seeds 1-8, expected 0.261), and the family's own memories fill
the top 3 for 93% of the queries; another family's memory comes first for 1%. Individual
families still lean one way or the other (a few never rank their working memory first
before feedback), but no family always does.
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
The first :data:`DRIFT_AFTER_ROUND` (5) rounds are played as usual. From round index 5 on
(0-based, i.e. after round 5) the working memory of a quarter of the families
(:func:`drift_families`) stops working and the family's ``drift_replacement`` is inserted;
success for those families then means using the replacement (:func:`working_key`). The
replacement is worded like the others (same lead phrase, same topic words, same length), so
it is retrievable; the learner must demote the old winner and promote the newcomer.

Interference scenario
=====================
Interference tests whether what a learner learned in one context leaks into another.
:data:`INTERFERENCE_PAIRS` lists 10 ordered pairs ``(A, B)`` of families with overlapping
topics; each family is in at most one pair:

* ``npm ci`` in the CI install  vs  adding a package to the frontend;
* Docker build cache in CI  vs  shrinking the Python image;
* CrashLoopBackOff diagnosis  vs  sizing memory of OOMKilled pods;
* ``rollout restart`` after a ConfigMap change  vs  rolling back a bad release;
* rebasing a feature branch on origin/main  vs  undoing a commit pushed to main;
* JWT validation in the gateway  vs  keeping the CRM client's OAuth token fresh;
* structlog JSON logging  vs  temporary debug level for one service;
* diagnosing a slow reporting query  vs  Postgres running out of connections;
* PyPI trusted publishing  vs  publishing the scoped npm package;
* large S3 uploads with ``aws s3 cp``  vs  direct browser uploads to S3.

A's working memory is wrong for B (``InterferencePair.rationale`` says why). Each pair
carries 6 extra query variants for B. They state B's task (B's own topic words, so B's
working memory stays the right answer and stays retrievable) in the vocabulary an agent
brings over from A, plus a *bridge*: words that occur in A's WORKING memory and not, or
rarely, in A's distractors ("registry", "exit code 137"/"OOMKilled", "restart" and
"environment variables", "force-with-lease"/"origin/main", "leeway"/"claims",
"structlog"/"stdlib", "see why ... slow", "trusted publishing"/"id-token", "multipart"/"GB",
"lockfile and package.json disagree"). So B's interference queries pull A's *working* memory
up, not just A's family, while A's own balance is untouched: A's queries never contain a
token that only A's working memory has. Measured with the hybrid retriever before any
feedback: A's working memory is in the top 3 of about 85% of the interference queries (first
in about half), and B's working memory is in the top 5 of about 80%.

Suggested protocol: every round play A with ``query_for(A, r, seed)`` and B with
``interference_query_for(pair, r, seed)`` (optionally alternating with B's own queries).
A learner that keeps one global usefulness score per memory promotes A's working memory
from A's successes, then serves it first on B's queries, where it fails; the negative
feedback demotes it for A as well, and A's success rate sags or oscillates. A learner whose
credit depends on the query context drives both A and B to success. Report A's success rate
with and without B's interference rounds, and B's success rate.
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
    "CATALOGS",
    "Catalog",
    "load_catalog",
    "catalog_available",
    "catalog_pairs",
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
    catalog: str = "ops"

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
# Catalog, as text (easy to read and edit):
#   @ <family key>
#   topic: <one line>
#   W|D|R <type> | <title>      working, distractor (2-4), drift replacement
#     <content, wrapped; continuation lines start with two spaces and are joined by one space>
#   Q <query variant>           (8 per family)
# Keep a family's memories the same length, lead phrase and topic words; queries describe the
# task only and must not use a token that only the working memory has.
# ---------------------------------------------------------------------------------------------

_M = tuple  # (type, title, content)

_CATALOG_TEXT = r"""
@ billing-staging-deploy
topic: Deploy the billing service to the staging environment
W procedure | Billing staging deploy with Helm
  To deploy the billing service to staging, run `helm upgrade --install billing charts/billing -n billing-staging
  -f values/staging.yaml --atomic`; --atomic rolls the release back if the pods never become ready.
D procedure | Billing staging deploy with the deploy script
  To deploy the billing service to staging, run `./scripts/deploy.sh billing staging` from the ops repo; it applies
  the manifests in k8s/billing/ with kubectl and restarts the billing pods.
D procedure | Billing deploys go through a change ticket
  Deploys of the billing service need an approved change ticket, then `helm upgrade billing charts/billing -n
  billing-prod -f values/prod.yaml --wait`; staging uses the same chart and values.
D procedure | Billing staging deploy keeps the previous values
  To deploy the billing service to staging, run `helm upgrade billing charts/billing -n billing-staging
  --reuse-values` so the overrides of the last staging release are kept.
D procedure | Billing staging deploy from rendered templates
  To deploy the billing service to staging, run `helm template billing charts/billing -f values/staging.yaml |
  kubectl apply -n billing-staging -f -`; it avoids stale Helm release state.
R procedure | Billing staging deploy through Argo CD
  To deploy the billing service to staging, bump the image tag in gitops/billing/staging/values.yaml, merge, and
  run `argocd app sync billing-staging --prune` until the app is Healthy.
Q deploy the billing service to staging
Q set up the staging deploy for the billing service
Q push the latest billing build to the staging environment
Q release the billing service on staging so QA can test it
Q how do we ship billing changes to staging
Q staging deployment of the billing service
Q get the billing branch running in staging
Q update billing in the staging cluster to the current version

@ orders-db-migrations
topic: Apply database schema migrations for the orders API
W constraint | Orders schema migrations run from the release job
  Apply orders API schema migrations to the orders database with `alembic -c orders/alembic.ini upgrade head` from
  the release job before each deploy, never on boot.
D constraint | Orders schema migrations run at container start
  Orders API schema migrations are applied at container start: the entrypoint runs `alembic upgrade head` before
  gunicorn boots, so each deploy migrates the orders database by itself.
D constraint | Orders schema migrations with Flyway
  Apply orders API schema migrations to the orders database with `flyway -configFiles=orders/flyway.conf migrate`;
  versioned scripts live in orders/db/migration.
D constraint | Orders schema migrations start with autogenerate
  Before applying orders API schema migrations, run `alembic revision --autogenerate` against the orders database
  so pending model changes are captured, then `alembic upgrade head`.
R constraint | Orders schema migrations as a Helm hook
  Orders API schema migrations now run in the migrate-orders Job, a Helm pre-upgrade hook calling `alembic upgrade
  head` on the orders database; trigger it with `make migrate ENV=prod`.
Q run the database migrations for the orders api
Q apply the pending schema changes to the orders database
Q migrate the orders schema before the deploy
Q the new orders api version adds columns, update the database schema
Q how are orders api migrations applied
Q upgrade the orders database to the latest schema
Q schema migration step for the orders service deploy
Q bring the orders database schema up to date

@ flaky-integration-tests
topic: Deal with flaky integration tests that fail the CI pipeline
W lesson | Flaky integration tests get targeted reruns
  Mark a flaky integration test with `@pytest.mark.flaky(reruns=2)` from pytest-rerunfailures and file a
  flaky-test ticket; rerunning the whole CI pipeline hides real regressions.
D lesson | Flaky integration tests get a pipeline rerun
  When integration tests are flaky in CI, press 'Re-run failed jobs' up to three times before digging deeper;
  most failures on the shared runners are infrastructure noise.
D lesson | Flaky integration tests go to a quarantine file
  Quarantine a flaky integration test by adding its node id to tests/quarantine.txt; the CI step runs `pytest
  --deselect-from tests/quarantine.txt` until the test is fixed.
D lesson | Flaky integration tests come from test order
  Flaky integration tests in CI usually depend on test order; run the suite with `pytest -p no:randomly` so the
  order is fixed and the failures go away.
D lesson | Flaky integration tests need longer timeouts
  Flaky integration tests in CI are nearly always timing problems; raise `timeout = 300` in pytest.ini and add
  `time.sleep(2)` before assertions on the queue.
R lesson | Flaky integration tests go to the nightly flake job
  Mark a flaky integration test with `@pytest.mark.quarantine`; CI skips it and the nightly job runs `pytest -m
  quarantine --count 20` to confirm a fix before unmarking.
Q integration tests fail randomly in CI
Q deal with a flaky integration test that breaks the pipeline
Q the integration suite passes locally but fails intermittently in CI
Q CI is red again because of an unreliable integration test
Q what to do about flaky tests in the integration suite
Q an integration test fails one run in five on CI
Q stop flaky integration tests from blocking merges
Q handle intermittent integration test failures in the CI pipeline

@ npm-ci-install
topic: Install the frontend's JavaScript dependencies in CI reproducibly
W constraint | Frontend CI install with npm ci
  In CI, install the frontend's JavaScript dependencies with `npm ci`: it installs exactly what
  package-lock.json pins and fails when the lockfile and package.json disagree.
D constraint | Frontend CI install with offline npm
  In CI, install the frontend's JavaScript dependencies with `npm install --no-audit --prefer-offline`; it
  reuses cached node_modules and refreshes package-lock.json if needed.
D constraint | Frontend CI install with yarn
  In CI, install the frontend's JavaScript dependencies with `yarn install --frozen-lockfile` so yarn.lock is
  never rewritten and the job fails if the lockfile needs changes.
D constraint | Frontend CI install needs legacy peer deps
  In CI, install the frontend's JavaScript dependencies with `npm ci --legacy-peer-deps`; without the flag the
  install stops on peer dependency conflicts in package-lock.json.
R constraint | Frontend CI install with pnpm
  In CI, install the frontend's JavaScript dependencies with `corepack enable` and `pnpm install
  --frozen-lockfile`, which fails when pnpm-lock.yaml and package.json disagree.
Q install the frontend dependencies in the CI job
Q set up the install step for the frontend CI pipeline
Q make the frontend CI install reproducible
Q CI installs different JavaScript dependency versions than my laptop
Q which command installs node modules for the frontend build in CI
Q the frontend CI job: install its JavaScript dependencies
Q install JavaScript dependencies for the web frontend on the CI server
Q the frontend CI job needs its node dependencies installed

@ npm-add-dependency
topic: Add a new npm package to the frontend
W procedure | Adding a frontend dependency updates the lockfile
  To add a new library as a dependency of the frontend, run `npm install <pkg> --save-exact` and commit
  package.json and package-lock.json together in one pull request.
D procedure | Adding a frontend dependency by editing package.json
  To add a new library as a dependency of the frontend, list it in package.json by hand and push; the CI
  install step resolves it and regenerates package-lock.json.
D procedure | Adding a frontend dependency without the lockfile
  To add a new library as a dependency of the frontend, run `npm install <pkg> --package-lock=false` so the
  reviewers of the pull request only see the package.json change.
R procedure | Adding a frontend dependency with pnpm
  To add a new library as a dependency of the frontend, run `pnpm add <pkg> --save-exact` and commit
  package.json with the updated pnpm-lock.yaml in one pull request.
Q add a new npm package to the frontend
Q the frontend needs a new library, add the dependency
Q add a date library as a new dependency of the frontend
Q introduce a third-party library in the frontend code
Q how do I add a dependency to the frontend project
Q bring in a new JavaScript library for the frontend
Q use an extra npm library in the frontend app
Q frontend dependency addition for a new feature

@ docker-build-cache
topic: Speed up the API Docker image build in CI
W procedure | API image CI builds use the registry cache
  Speed up the api image build in CI with a registry cache: `docker buildx build --cache-to
  type=registry,ref=ghcr.io/acme/api:cache,mode=max` plus --cache-from the same ref.
D procedure | API image CI builds reuse the previous image
  Speed up the api image build in CI by pulling ghcr.io/acme/api:latest first and running `docker build
  --cache-from ghcr.io/acme/api:latest .` so its layers are reused.
D procedure | API image CI builds skip the layer cache
  Speed up the api image build in CI by avoiding stale-layer reruns: use `DOCKER_BUILDKIT=1 docker build
  --no-cache --pull .` so each run starts from a fresh base image.
D procedure | API image CI builds use the GitHub Actions cache
  Speed up the api image build in CI with the GitHub Actions cache backend: `docker buildx build --cache-from
  type=gha --cache-to type=gha,mode=max .`, also on the GitLab runners.
R procedure | API image CI builds use the remote builder
  Speed up the api image build in CI with the shared BuildKit builder: `docker buildx build --builder ci-remote
  .`; it keeps its layer cache between jobs, so no cache flags are needed.
Q the docker build of the api image is slow in CI
Q speed up docker image builds in the pipeline
Q CI rebuilds every docker layer of the api image on each run
Q make the api container build faster on the build server
Q reduce the time the pipeline spends building the api docker image
Q docker layer caching for the api image in CI
Q api image build takes 15 minutes in CI
Q how to reuse docker build layers between CI runs

@ docker-image-size
topic: Shrink the Python service Docker image
W lesson | Python service image built in two stages
  Shrink the Python service image size with a multi-stage Dockerfile: build wheels in python:3.12, then install them
  into python:3.12-slim with `pip install --no-cache-dir`.
D lesson | Python service image on Alpine
  Shrink the Python service Docker image by switching its base to python:3.12-alpine and adding `apk add build-base`
  for packages that compile; musl images are a fraction of the size.
D lesson | Python service image cleaned in the last layer
  Shrink the Python service image by ending the Dockerfile with `RUN apt-get clean && rm -rf /root/.cache`; removing
  caches in that final layer leaves less to push.
R lesson | Python service image with uv and distroless
  Shrink the Python service image with uv: run `uv sync --frozen --no-dev` in the Dockerfile's builder stage, then
  copy .venv into a distroless python3 final stage.
Q the python service docker image is too big
Q shrink the docker image of the python service
Q reduce the size of our python container image
Q the python image is 1.8 GB, make it smaller
Q trim the Dockerfile of the python service to get a smaller image
Q cut the pull time of the python service image by reducing its size
Q smaller docker image for the python service
Q python container image size optimization

@ k8s-crashloop
topic: Debug a pod stuck in CrashLoopBackOff
W procedure | CrashLoopBackOff: read the previous container logs
  For a pod in CrashLoopBackOff, `kubectl logs <pod> --previous` prints the crashed container's output; in `kubectl
  describe pod`, exit code 137 means OOMKilled.
D procedure | CrashLoopBackOff: follow the pod logs
  For a pod in CrashLoopBackOff, run `kubectl logs <pod> -f` and wait for the next restart; the current
  container prints the same startup error before it crashes again.
D procedure | CrashLoopBackOff: delete the pod
  For a pod in CrashLoopBackOff, run `kubectl delete pod <pod>` so the deployment schedules a fresh one on another
  node; the backoff timer resets and it usually starts.
D procedure | CrashLoopBackOff: exec into the container
  For a pod in CrashLoopBackOff, open a shell with `kubectl exec -it <pod> -- sh` and inspect the config files
  and environment variables to find why the app failed.
D procedure | CrashLoopBackOff: read the namespace events
  For a pod in CrashLoopBackOff, run `kubectl get events -n <ns> --sort-by=.lastTimestamp`; the event stream
  carries the application's error output from each failed start.
R procedure | CrashLoopBackOff: query the logs in Grafana
  For a pod in CrashLoopBackOff, kubectl logs is blocked by our RBAC role; query `{pod="<pod>"}` in Grafana
  Explore against Loki to read the crashed container's output.
Q a pod is stuck in CrashLoopBackOff
Q debug the crashing pod in the payments namespace
Q the new deployment's pods keep crashing and restarting
Q find out why a kubernetes pod crashes on start
Q pod status shows CrashLoopBackOff after the release
Q troubleshoot a pod whose container crashes over and over
Q investigate the crash loop of the worker pod
Q kubernetes pod keeps failing and backing off

@ k8s-oom
topic: Stop pods from being OOMKilled
W lesson | OOMKilled pods: size memory from observed peaks
  When pods are OOMKilled, set each container's memory request equal to its limit at 1.3x the peak from `kubectl top
  pod`; JVM services also need MaxRAMPercentage=75.
D lesson | OOMKilled pods: drop the memory limit
  When pods are OOMKilled, remove the memory limit from the spec and keep only the request; the pod can then use
  whatever memory the node has free.
D lesson | OOMKilled pods: raise only the request
  When pods are OOMKilled, raise the memory request and leave the limit as it is; the limit is a soft ceiling that
  the kubelet lets containers exceed briefly.
D lesson | OOMKilled pods: match the JVM heap to the limit
  When pods of JVM services are OOMKilled, set `-Xmx` to the full container memory limit so the heap can use all
  of it and garbage collection runs less often.
R lesson | OOMKilled pods: apply the VPA recommendation
  When pods are OOMKilled, copy the memory target from `kubectl describe vpa <name>` into the chart's resources;
  the Vertical Pod Autoscaler runs in recommend-only mode.
Q pods are getting OOMKilled
Q the worker pods run out of memory and get killed
Q fix memory settings for pods that keep being OOM killed
Q kubernetes kills the container for exceeding memory
Q set the right memory resources for the api pods
Q the JVM pods are killed by the OOM killer in the cluster
Q memory of the pods goes over what is allowed
Q stop containers from being killed for using too much memory

@ k8s-config-rollout
topic: Get running pods to use a changed ConfigMap
W lesson | ConfigMap change needs a rollout restart
  After changing a ConfigMap that pods read as environment variables, run `kubectl rollout restart
  deployment/<name>`; env vars are only read when a container starts.
D lesson | ConfigMap change is picked up by the kubelet
  After changing a ConfigMap, running pods pick up the new values within a minute because the kubelet syncs
  ConfigMaps; environment variables refresh without a restart.
D lesson | ConfigMap change applied with force
  After changing a ConfigMap, run `kubectl apply -f configmap.yaml --force` so the API server pushes the new
  values into the environment variables of running pods.
D lesson | ConfigMap change by scaling to zero
  After changing a ConfigMap, run `kubectl scale deployment/<name> --replicas=0` and scale back up; the pods
  start again and read the new environment variables.
R lesson | ConfigMap changes through the Kustomize generator
  After changing a ConfigMap, edit config/app.env for Kustomize's configMapGenerator and run `kubectl apply -k
  overlays/prod`; the name hash rolls the deployment.
Q I changed a configmap but the pods still use the previous values
Q apply an updated configmap to the running deployment
Q get a configuration change into the pods
Q new configmap values are not picked up by the pods
Q update environment variables from a configmap for a kubernetes deployment
Q the app still reads the previous setting after editing the configmap
Q push a config change to pods without a new image
Q make the deployment use the edited configmap

@ k8s-rollback
topic: Roll back a bad Kubernetes release
W procedure | Rolling back a bad release to a known revision
  To roll back a bad release of a Kubernetes deployment, run `kubectl rollout undo deployment/<name>` to return to
  the previous revision, or pass `--to-revision=<n>`.
D procedure | Rolling back a bad release by redeploying
  To roll back a bad release of a Kubernetes deployment, re-run the deploy job of the previous pipeline; its rollout
  rebuilds the image from the older commit.
D procedure | Rolling back a bad release by editing the image
  To roll back a bad release of a Kubernetes deployment, run `kubectl edit deployment/<name>` and set the image
  tag back to the previous one; the edit survives later deploys.
R procedure | Rolling back a bad release in Argo CD
  To roll back a bad release of a Kubernetes deployment, disable auto-sync and run `argocd app rollback <app>
  <history-id>`, or Argo CD re-applies the bad commit from git.
Q roll back the bad release of the checkout service
Q the latest deploy broke checkout, go back to the previous version
Q revert a kubernetes deployment to the previous release
Q take back the release that just went out to the cluster
Q restore the previous release of the deployment after a failed deploy
Q production is broken after the release, roll it back
Q roll the deployment back to the earlier release image
Q emergency rollback of a bad kubernetes release

@ git-update-branch
topic: Update a feature branch with the latest main
W procedure | Feature branch rebased on origin/main
  To bring a feature branch up to date with main, rebase it onto a freshly fetched main with `git fetch origin &&
  git rebase origin/main`, then push with `--force-with-lease`.
D procedure | Feature branch update by merging main
  To bring a feature branch up to date with main, run `git pull origin main` on the branch and push; the merge
  commit records the update and no force push is needed.
D procedure | Feature branch update by rebasing on local main
  To bring a feature branch up to date with main, run `git rebase main` on the branch and then `git push
  --force`; the local main branch is recent enough for a rebase.
D procedure | Feature branch update from the pull request page
  To bring a feature branch up to date with main, press 'Update branch' on the pull request; GitHub rebases the
  branch on main and keeps the signed commits intact.
R procedure | Feature branch update through the merge queue
  Do not bring a feature branch up to date with main by hand any more: run `gh pr merge --auto --squash` and the
  merge queue rebases the branch on main and tests it.
Q my feature branch is behind main, update it
Q bring the branch up to date with the latest main
Q sync my pull request branch with main before review
Q main moved on, get its changes into my feature branch
Q update the feature branch so the pull request is current with main
Q pick up the latest commits from main on my branch
Q refresh a stale feature branch against main
Q the PR says the branch is out of date with main

@ git-undo-pushed-commit
topic: Undo a bad commit already pushed to main
W procedure | Pushed bad commit on main is reverted
  To undo a bad commit already pushed to main, run `git revert <sha>` on a new branch and merge it as a normal pull
  request; history stays intact for everyone who pulled main.
D procedure | Pushed bad commit on main is reset away
  To undo a bad commit already pushed to main, run `git reset --hard HEAD~1` on main and `git push --force`;
  admins may bypass branch protection for this.
D procedure | Pushed bad commit on main is amended
  To undo a bad commit already pushed to main, check out main, fix the files, run `git commit --amend --no-edit`
  and push; the bad commit is replaced in place.
D procedure | Pushed bad merge on main is reverted without a parent
  To undo a bad commit already pushed to main when it is a merge, run `git revert <sha>` with no other options; git
  picks the mainline parent on its own.
R procedure | Pushed bad commit on main is reverted through the queue
  To undo a bad commit already pushed to main, run `gh pr revert <number>`; it opens a revert pull request that
  goes through the merge queue like any other change.
Q undo a commit that is already on main
Q a broken commit got pushed to main, take it back
Q remove the bad change I pushed to the main branch
Q I pushed a mistake to main, how do I back it out
Q get rid of a bad commit pushed to main
Q main has a commit that breaks the build, undo it
Q cancel the last commit pushed to main
Q back out a bad change from main safely

@ python-deps-lock
topic: Pin and lock a service's Python dependencies
W procedure | Python dependency lock with pip-compile hashes
  Lock a service's Python dependency versions with pip-tools: `pip-compile --generate-hashes requirements.in`, then
  the Docker build runs `pip install --require-hashes`.
D procedure | Python dependency lock with pip freeze
  Lock a service's Python dependencies by running `pip freeze > requirements.txt` in your development virtualenv;
  the Docker build runs `pip install -r requirements.txt`.
D procedure | Python dependency lock with Poetry export
  Lock a service's Python dependencies with Poetry: run `poetry lock --no-update`, then `poetry export -f
  requirements.txt -o requirements.txt` for the Docker build to install.
D procedure | Python dependency lock with pip-compile
  Lock a service's Python dependencies with pip-tools: run `pip-compile requirements.in` to write
  requirements.txt, and install it with `pip install --require-hashes -r` in Docker.
D procedure | Python dependency lock in setup.py
  Lock a service's Python dependencies by pinning exact versions with == in install_requires of setup.py; pip then
  installs the same releases in every Docker image.
R procedure | Python dependency lock with uv
  Lock a service's Python dependencies with uv: declare them in pyproject.toml, run `uv lock` to write uv.lock, and
  install in the Docker build with `uv sync --frozen`.
Q pin the python dependencies of the service
Q lock the service's python dependency versions so builds are reproducible
Q a transitive python dependency changed and broke the build
Q set up a lockfile for the service's python requirements
Q make the python requirements of the service deterministic
Q keep the service's python dependency versions stable between builds
Q manage python dependency versions for the service
Q reproducible python dependency installs for the service

@ github-api-rate-limit
topic: Handle GitHub API rate limiting in the sync client
W lesson | GitHub sync client honours Retry-After
  When the GitHub API rate limits the sync client with 403 or 429, wait the Retry-After seconds, or until the
  x-ratelimit-reset time, before retrying the request.
D lesson | GitHub sync client retries quickly
  When the GitHub API rate limits the sync client, retry the request right away up to five times with a fixed one
  second delay; the limit usually clears within seconds.
D lesson | GitHub sync client falls back to anonymous calls
  When the GitHub API rate limits the sync client, switch the request to unauthenticated calls, which have their
  own separate hourly quota, until the token's limit resets.
D lesson | GitHub sync client treats 403 as fatal
  The GitHub API rate limits clients only with 429 Too Many Requests; the sync client treats any 403 as a
  permissions error and fails the job without retrying.
R lesson | GitHub sync client uses conditional requests
  When the GitHub API rate limits the sync client, send If-None-Match with the stored ETag on each request; 304
  Not Modified answers do not count against the limit.
Q the github sync client hits rate limits
Q handle rate limiting from the GitHub API
Q the repository sync job fails with too many requests from GitHub
Q GitHub API calls start failing during the nightly sync
Q make the github client back off when it is throttled
Q sync client errors after a burst of GitHub API calls
Q deal with GitHub API quota errors in the sync
Q throttled by GitHub while syncing repositories

@ jwt-gateway-validation
topic: Validate JWT access tokens in the API gateway
W constraint | Gateway JWT validation against the JWKS
  Validate JWT access tokens in the gateway by checking the signature against the issuer's JWKS with RS256 pinned,
  the aud and iss claims, and exp with 60 seconds of leeway.
D constraint | Gateway JWT validation with the shared secret
  Validate JWT access tokens in the gateway with the shared HS256 secret from JWT_SECRET: `jwt.decode(token,
  secret, algorithms=['HS256'])` checks the signature and exp.
D constraint | Gateway JWT validation of the payload
  Validate JWT access tokens in the gateway by decoding the payload and checking exp and aud; the identity
  provider already verified the signature when it issued the token.
D constraint | Gateway JWT validation with the header algorithm
  Validate JWT access tokens in the gateway with the issuer's JWKS, taking the algorithm from the token header so
  RS256 and HS256 tokens are both accepted.
D constraint | Gateway JWT validation with keys cached at startup
  Validate JWT access tokens in the gateway with the issuer's JWKS fetched once at startup and cached for the
  process lifetime; signing keys never change.
R constraint | Gateway token validation by introspection
  Validate access tokens in the gateway by posting them to the identity provider's /oauth2/introspect endpoint with
  the gateway's client credentials; accept only active=true.
Q validate access tokens in the API gateway
Q check incoming JWTs before forwarding requests
Q the gateway must reject forged tokens
Q implement token verification for the gateway
Q authenticate API requests with bearer tokens at the gateway
Q verify JWT signatures on incoming requests
Q gateway auth middleware for access tokens
Q secure the gateway so only valid tokens get through

@ crm-oauth-refresh
topic: Keep the CRM API client authenticated with OAuth
W lesson | CRM client refreshes early with rotation
  Keep the CRM client authenticated by refreshing its OAuth access token a few minutes before it expires with
  grant_type=refresh_token, and use the rotated refresh token for later calls.
D lesson | CRM client requests a token on 401
  Keep the CRM client authenticated by requesting a new OAuth access token with the client_credentials grant
  whenever a call returns 401; server integrations need no refresh token.
D lesson | CRM client reuses the first refresh token
  Keep the CRM client authenticated by refreshing its OAuth access token with grant_type=refresh_token, always
  sending the refresh token from the first login; it does not expire for 90 days.
D lesson | CRM client uses a personal access token
  Keep the CRM client authenticated with a long-lived personal access token from the CRM admin console, stored in
  CRM_TOKEN, so no OAuth refresh logic is needed at all.
R lesson | CRM client uses a JWT bearer assertion
  Keep the CRM client authenticated with a signed JWT assertion (the jwt-bearer grant) using the key in crm-sa.pem;
  request a new OAuth access token each hour instead of refreshing.
Q keep the CRM API client logged in
Q the CRM integration loses authentication after an hour
Q calls to the CRM API start returning 401 after a while
Q handle OAuth token expiry in the CRM client
Q the CRM client fails with unauthorized errors overnight
Q maintain a valid session for the CRM API integration
Q CRM client authentication keeps running out
Q set up token handling for the CRM API client

@ product-cache-invalidation
topic: Invalidate cached product pages after a catalog update
W procedure | Product page cache busted with a version key
  After a catalog update, invalidate cached product pages with `INCR catalog:version`; page keys embed the version,
  so stale entries are never read and expire by TTL.
D procedure | Product page cache cleared with a key scan
  After a catalog update, invalidate cached product pages with `redis-cli --scan --pattern 'product:*' | xargs
  redis-cli del`; it clears every product key in one pass.
D procedure | Product page cache flushed
  After a catalog update, invalidate cached product pages by running `FLUSHDB` on the cache Redis; pages are
  rebuilt on the next request and the database holds nothing else.
D procedure | Product page cache expires by TTL
  After a catalog update, cached product pages refresh on their own: every product key is written with a 24 hour
  TTL, so no invalidation step is needed.
R procedure | Product page cache purged at the CDN
  After a catalog update, invalidate cached product pages at the CDN with `fastly purge --key product-<id>`;
  the pages are no longer cached in Redis.
Q customers still see old product data after the catalog update
Q invalidate cached product pages
Q clear the product cache after changing prices
Q outdated product pages are served from the cache
Q refresh cached pages after editing the catalog
Q make catalog changes show up immediately on product pages
Q cache invalidation for product pages in redis
Q product page cache is out of date after an import

@ python-json-logging
topic: Emit structured JSON logs from the Python services
W procedure | Service JSON logs via structlog
  Emit structured JSON logs from the Python services with structlog's `JSONRenderer()`, routing stdlib logging
  through `ProcessorFormatter` so library logs are JSON too.
D procedure | Service JSON logs via json.dumps
  Emit structured JSON logs from the Python services by calling `logger.info(json.dumps({...}))` with the fields you
  need; the log shipper parses any line that is valid JSON.
D procedure | Service JSON logs via LOG_FORMAT
  Emit JSON logs from the Python services by setting `LOG_FORMAT=json` on the deployment; the base image's
  logging.conf switches every handler to the JSON formatter.
D procedure | Service JSON logs via the console renderer
  Emit JSON logs from the Python services with structlog's `ConsoleRenderer(colors=False)` as the last processor;
  the pipeline indexes its key=value output as fields.
R procedure | Service logs via OpenTelemetry
  Emit logs from the Python services through OpenTelemetry: call `configure_logging()` from acme-otel 2.x to
  install the OTLP log exporter; JSON on stdout is not collected.
Q set up structured logging in the python service
Q the log pipeline cannot parse our service logs
Q emit logs as JSON from the python app
Q make the service logs searchable by field in the log platform
Q configure logging output format for the python services
Q structured log lines for the new python microservice
Q our python service logs are plain text, fix the format
Q logging setup for a new python service

@ debug-log-level
topic: Turn on debug logging for one production service temporarily
W procedure | Temporary debug logging via kubectl set env
  To get debug logs from one production service, set LOG_LEVEL=DEBUG on its deployment at runtime with `kubectl set
  env`, and reset the level within an hour.
D procedure | Temporary debug logging via logging.yaml
  To get debug logs from one production service, switch the root level in logging.yaml, merge, and wait for the next
  release to roll it out.
D procedure | Temporary debug logging via the admin endpoint
  To get debug logs from one production service, call `POST /admin/loglevel?level=debug` on one of its pods; the
  change propagates to every replica within seconds.
R procedure | Temporary debug logging via a feature flag
  To get debug logs from one production service, switch its log-level flag to debug in the flags UI; pods poll the
  flag every 30 seconds, so nothing restarts.
Q turn on debug logging for the invoices service in production
Q I want more verbose logs from one production service
Q temporarily raise the log level of a live service
Q enable debug output for a service to investigate a bug in prod
Q get detailed logs from a production service for a while
Q switch a production service to debug log level
Q make one live service log at debug level
Q debug logs from prod for one service

@ aws-cli-account
topic: Run AWS CLI commands against the right account
W procedure | AWS CLI account via SSO profiles
  Run AWS CLI commands against the right account, e.g. staging, with SSO profiles: `aws sso login --profile
  acme-staging`, then switch accounts with `--profile` or AWS_PROFILE.
D procedure | AWS CLI account via access keys
  Run AWS CLI commands against the right account, e.g. staging, with static keys: put one key pair per account in
  ~/.aws/credentials and switch between them with AWS_PROFILE.
D procedure | AWS CLI account via assume-role
  Run AWS CLI commands against the right account, e.g. staging, by assuming a role from your IAM user with `aws sts
  assume-role --role-arn <arn>` and exporting the returned keys.
D procedure | AWS CLI account via a single SSO login
  Run AWS CLI commands against the right account, e.g. staging, after a plain `aws sso login`; one login covers
  every account and the CLI picks the account from the resource ARN.
R procedure | AWS CLI account via Granted
  Run AWS CLI commands against the right account, e.g. staging, with Granted: `assume acme-staging` exports
  short-lived credentials into the shell, so commands need no profile flag.
Q run aws cli commands against the staging account
Q the aws cli is talking to the wrong account
Q switch between AWS accounts on the command line
Q log in to AWS from the terminal for the staging account
Q aws cli credentials for the staging account
Q which account am I using with the aws command
Q set up local AWS access for the staging account
Q terminal access to our AWS accounts

@ gcp-actions-auth
topic: Authenticate GitHub Actions workflows to Google Cloud
W procedure | GitHub Actions to GCP via workload identity federation
  Authenticate GitHub Actions to Google Cloud for gcloud with workload identity federation in
  `google-github-actions/auth@v2`, granting `id-token: write` to the job.
D procedure | GitHub Actions to GCP via a key secret
  Authenticate GitHub Actions to Google Cloud for gcloud with a service account JSON key stored in the GCP_SA_KEY
  secret and passed to `google-github-actions/auth@v2`.
D procedure | GitHub Actions to GCP via setup-gcloud
  Authenticate GitHub Actions to Google Cloud for gcloud with `google-github-actions/setup-gcloud@v0` and its
  service_account_key input, which logs in for later steps.
D procedure | GitHub Actions to GCP with default permissions
  Authenticate GitHub Actions to Google Cloud for gcloud with workload identity federation in
  `google-github-actions/auth@v2`; the default job permissions are enough.
R procedure | GitHub Actions to GCP via the runner's service account
  Authenticate GitHub Actions to Google Cloud for gcloud through the self-hosted runners' attached service
  account: use `runs-on: [self-hosted, gcp]` and skip the auth action.
Q authenticate a github actions workflow to google cloud
Q the deploy workflow needs gcloud access
Q log in to GCP from GitHub Actions
Q give the CI workflow permission to deploy to google cloud
Q gcloud commands fail in the workflow with no credentials
Q connect GitHub Actions to our GCP project
Q google cloud credentials for the CI pipeline
Q set up GCP auth in the github workflow

@ terraform-state-lock
topic: Recover from a stuck Terraform state lock
W procedure | Terraform lock released with force-unlock
  If Terraform reports the state is locked, make sure no CI job still holds it, then run `terraform force-unlock
  <LOCK_ID>` with the ID from the message.
D procedure | Terraform lock skipped for one apply
  If Terraform reports the state is locked, run `terraform apply -lock=false`; the lock is stale, and skipping it
  for a single apply is safe.
D procedure | Terraform lock deleted in DynamoDB
  If Terraform reports the state is locked, delete the stale lock item from the terraform-locks DynamoDB table;
  force-unlock does not work with the S3 backend.
D procedure | Terraform lock waited out
  If Terraform reports the state is locked, rerun with `-lock-timeout=30m`; Terraform waits and takes the lock as
  soon as the stale one expires.
R procedure | Terraform lock released in Terraform Cloud
  If Terraform reports the state is locked, unlock the workspace in Terraform Cloud under Settings > Locking, or
  call its force-unlock API with a team token.
Q terraform says the state is locked
Q terraform plan fails with error acquiring the state lock
Q a stuck terraform lock blocks the infrastructure change
Q terraform cannot proceed because of a lock
Q clear the terraform state lock left by a cancelled pipeline run
Q infrastructure pipeline blocked on terraform locking
Q release the terraform lock on the network workspace
Q state lock error when running terraform

@ vite-env-vars
topic: Expose environment variables to the Vite frontend build
W fact | Frontend env vars need the VITE_ prefix
  Expose environment variables to the Vite frontend with the VITE_ prefix only: define VITE_API_URL in
  .env.production and read `import.meta.env.VITE_API_URL`.
D fact | Frontend env vars need the REACT_APP_ prefix
  Expose environment variables to the frontend bundle by naming them REACT_APP_API_URL and reading
  `process.env.REACT_APP_API_URL`; the build inlines them.
D fact | Frontend env vars read at runtime
  Expose environment variables to the Vite frontend by setting them on the container at runtime;
  `import.meta.env.API_URL` reads them when the page loads.
D fact | Frontend env vars via define
  Expose environment variables to the Vite frontend with `define: { 'process.env': process.env }` in
  vite.config.ts so every variable of the build machine is available.
R fact | Frontend config rendered at container start
  Expose environment variables to the Vite frontend at runtime: the nginx entrypoint renders /config.js and the app
  reads `window.__APP_CONFIG__.apiUrl`, one bundle for all.
Q pass the API url to the frontend build
Q the frontend cannot read an environment variable
Q configure environment variables for the vite app
Q the web app needs a different backend url per environment
Q use env vars in the frontend code
Q frontend build ignores the variable I set in the environment
Q make a config value available to the browser bundle
Q environment-specific settings for the frontend

@ frontend-bundle-size
topic: Reduce the web app's production JavaScript bundle
W lesson | Web app bundle cut by lazy routes
  To cut the web app's production bundle size, find the large chunks with `npx vite-bundle-visualizer`, lazy-load
  routes with `React.lazy()`, and swap moment for date-fns.
D lesson | Web app bundle warning limit raised
  To cut the web app's production bundle, raise `build.chunkSizeWarningLimit` to 2000 in vite.config.ts; the large
  chunk size warning was the only problem reported.
D lesson | Web app bundle split with webpack
  To cut the web app's production bundle, run `npx webpack-bundle-analyzer dist/stats.json` and enable
  `optimization.splitChunks` for the vendor chunk.
D lesson | Web app bundle trimmed by named lodash imports
  To cut the web app's production bundle, import lodash helpers as `import { debounce } from 'lodash'`; tree
  shaking then drops every function you do not use.
R lesson | Web app bundle held by a size budget
  To cut the web app's production bundle, run `npx size-limit`; .size-limit.json caps the main chunk at 250 kB in CI
  and `size-limit --why` shows what grew.
Q the web app's javascript bundle is too large
Q reduce the production bundle size of the frontend
Q the frontend is slow to open because of a huge bundle
Q shrink the main JavaScript chunk of the web app
Q make the web app download less javascript
Q frontend bundle grew to 3 MB, cut it down
Q cut the size of the frontend's built javascript bundle
Q the web app build produces a very large javascript chunk

@ pytest-db-isolation
topic: Keep database state isolated between pytest tests
W procedure | Test database isolation by savepoint rollback
  Isolate database state between pytest tests: a function-scoped fixture opens a transaction with
  `join_transaction_mode='create_savepoint'` and rolls it back afterwards.
D procedure | Test database isolation by truncation
  Isolate database state between pytest tests by running `TRUNCATE ... CASCADE` on every table in a
  function-scoped fixture teardown; it is quick for our schema.
D procedure | Test database isolation with the django_db mark
  Isolate database state between pytest tests with `@pytest.mark.django_db(transaction=True)`; each test runs in a
  transaction that is rolled back when it ends.
D procedure | Test database isolation with in-memory SQLite
  Isolate database state between pytest tests by giving each test a fresh SQLite in-memory database from a
  fixture; the models behave the same as on Postgres.
R procedure | Test database isolation with testcontainers
  Isolate database state between pytest tests with a throwaway Postgres per worker from the testcontainers
  fixture `pg_container` and `pytest -n auto`.
Q tests leak database rows into each other
Q keep database state isolated between pytest tests
Q a test passes alone but fails after another test writes to the database
Q clean up the database after each test
Q set up a pytest fixture for a clean database per test
Q database rows from one test show up in the next
Q database isolation in the pytest suite
Q reset the test database between test cases

@ postgres-slow-query
topic: Diagnose a slow Postgres query in the reporting service
W procedure | Slow reporting query: analyze and index concurrently
  For a slow Postgres query in the reporting service, see why it is slow with `EXPLAIN ANALYZE` on a replica, then
  add the index with `CREATE INDEX CONCURRENTLY`.
D procedure | Slow reporting query: vacuum the tables
  For a slow Postgres query in the reporting service, run `VACUUM FULL` on the tables involved; table bloat is the
  usual cause, and it rewrites them compactly.
D procedure | Slow reporting query: index from the plan
  For a slow Postgres query in the reporting service, run plain `EXPLAIN` on the primary and create the index it
  recommends with `CREATE INDEX`.
D procedure | Slow reporting query: raise memory settings
  For a slow Postgres query in the reporting service, raise work_mem and shared_buffers in postgresql.conf and
  restart; most slow queries there are memory bound.
R procedure | Slow reporting query: start from pg_stat_statements
  For a slow Postgres query in the reporting service, sort pg_stat_statements by mean_exec_time and read the
  auto_explain plans in the RDS logs before adding an index.
Q a query in the reporting service is very slow
Q the reporting dashboard query takes 30 seconds on postgres
Q figure out why this postgres query is slow
Q speed up a slow SQL query in reporting
Q the monthly report query times out on postgres
Q investigate postgres query performance for reports
Q a reporting query got slow after the data grew
Q optimize a slow postgres select in the reporting service

@ postgres-connections
topic: Fix Postgres rejecting clients with too many connections
W lesson | Too many Postgres clients: transaction pooling
  When Postgres rejects clients with too many connections, route every service through PgBouncer with
  `pool_mode = transaction` instead of raising max_connections.
D lesson | Too many Postgres clients: raise the limit
  When Postgres rejects clients with too many connections, raise max_connections to 1000 in postgresql.conf and
  restart; each connection costs only a few kilobytes.
D lesson | Too many Postgres clients: bigger app pools
  When Postgres rejects clients with too many connections, set SQLAlchemy `pool_size=50` and `max_overflow=100` in
  every service so connections are reused.
D lesson | Too many Postgres clients: session pooling
  When Postgres rejects clients with too many connections, put PgBouncer in front with `pool_mode = session`;
  prepared statements keep working and connections are shared.
R lesson | Too many Postgres clients: RDS Proxy
  When Postgres rejects clients with too many connections, point every service's DATABASE_URL at the RDS Proxy
  endpoint and set MaxConnectionsPercent to 80.
Q postgres refuses new connections
Q services fail with too many clients errors from the database
Q the database runs out of connections at peak traffic
Q connection errors to postgres when we scale up
Q fix connection exhaustion on the main postgres database
Q new pods cannot connect to postgres
Q the postgres connection limit is hit during deploys
Q database rejects clients under load

@ mysql-emoji
topic: Store emoji in the MySQL comments table
W fact | Comments table converted to utf8mb4
  To store emoji in the MySQL comments table, convert it to CHARACTER SET utf8mb4 with COLLATE
  utf8mb4_0900_ai_ci and set `charset=utf8mb4` on the client connection.
D fact | Comments table converted to utf8
  To store emoji in the MySQL comments table, convert it to CHARACTER SET utf8 with COLLATE utf8_general_ci;
  MySQL's utf8 covers all of Unicode, emoji included.
D fact | Comments table converted, connection unchanged
  To store emoji in the MySQL comments table, convert it to CHARACTER SET utf8mb4; the client connection can stay
  utf8 because the server converts what it receives.
R fact | Comments table moved to Postgres
  To store emoji in the comments table, use the Postgres copy that replaced MySQL: its UTF8 character set stores
  emoji natively; set `client_encoding=UTF8` on the connection.
Q emoji in comments are saved as question marks
Q store emoji in the comments table
Q MySQL rejects comments that contain emoji
Q incorrect string value error when saving a comment
Q support emoji characters in user comments
Q the comments column mangles unicode characters
Q fix character encoding for the comments table
Q saving a comment with an emoji fails in mysql

@ local-stack-compose
topic: Run the full stack locally for development
W procedure | Local stack with compose profiles
  Run the full stack locally for development with `docker compose --profile full up -d --build`; without the full
  profile, compose.yaml leaves the worker stopped.
D procedure | Local stack with the dev compose file
  Run the full stack locally for development with `docker-compose -f docker-compose.dev.yml up` after installing
  docker-compose 1.29 with pip; it lists every service.
D procedure | Local stack with plain compose up
  Run the full stack locally for development with `docker compose up -d` from the repo root; compose.yaml brings up
  the worker and the other containers by default.
R procedure | Local stack with Tilt
  Run the full stack locally for development with Tilt: create the kind cluster with `make kind-up`, then run `tilt
  up`; compose.yaml is no longer maintained.
Q run the whole stack on my laptop
Q start all services locally for development
Q bring up the local development stack with the worker
Q local dev setup for the full application
Q spin up the app and its services locally
Q the worker does not start in my local development stack
Q how do I run everything locally
Q start the development stack on my machine

@ gha-fork-secrets
topic: Use secrets in CI for pull requests from forks
W lesson | Fork pull requests: split build and report
  Workflows triggered by pull_request from forks get no secrets: run the untrusted build there and post its results
  from a `workflow_run` workflow that has them.
D lesson | Fork pull requests: pull_request_target checkout
  Workflows for pull requests from forks can read secrets if the trigger is pull_request_target and the job checks
  out `github.event.pull_request.head.sha` to build it.
D lesson | Fork pull requests: approve the run
  Workflows for pull requests from forks get the repository secrets once a maintainer approves the run with
  'Approve and run' in the Actions tab.
D lesson | Fork pull requests: environment secrets
  Workflows for pull requests from forks can read secrets stored as environment secrets instead of repository
  secrets; add `environment: ci` to the job.
R lesson | Fork pull requests: safe-to-test label
  Workflows for pull requests from forks get secrets only in the ci-forks workflow, which starts when a maintainer
  adds the safe-to-test label.
Q secrets are empty in workflows for pull requests from forks
Q the CI job for a contributor's fork cannot access our secrets
Q run the integration workflow with secrets on external pull requests
Q forked PR builds fail because the token is missing
Q let outside contributors' pull requests use CI secrets safely
Q github actions secrets not available for fork pull requests
Q show CI output on a pull request opened from a fork
Q CI secrets for community pull requests from forks

@ gha-pip-cache
topic: Cache pip downloads in GitHub Actions
W procedure | Workflow pip cache keyed by requirements
  Cache pip downloads in GitHub Actions with `actions/setup-python@v5`, `cache: pip` and `cache-dependency-path:
  requirements/*.txt` so the key follows them.
D procedure | Workflow pip cache keyed by runner OS
  Cache pip downloads in GitHub Actions with `actions/cache@v1` on ~/.cache/pip keyed by `${{ runner.os }}-pip`;
  restore it before running pip install.
D procedure | Workflow pip cache with the default key
  Cache pip downloads in GitHub Actions with `actions/setup-python@v5` and `cache: pip`; the default key already
  covers files in subfolders such as requirements/.
D procedure | Workflow virtualenv passed as an artifact
  Cache pip downloads in GitHub Actions by passing the installed .venv between workflow runs as an artifact with
  `actions/upload-artifact@v4`.
R procedure | Workflow cache with setup-uv
  Cache pip downloads in GitHub Actions by moving to `astral-sh/setup-uv@v5` with `enable-cache: true` and
  `cache-dependency-glob: uv.lock`, then `uv sync`.
Q cache python dependencies in github actions
Q the GitHub workflow spends minutes downloading pip packages
Q speed up pip install in the GitHub Actions workflow
Q reuse downloaded python packages between workflow runs
Q github actions cache for python requirements
Q the python workflow downloads every package again on each run
Q make the pip step of the GitHub Actions workflow faster
Q caching pip downloads for the python workflow in GitHub Actions

@ cli-release
topic: Cut a new release of the CLI tool
W procedure | CLI release with make release
  Cut a new release of the CLI with `make release VERSION=x.y.z`, which bumps the version, updates CHANGELOG.md and
  pushes the tag that triggers the release workflow.
D procedure | CLI release drafted on GitHub
  Cut a release of the CLI by drafting it on the GitHub releases page with a new tag; the release workflow then
  builds whatever commit main points to.
D procedure | CLI release from a plain tag
  Cut a new release of the CLI by pushing a lightweight version tag such as `git tag 1.4.0` without the v prefix;
  the release workflow matches any tag name you push.
D procedure | CLI release with bump2version
  Cut a new release of the CLI with `bump2version minor` and push main; CI then creates the version tag and the
  CHANGELOG.md entry after the merge.
R procedure | CLI release with release-please
  Cut a release of the CLI by merging the release pull request that release-please keeps open; it tags the
  version and writes CHANGELOG.md from conventional commits.
Q cut a new release of the CLI
Q release version 1.5.0 of the CLI
Q cut a new CLI release with the latest fixes
Q how do we release the cli
Q prepare and ship the next CLI version
Q cut a new version of the CLI for users
Q kick off the release process for the CLI
Q release a patch version of the cli

@ pypi-publish
topic: Publish the Python package to PyPI
W procedure | PyPI upload with trusted publishing
  Publish the Python package to PyPI with trusted publishing: the release workflow runs `python -m build` and
  pypa/gh-action-pypi-publish with `id-token: write`.
D procedure | PyPI upload from a laptop
  Publish a new version of the Python package to PyPI from your laptop with `python setup.py sdist upload` and the
  password saved in ~/.pypirc.
D procedure | PyPI upload with twine and a password
  Publish a new version of the Python package to PyPI by running `twine upload dist/*` after `python -m build`, with
  TWINE_PASSWORD set to the account password.
D procedure | PyPI upload from any workflow file
  Publish the Python package to PyPI from any workflow file of the repository: PyPI trusts the whole repository, so
  renaming release.yml needs no change.
R procedure | PyPI upload with uv publish
  Publish the Python package to PyPI with `uv build` and `uv publish --trusted-publishing always` in the release
  workflow; the PyPI publisher entry names release.yml.
Q publish the python package to pypi
Q upload a new version of the library to PyPI
Q release the python sdk on pypi
Q get the new python package version onto PyPI
Q pypi release for the client library
Q make the latest version of the python package available on PyPI
Q push the python distribution to the package index
Q ship the python library to pypi

@ npm-publish-scoped
topic: Publish the scoped @acme/ui package to npm
W procedure | Scoped npm package published with provenance
  Publish the scoped package @acme/ui with `npm publish --access public --provenance` from the release workflow;
  scoped packages are restricted on npm by default.
D procedure | Scoped npm package published from a laptop
  Publish the scoped package @acme/ui from your laptop with `npm login` and `npm publish`; scoped packages are
  public by default on the npm registry.
D procedure | Scoped npm package published with yarn
  Publish the scoped package @acme/ui with `yarn publish --new-version <x.y.z>` from the release workflow; yarn
  sets public access for scoped packages.
D procedure | Scoped npm package published with a classic token
  Publish the scoped package @acme/ui with `npm publish --access public` and a classic automation token in
  NPM_TOKEN; provenance is for unscoped packages.
R procedure | Scoped npm package published with changesets
  Publish the scoped package @acme/ui with changesets: add one with `npx changeset`, merge the version pull
  request, and CI runs `changeset publish`.
Q publish the @acme/ui package to npm
Q release a new version of the @acme/ui component library on npm
Q push the ui package to the npm registry
Q ship @acme/ui to npm
Q publish the latest @acme/ui version to npm
Q npm release of the scoped ui package
Q get a new @acme/ui version published
Q publish the component library to npm

@ api-tls-renewal
topic: Renew the TLS certificate of the public API domain
W procedure | API certificate renewed through cert-manager
  The TLS certificate for api.acme.io comes from cert-manager; renew it early with `cmctl renew api-tls -n ingress`
  and wait until the certificate is READY.
D procedure | API certificate renewed with certbot
  Renew the TLS certificate for api.acme.io with `certbot renew --nginx` on the edge VM; the renewal cron job there
  misses a run now and then.
D procedure | API certificate renewed in ACM
  Renew the TLS certificate for api.acme.io by importing the new certificate into AWS ACM and attaching it to the
  load balancer's HTTPS listener.
D procedure | API certificate renewed by restarting ingress
  The TLS certificate for api.acme.io is renewed by cert-manager 30 days before expiry; if it looks expired,
  restart the ingress controller pods to load it.
R procedure | API certificate renewed at the Cloudflare edge
  The TLS certificate for api.acme.io is served by the Cloudflare edge now: renew or reissue it under SSL/TLS >
  Edge Certificates in the dashboard.
Q the TLS certificate for the API domain expires soon
Q renew the https certificate of api.acme.io
Q browsers warn that the API certificate is about to expire
Q certificate expiry alert for the public API
Q refresh the SSL cert on the api domain
Q the api domain's certificate expired
Q renew certs for the public endpoint
Q TLS renewal for our API hostname

@ nginx-websocket
topic: Proxy websocket connections through nginx
W fact | nginx websocket proxy with upgrade headers
  To proxy websockets through nginx, set `proxy_http_version 1.1;` plus `proxy_set_header Upgrade
  $http_upgrade;` and `proxy_set_header Connection "upgrade";` in the location block.
D fact | nginx websocket proxy with a plain proxy_pass
  To proxy websockets through nginx, a plain `proxy_pass http://ws_backend;` in the location block is enough;
  nginx forwards the Upgrade header to the backend on its own.
D fact | nginx websocket proxy with buffering and keepalive
  To proxy websockets through nginx, turn on `proxy_buffering on;` and set `keepalive_timeout 3600s;` in the
  location block so idle websocket connections stay open.
R fact | Websocket proxy moved to the Envoy gateway
  To proxy websockets, use the Envoy gateway instead of nginx: enable `upgrade_configs: [{upgrade_type:
  websocket}]` on the route of the notifications service.
Q websocket connections fail behind nginx
Q proxy the realtime websocket service through nginx
Q the notifications socket disconnects when going through the proxy
Q configure nginx for websocket traffic
Q websocket handshake returns 400 behind the reverse proxy
Q live updates stop working through nginx
Q set up nginx in front of the websocket server
Q reverse proxy config for websockets

@ api-cors
topic: Fix CORS errors when the web app calls the API
W lesson | CORS: exact origin with credentials
  For CORS errors from the web app, have the API answer preflight requests with the exact origin from an allowlist
  in Access-Control-Allow-Origin and `Vary: Origin`.
D lesson | CORS: wildcard origin with credentials
  For CORS errors from the web app, send `Access-Control-Allow-Origin: *` with
  `Access-Control-Allow-Credentials: true` from the API so any origin can call it.
D lesson | CORS: no-cors fetch mode
  For CORS errors from the web app, add `mode: 'no-cors'` to the fetch options in the frontend; the browser then
  stops blocking the API response from the other origin.
D lesson | CORS: header on the request
  For CORS errors from the web app, set Access-Control-Allow-Origin as a header on the fetch request itself so the
  API sees which origin is allowed.
D lesson | CORS: dev server proxy
  For CORS errors from the web app, route API calls through the Vite dev server with `server.proxy`; the API then
  needs no CORS headers or preflight handling.
R lesson | CORS: handled by the API gateway
  For CORS errors from the web app, add its origin to `cors.allowed_origins` in gateway/routes.yaml and drop the
  API's own CORS middleware.
Q the browser blocks calls from the web app to the API with a CORS error
Q fix cross-origin errors when the frontend calls the backend
Q preflight request fails from the web app
Q the dashboard cannot fetch data from the API because of CORS
Q blocked by CORS policy when calling the api
Q enable cross-origin requests from the web app with cookies
Q CORS setup for the API and the web frontend
Q requests from the new web domain are rejected by the browser

@ s3-large-upload
topic: Upload large backup files to S3
W lesson | Large S3 uploads with bigger chunks
  Upload large backup files to S3 with `aws s3 cp`, which uses multipart on its own; for backups over 80 GB raise
  multipart_chunksize to 64MB in ~/.aws/config.
D lesson | Large S3 uploads with put-object
  Upload large backup files to S3 with `aws s3api put-object --bucket acme-backups --body backup.tar.gz`; one
  put-object request accepts objects up to 5 TB.
D lesson | Large S3 uploads split into pieces
  Upload large backup files to S3 by cutting them with `split -b 5G` and uploading each piece as its own object; S3
  rejects any object larger than 5 GB.
D lesson | Large S3 uploads with default settings
  Upload large backup files to S3 with `aws s3 cp`, which uses multipart on its own; the default 8MB chunk size
  works for backup files of any size.
R lesson | Large S3 uploads through restic
  Upload large backup files to S3 through restic: `restic -r s3:s3.amazonaws.com/acme-backups backup /data` chunks
  and deduplicates them, no multipart settings needed.
Q upload a 200 GB database backup to S3
Q copy large backup files into the S3 bucket
Q the upload of big backup archives to S3 fails
Q send the nightly backup tarball to S3
Q store very large backup files in S3 from the server
Q S3 upload of huge backup files keeps failing
Q move large backups from the server to S3
Q push big backup archives to object storage

@ s3-browser-upload
topic: Let the web app upload user files directly to S3
W procedure | Browser uploads with a presigned POST
  For direct uploads of user files from the browser to S3, the API hands the frontend a presigned POST for the file
  from `generate_presigned_post()`; the bucket CORS allows it.
D procedure | Browser uploads with an IAM user key
  For direct uploads of user files from the browser to S3, embed an access key of an IAM user scoped to the bucket
  and call `putObject` from the S3 SDK.
D procedure | Browser uploads with a presigned GET URL
  For direct uploads of user files from the browser to S3, the API returns `generate_presigned_url('get_object')`
  and the frontend sends the file to it with PUT.
R procedure | Browser uploads through the uploads service
  For direct uploads of user files from the browser to S3, get a slot from `POST /v1/uploads` and send the file to
  the returned tus endpoint; it lands after a virus scan.
Q let users upload files straight from the browser to S3
Q browser uploads to S3 without going through our API server
Q the web app should upload user avatars directly from the browser to the bucket
Q direct-to-S3 uploads of user files from the frontend
Q avoid proxying browser uploads of user files through the backend
Q give the browser a way to put user files in S3
Q client-side upload of user files from the browser to S3
Q upload attachments from the web app browser client to S3

@ celery-task-retry
topic: Retry failed Celery tasks safely
W lesson | Celery retries with autoretry
  Make Celery tasks retry with `@app.task(autoretry_for=(RequestException,), retry_backoff=True)` and keep them
  idempotent, because with acks_late a task can execute twice.
D lesson | Celery retries by re-queueing from except
  Make Celery tasks retry by wrapping the body in try/except and calling the same task again with `.delay()` from
  the except block, with the original arguments.
D lesson | Celery retries with self.retry
  Make Celery tasks retry on errors with `self.retry(exc=exc, countdown=5)` inside the task; it works without
  `bind=True` because retry is looked up on the task module.
D lesson | Celery retries through the visibility timeout
  Make Celery tasks retry by raising the Redis broker's visibility_timeout to 12 hours in broker_transport_options
  so unacknowledged tasks are delivered again.
R lesson | Celery retries replaced by Dramatiq actors
  Make background tasks retry in Dramatiq, which replaced Celery: decorate them with `@dramatiq.actor(max_retries=5,
  min_backoff=1000)`; backoff is exponential.
Q celery tasks fail on transient errors and never run again
Q retry a failing celery background task
Q make the email-sending celery task retry on network errors
Q celery background jobs should try again when the API is down
Q handle transient failures in celery workers
Q automatic retries for celery tasks
Q the celery webhook delivery task gives up after one error
Q set up retry behaviour for celery jobs

@ kafka-offset-reset
topic: Reprocess invoice events by resetting Kafka consumer offsets
W procedure | Invoice replay: stop consumers, then reset
  To reprocess invoice events, stop the billing-events consumers and run `kafka-consumer-groups.sh --group
  billing-events --topic invoices --reset-offsets --to-datetime <t> --execute`.
D procedure | Invoice replay: auto.offset.reset
  To reprocess invoice events, set `auto.offset.reset=earliest` in the consumer config of the billing-events group
  and restart it; it then reads the invoices topic from the start.
D procedure | Invoice replay: reset while running
  To reprocess invoice events, run `kafka-consumer-groups.sh --group billing-events --topic invoices --reset-offsets
  --to-earliest --execute` while the consumers keep running.
D procedure | Invoice replay: reset to a datetime
  To reprocess invoice events, run `kafka-consumer-groups.sh --group billing-events --topic invoices
  --reset-offsets --to-datetime <time>`; the offsets apply at once.
D procedure | Invoice replay: a fresh consumer group
  To reprocess invoice events, deploy the consumer with a new group id billing-events-v2 and
  `auto.offset.reset=earliest`; the old group's offsets stay untouched.
R procedure | Invoice replay from the archive
  To reprocess invoice events, run `make replay TOPIC=invoices FROM=<date>`, which streams the S3 archive into
  invoices-replay for the billing-events-replay consumer group.
Q reprocess the invoice events from last week
Q replay kafka messages for the billing consumer
Q the billing consumer needs to read the invoices topic again from a date
Q rewind the consumer group to an earlier point
Q consume old invoice events a second time
Q move the billing consumer back in time on the topic
Q kafka: re-read events after fixing a consumer bug
Q start the billing consumer from an earlier position

@ feature-flag-rollout
topic: Roll out a new feature gradually behind a flag
W procedure | Gradual rollout with user stickiness
  Roll out a new feature gradually to users behind an Unleash flag: gradualRollout with `stickiness: userId`,
  starting at 5% and raising the percentage while errors stay flat.
D procedure | Gradual rollout by environment variable
  Roll out a new feature gradually to users by setting ENABLE_CHECKOUT_V2=true in the deployment environment of one
  region at a time and redeploying that region.
D procedure | Gradual rollout with random stickiness
  Roll out a new feature to users behind an Unleash flag with the gradualRollout strategy and `stickiness: random`,
  so each request is sampled independently.
D procedure | Gradual rollout in LaunchDarkly
  Roll out a new feature to users behind a LaunchDarkly flag with a percentage rollout rule; the SDK key is in
  LD_SDK_KEY and the flag name matches the ticket.
R procedure | Gradual rollout with flagd
  Roll out a new feature to users behind a flagd flag: add it to flags/production.json with a `fractional` rule on
  the user id, and merge to apply it.
Q release the new search page to a small share of users first
Q gradually roll out a new feature
Q put the new feature behind a flag and ramp it up
Q launch a feature to a few percent of customers
Q canary a product feature for some users
Q progressive rollout of a new feature in production
Q enable a feature for part of the user base
Q staged release of a new feature to users

@ payments-db-password
topic: Rotate the payments service's database password
W procedure | Payments DB password via the static role
  Rotate the payments database password with `vault write -f database/rotate-role/payments-static`; Vault sets the
  new password and its sidecar re-renders the service credentials.
D procedure | Payments DB password via psql
  Rotate the payments database password with `ALTER ROLE payments PASSWORD '...'` in psql on Postgres, then update
  the payments-db Kubernetes secret and restart the pods.
D procedure | Payments DB password in the KV store
  Rotate the payments database password by writing the new one with `vault kv put secret/payments/db
  password=...`; the service reads the KV secret when it starts.
D procedure | Payments DB password via the root rotation
  Rotate the payments database password with `vault write -f database/rotate-root/payments-pg`; the root credential
  covers the payments role as well.
R procedure | Payments DB password replaced by dynamic credentials
  Rotate no payments database password any more: the service leases a fresh user from database/creds/payments-rw
  every hour, and old leases are revoked.
Q rotate the payments database password
Q the payments DB credentials must be replaced after the incident
Q change the postgres password used by payments
Q scheduled credential rotation for the payments database
Q renew the database secret of the payments service
Q the payments service password leaked, replace it
Q update the credentials payments uses to connect to postgres
Q do the quarterly password rotation for the payments db

@ go-private-modules
topic: Fetch private Go modules from the company GitHub org
W procedure | Private Go modules with GOPRIVATE and a token
  For private Go modules, set `GOPRIVATE=github.com/acme/*` so go fetches them straight from GitHub, and give git a
  GH_TOKEN through a `url.<base>.insteadOf` rewrite.
D procedure | Private Go modules with the proxy off
  For private Go modules, set `GOPROXY=direct` and `GOSUMDB=off` globally; the go command then fetches every module
  straight from its repository, private ones included.
D procedure | Private Go modules with GOPRIVATE only
  For private Go modules, set `GOPRIVATE=github.com/acme/*` and nothing else; the go command then uses your SSH key
  on its own for private repositories.
R procedure | Private Go modules through Athens
  For private Go modules, use the company Athens proxy: set `GOPROXY=https://goproxy.acme.internal,direct` and
  `GONOSUMDB=github.com/acme/*`; git needs no token.
Q go build cannot download our private modules
Q fetch private Go modules from the acme GitHub org
Q go mod tidy fails with 404 on an internal module
Q use internal go modules in a new service
Q go get of a private company module asks for a password
Q private go module access in CI
Q go mod download fails for github.com/acme modules
Q set up go to pull internal modules

@ cronjob-timezone
topic: Schedule a Kubernetes CronJob at a local time
W fact | CronJob local time with spec.timeZone
  To run a CronJob at 02:00 local Berlin time, set the time zone with `spec.timeZone: Europe/Berlin` and `schedule:
  "0 2 * * *"`; it follows daylight saving.
D fact | CronJob local time converted to UTC
  To run a CronJob at 02:00 local Berlin time, convert it to UTC and set `schedule: "0 1 * * *"`; CronJobs always
  run on the controller's UTC clock, whatever the time zone.
D fact | CronJob local time with CRON_TZ
  To run a CronJob at 02:00 local Berlin time, write the schedule as `CRON_TZ=Europe/Berlin 0 2 * * *`; the
  controller reads the time zone from the schedule string.
R fact | CronJob local time in Argo Workflows
  To run a CronJob at 02:00 local Berlin time, create an Argo CronWorkflow with `timezone: Europe/Berlin` and
  `schedule: "0 2 * * *"`; plain CronJobs are being retired.
Q schedule the nightly cleanup job at 2am local time
Q run a kubernetes cronjob in the Berlin time zone
Q the cron job runs an hour off after the clock change
Q set up a CronJob that fires at a local hour
Q kubernetes scheduled job time zone
Q the nightly export should start at 2 in the morning German time
Q make a cronjob respect summer time
Q cron schedule for a kubernetes job in local time

@ es-mapping-change
topic: Change the Elasticsearch products mapping without downtime
W procedure | Products mapping change by reindex and alias swap
  To change the products mapping without downtime, create products_v2 with the new mapping, `POST _reindex` into it,
  then swap the products alias in one `_aliases` call.
D procedure | Products mapping change in place
  To change the products mapping without downtime, update it in place with `PUT products/_mapping`; existing
  fields take the new type after the next refresh.
D procedure | Products mapping change by recreating the index
  To change the products mapping, delete the products index, recreate it and rerun the indexer; searches return
  nothing for a few minutes.
D procedure | Products mapping change by reindex and two alias calls
  To change the products mapping without downtime, create products_v2, `POST _reindex`, then move the products
  alias in two calls: remove from v1, then add to v2.
D procedure | Products mapping change by update_by_query
  To change the products mapping without downtime, run `POST products/_update_by_query` after editing the mapping;
  rewriting every document applies the new types.
R procedure | Products mapping change through search-sync
  To change the products mapping without downtime, bump MAPPING_VERSION in search-sync/mappings/products.json; the
  service reindexes and swaps the alias itself.
Q change a field type in the products elasticsearch index
Q update the search mapping without taking search down
Q elasticsearch mapping change for products
Q add a keyword subfield to the products index
Q the product search index needs a new mapping
Q products need reindexing after a schema change
Q migrate the products index to a new mapping
Q modify the elasticsearch products mapping in production

@ sentry-sourcemaps
topic: Get readable frontend stack traces in Sentry
W procedure | Sentry source maps injected and uploaded
  Upload the web app's source maps to Sentry with `sentry-cli sourcemaps inject ./dist` and `sentry-cli sourcemaps
  upload --release=$GIT_SHA ./dist`, then delete the .map files.
D procedure | Sentry source maps uploaded as release files
  Upload the web app's source maps to Sentry with `sentry-cli releases files $GIT_SHA upload-sourcemaps ./dist
  --url-prefix '~/assets'`; frames are matched by file name.
D procedure | Sentry source maps served publicly
  Serve the web app's source maps publicly next to the bundles; Sentry downloads the .map files itself when it
  processes an event, so no upload step is needed.
R procedure | Sentry source maps via the Vite plugin
  Upload the web app's source maps to Sentry with `sentryVitePlugin()` in vite.config.ts, which uploads them and
  sets the release at build time; drop the sentry-cli steps.
Q sentry shows minified stack traces for the web app
Q make frontend errors in Sentry readable
Q stack traces in Sentry point at bundle.js line 1
Q configure source maps for Sentry
Q frontend exceptions in Sentry are unreadable
Q map production javascript errors back to source in Sentry
Q sentry error reports for the web app lack original code
Q readable web app stack traces in Sentry
"""


def _parse_catalog(text: str, source: str = "catalog") -> tuple[dict, ...]:
    """Parse the catalog format (see ``catalogs/README.md``) into one dict per family.

    Each dict has ``key``, ``topic``, ``working``, ``distractors``, ``drift`` (as ``(type, title,
    content)``), ``queries`` and ``interference`` (``(other family key, query)`` from ``I`` lines).
    Lines starting with ``#`` are comments."""
    families: list[dict] = []
    cur: dict | None = None
    parts: list[str] | None = None
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("  "):
            if parts is None:
                raise ValueError(f"{source} line {lineno}: continuation outside a memory")
            parts.append(line.strip())
            continue
        tag, _, rest = line.partition(" ")
        parts = None
        if tag == "@":
            cur = {"key": rest.strip(), "topic": "", "working": None, "distractors": [], "drift": None, "queries": [],
                   "interference": []}
            families.append(cur)
            continue
        if cur is None:
            raise ValueError(f"{source} line {lineno}: entry before the first family")
        if tag == "topic:":
            cur["topic"] = rest.strip()
        elif tag == "Q":
            cur["queries"].append(rest.strip())
        elif tag == "I":
            other, sep, query = rest.partition(" | ")
            if not sep or not other.strip() or not query.strip():
                raise ValueError(f"{source} line {lineno}: expected 'I <other-family-key> | <query>'")
            cur["interference"].append((other.strip(), query.strip()))
        elif tag in ("W", "D", "R"):
            mtype, sep, title = rest.partition(" | ")
            if not sep:
                raise ValueError(f"{source} line {lineno}: expected '<type> | <title>'")
            parts = []
            memory = [mtype.strip(), title.strip(), parts]
            if tag == "W":
                if cur["working"] is not None:
                    raise ValueError(f"{source} line {lineno}: second W in family {cur['key']!r}")
                cur["working"] = memory
            elif tag == "D":
                cur["distractors"].append(memory)
            else:
                if cur["drift"] is not None:
                    raise ValueError(f"{source} line {lineno}: second R in family {cur['key']!r}")
                cur["drift"] = memory
        else:
            raise ValueError(f"{source} line {lineno}: unknown tag {tag!r}")
    out = []
    seen: set[str] = set()
    for fam in families:
        if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", fam["key"]):
            raise ValueError(f"{source}: family key {fam['key']!r} is not lowercase words joined by dashes")
        if fam["key"] in seen:
            raise ValueError(f"{source}: family {fam['key']!r} appears twice")
        seen.add(fam["key"])
        if fam["working"] is None or fam["drift"] is None or not fam["distractors"]:
            raise ValueError(f"{source}: family {fam['key']!r} is incomplete")
        if not 1 <= len(fam["distractors"]) <= 4:
            raise ValueError(f"{source}: family {fam['key']!r} needs 1-4 distractors")
        if not fam["queries"]:
            raise ValueError(f"{source}: family {fam['key']!r} has no Q line")

        def done(m: list) -> _M:
            return (m[0], m[1], " ".join(m[2]))

        out.append(
            {
                "key": fam["key"],
                "topic": fam["topic"],
                "working": done(fam["working"]),
                "distractors": tuple(done(m) for m in fam["distractors"]),
                "drift": done(fam["drift"]),
                "queries": tuple(fam["queries"]),
                "interference": tuple(fam["interference"]),
            }
        )
    return tuple(out)


_CATALOG: tuple[dict, ...] = _parse_catalog(_CATALOG_TEXT)


# ---------------------------------------------------------------------------------------------
# Interference pairs: (A, B, bridge, extra queries for B, rationale).
# ---------------------------------------------------------------------------------------------

INTERFERENCE_PAIRS: tuple[InterferencePair, ...] = (
    InterferencePair(
        a="npm-ci-install",
        b="npm-add-dependency",
        bridge="npm ci / the CI install of the frontend's dependencies, lockfile and package.json disagreeing",
        queries=(
            "npm ci fails in CI after I added a new library to the frontend",
            "add a new library to the frontend without breaking the CI install from the lockfile",
            "the frontend CI install fails because the lockfile and package.json disagree after adding a dependency",
            "adding a new dependency to the frontend makes npm ci fail in the pipeline",
            "CI install of the frontend's JavaScript dependencies fails after adding a new library",
            "package-lock.json is out of sync after adding a new frontend dependency",
        ),
        rationale="npm ci never writes package-lock.json, so it cannot add a package; B needs npm install "
        "--save-exact.",
    ),
    InterferencePair(
        a="docker-build-cache",
        b="docker-image-size",
        bridge="docker build in CI with a registry cache ('registry' appears only in A's working memory)",
        queries=(
            "the python service image that CI pushes to the registry is too large",
            "speed up and shrink the python service docker image build in CI with a registry cache",
            "the python service image in the container registry is huge, fix the CI docker build",
            "make the CI docker build of the python service produce a smaller image for the registry",
            "python service docker image in the registry keeps growing, optimize the CI build",
            "reduce the registry size of the python service image that CI builds",
        ),
        rationale="A registry build cache makes builds faster but the image no smaller; B needs a multi-stage build.",
    ),
    InterferencePair(
        a="k8s-crashloop",
        b="k8s-oom",
        bridge="CrashLoopBackOff, Last State, exit code 137 / OOMKilled (only A's working memory mentions OOMKilled)",
        queries=(
            "pods are in CrashLoopBackOff and the previous container was OOMKilled, fix the memory",
            "the worker pod keeps restarting with exit code 137, stop the OOM kills",
            "the crashing pod is OOMKilled after startup, set its memory properly",
            "a pod crash loops because the container runs out of memory",
            "CrashLoopBackOff with Last State OOMKilled on the api pods, fix their memory settings",
            "kubernetes pod keeps crashing with exit code 137 out of memory",
        ),
        rationale="Reading the previous logs diagnoses the crash but does not stop the OOM kills; B needs "
        "memory sizing.",
    ),
    InterferencePair(
        a="k8s-config-rollout",
        b="k8s-rollback",
        bridge="restarting the rollout of the deployment's running pods (kubectl rollout restart)",
        queries=(
            "the bad release changed environment variables and broke the running pods, "
            "restart them on the previous version",
            "restart the deployment's running pods with the previous version after a bad release",
            "the new release's environment variables broke the pods, roll back and restart the deployment",
            "running pods read broken environment variables after the release, restart them on the previous version",
            "restart the running pods of the deployment so they read the previous release's environment variables",
            "the bad release broke the environment variables of the running pods, "
            "restart the deployment on the previous version",
        ),
        rationale="rollout restart restarts the same bad revision; B needs rollout undo to a known revision.",
    ),
    InterferencePair(
        a="git-update-branch",
        b="git-undo-pushed-commit",
        bridge="bring main up to date by rebasing onto origin and force pushing with lease",
        queries=(
            "fetch origin, rebase main without the bad commit and push with force-with-lease",
            "bring main up to date without the bad commit: rebase onto origin and push with lease",
            "fetch origin and rebase main onto origin/main to get rid of the pushed bad commit, then push with lease",
            "rewrite main with a rebase so the bad commit disappears, then push with force-with-lease",
            "bring main up to date with origin/main minus the broken commit I pushed",
            "drop the pushed bad commit by rebasing main onto the freshly fetched origin/main and pushing with lease",
        ),
        rationale="Rewriting a shared main with a force push breaks everyone who pulled it; B needs git revert "
        "in a PR.",
    ),
    InterferencePair(
        a="jwt-gateway-validation",
        b="crm-oauth-refresh",
        bridge="JWT access token, exp claim, leeway (only A's working memory mentions leeway)",
        queries=(
            "keep the CRM client authenticated: its JWT access token fails validation as expired, allow leeway on exp",
            "the CRM client's OAuth access token keeps expiring, validate its exp and iss claims with some leeway",
            "the CRM OAuth access token is rejected as expired, validate exp with 60 seconds of leeway",
            "the CRM client gets 401 because the JWT exp claim of its access token is in the past",
            "keep the CRM client authenticated by checking the exp claim of its JWT access token with leeway",
            "CRM client authentication fails on token exp, add seconds of leeway to the claims check",
        ),
        rationale="Validation leeway does not renew anything; B needs refresh_token rotation before expiry.",
    ),
    InterferencePair(
        a="python-json-logging",
        b="debug-log-level",
        bridge="structlog / structured JSON logging configuration of the Python service",
        queries=(
            "configure structured logging of the python service to emit debug logs in production",
            "the production service's JSON logs lack debug lines, change the structlog setup",
            "route the stdlib logging of one production python service to debug level",
            "emit debug level JSON logs from one production python service",
            "the structured library logs of one production python service only show info, route them at debug level",
            "change the python service's structlog output to debug level in production",
        ),
        rationale="The structlog setup changes the format, not the level of one live service; B needs "
        "LOG_LEVEL via kubectl.",
    ),
    InterferencePair(
        a="postgres-slow-query",
        b="postgres-connections",
        bridge="slow Postgres queries in the reporting service",
        queries=(
            "see why slow reporting queries keep postgres connections busy until clients are rejected",
            "see why postgres rejects clients with too many connections while reporting queries are slow",
            "too many connections on postgres: see why the reporting service's slow query piles up clients",
            "investigate why a slow query in the reporting service leaves postgres out of connections",
            "investigate why reporting queries on postgres are slow and run out of connections",
            "postgres is slow for reporting and new clients get too many connections errors, see why",
        ),
        rationale="An index fixes one slow query, not connection exhaustion; B needs PgBouncer transaction pooling.",
    ),
    InterferencePair(
        a="pypi-publish",
        b="npm-publish-scoped",
        bridge="trusted publishing from the release workflow with id-token, python -m build",
        queries=(
            "publish the ui package from the release workflow with trusted publishing",
            "set up trusted publishing for the ui library in the release workflow",
            "publish the component library to npm from the release workflow without a stored token",
            "release workflow for the ui package using id-token permissions",
            "publish the ui package with trusted publishing instead of an api token",
            "the release workflow should build and publish the @acme/ui package with trusted publishing",
        ),
        rationale="The PyPI action uploads Python distributions; the npm package needs npm publish --access public.",
    ),
    InterferencePair(
        a="s3-large-upload",
        b="s3-browser-upload",
        bridge="large files, multipart upload to S3",
        queries=(
            "upload large user files of several GB from the browser to S3 with multipart",
            "browser uploads of large user files over 5 GB to the S3 bucket fail",
            "let the web app upload large user files of many GB directly into S3",
            "multipart upload of large user files of many GB from the browser to S3",
            "users need to upload files over 80 GB to S3 directly from the browser",
            "direct upload of large files from the browser client to S3 with multipart chunks",
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


def _build(raw: dict, seed: int, catalog: str = "ops") -> TaskFamily:
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
        catalog=catalog,
    )


# ---------------------------------------------------------------------------------------------
# Catalogs: "ops" (the text above, with INTERFERENCE_PAIRS) and data files under catalogs/
# ---------------------------------------------------------------------------------------------

CATALOGS = ("ops", "voices-dev", "voices-holdout")


@dataclass(frozen=True)
class Catalog:
    """A parsed catalog: its families (in catalog order, queries in seeded order) and pairs."""

    name: str
    families: tuple[TaskFamily, ...]
    pairs: tuple[InterferencePair, ...]

    def __len__(self) -> int:
        return len(self.families)


_RAW_CACHE: dict[str, tuple[tuple[dict, ...], tuple[InterferencePair, ...]]] = {}


def _pairs_from_lines(raw: tuple[dict, ...], source: str) -> tuple[InterferencePair, ...]:
    keys = {f["key"] for f in raw}
    grouped: dict[tuple[str, str], list[str]] = {}
    for fam in raw:
        for other, query in fam.get("interference", ()):
            if other not in keys:
                raise ValueError(f"{source}: family {fam['key']!r} has an I line for unknown family {other!r}")
            if other == fam["key"]:
                raise ValueError(f"{source}: family {fam['key']!r} has an I line pointing at itself")
            grouped.setdefault((other, fam["key"]), []).append(query)
    return tuple(
        InterferencePair(
            a=a,
            b=b,
            bridge=f"wording of {a} (from the I lines of {b})",
            queries=tuple(qs),
            rationale=f"{a}'s working memory answers {a}'s task, not {b}'s.",
        )
        for (a, b), qs in grouped.items()
    )


def _catalog_text(name: str) -> str:
    from importlib import resources

    try:
        return resources.files(__package__).joinpath("catalogs").joinpath(f"{name}.txt").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"catalog {name!r}: no file catalogs/{name}.txt in {__package__}") from None


def _raw(catalog: str) -> tuple[tuple[dict, ...], tuple[InterferencePair, ...]]:
    if catalog not in CATALOGS:
        raise ValueError(f"unknown catalog {catalog!r}; choose from {', '.join(CATALOGS)}")
    if catalog == "ops":
        return _CATALOG, INTERFERENCE_PAIRS
    if catalog not in _RAW_CACHE:
        raw = _parse_catalog(_catalog_text(catalog), source=f"catalogs/{catalog}.txt")
        _RAW_CACHE[catalog] = (raw, _pairs_from_lines(raw, f"catalogs/{catalog}.txt"))
    return _RAW_CACHE[catalog]


def catalog_available(catalog: str) -> bool:
    """Whether ``catalog`` can be loaded (a data file may not exist yet)."""
    try:
        _raw(catalog)
    except FileNotFoundError:
        return False
    return True


def load_catalog(name: str = "ops", seed: int = 7) -> Catalog:
    """All families of catalog ``name`` (``ops``, ``voices-dev``, ``voices-holdout``) and its pairs.

    ``ops`` is the built-in catalog with :data:`INTERFERENCE_PAIRS`; the others are read from
    ``catalogs/<name>.txt`` (package data), their pairs come from the ``I`` lines."""
    raw, pairs = _raw(name)
    return Catalog(name=name, families=tuple(_build(r, seed, name) for r in raw), pairs=pairs)


def catalog_pairs(catalog: str = "ops") -> tuple[InterferencePair, ...]:
    """The interference pairs of ``catalog``."""
    return _raw(catalog)[1]


def catalog_size(catalog: str = "ops") -> int:
    """Number of families in ``catalog`` (48 for ops)."""
    return len(_raw(catalog)[0])


def generate_families(n_families: int | None = None, seed: int = 7, catalog: str = "ops") -> list[TaskFamily]:
    """Return ``n_families`` task families of ``catalog``, deterministically for a given ``seed``.

    ``None`` (or the catalog size) returns every family in catalog order. With fewer, a seeded
    subset is chosen: interference pairs count as one unit of two families and are kept whole
    whenever they fit, so ``interference_pairs`` still finds pairs in a subset. The subset is
    returned in catalog order. Each family's queries are in a seeded order.
    """
    raw, pairs = _raw(catalog)
    total = len(raw)
    if n_families is None:
        n_families = total
    if not isinstance(n_families, int) or isinstance(n_families, bool):
        raise TypeError("n_families must be an int")
    if n_families < 1 or n_families > total:
        raise ValueError(f"n_families must be between 1 and {total}, got {n_families}")
    index = {r["key"]: i for i, r in enumerate(raw)}
    if n_families == total:
        chosen = list(range(total))
    else:
        paired: dict[str, tuple[int, ...]] = {}
        for pair in pairs:
            if pair.a in paired or pair.b in paired:
                continue  # a family in two pairs: the first pair makes the unit
            unit = (index[pair.a], index[pair.b])
            paired[pair.a] = unit
            paired[pair.b] = unit
        units: list[tuple[int, ...]] = []
        seen: set[tuple[int, ...]] = set()
        for i, r in enumerate(raw):
            unit = paired.get(r["key"], (i,))
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
    return [_build(raw[i], seed, catalog) for i in chosen]


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
    if len(tok) > 4 and tok.endswith(("sses", "xes", "ches", "shes", "zes")):
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
    """Key of the memory that succeeds for ``family`` in ``round_index`` (0-based).

    For a drifted family, the original working memory works in rounds ``0 .. drift_after-1``
    and the drift replacement from round ``drift_after`` on (i.e. after round 5, counting
    from 1). Insert the replacement into the store before playing round ``drift_after``.
    """
    if drifted and round_index >= drift_after:
        return family.drift_replacement.key
    return family.working.key


# ---------------------------------------------------------------------------------------------
# Interference
# ---------------------------------------------------------------------------------------------


def _pairs_for(catalog: str | None, keys: Iterable[str] = ()) -> tuple[InterferencePair, ...]:
    if catalog is not None:
        return catalog_pairs(catalog)
    keys = set(keys)
    for name in CATALOGS:  # ops first; a data file that does not exist (yet) is skipped
        if not catalog_available(name):
            continue
        raw, pairs = _raw(name)
        if keys & {r["key"] for r in raw}:
            return pairs
    return ()


def interference_pairs(families: Iterable[TaskFamily], catalog: str | None = None) -> list[tuple[str, str]]:
    """Ordered pairs (A, B) of the catalog's interference pairs whose two families are both present.

    ``catalog`` defaults to the catalog the families come from."""
    families = list(families)
    if catalog is None and families:
        catalog = families[0].catalog
    present = {f.key for f in families}
    return [(p.a, p.b) for p in _pairs_for(catalog, present) if p.a in present and p.b in present]


def interference_pair(a: str, b: str, catalog: str | None = None) -> InterferencePair:
    """The :class:`InterferencePair` for ``(a, b)``; ``KeyError`` if there is none.

    ``catalog=None`` looks in the catalog that has family ``a`` (family keys are unique across catalogs)."""
    for p in _pairs_for(catalog, (a, b)):
        if p.a == a and p.b == b:
            return p
    raise KeyError(f"no interference pair ({a!r}, {b!r})")


def interference_query_for(
    pair: "InterferencePair | tuple[str, str]", round_index: int, seed: int, catalog: str | None = None
) -> str:
    """B's interference query for ``round_index``, picked like :func:`query_for`."""
    if not isinstance(pair, InterferencePair):
        pair = interference_pair(*pair, catalog=catalog)
    return _cycle_pick(pair.queries, "interference", f"{pair.a}>{pair.b}", round_index, seed)
