"""How much of a ranked list a context keeps: the relative cut, and what counts as judged poor.
Pure functions over the ranked tuples and the learner's assessments; imports policy, learning and
the index's cosine."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import TypeGuard

import numpy as np

from recallite_core.index.vector_index import exact_scores
from recallite_core.learning.learner import Assessment
from recallite_core.policy import rules as policy

# The match leg keeps a memory that learning ranks far below the best hit, on its match before
# learning alone. For a memory that has outcomes that overrides feedback, so it asks for a match
# close to the best one (within about 0.9 sd of fused z-score, exp scale) whatever the tuned ratio:
# at the tuner's 0.15 the leg kept other tasks' rules and project facts that sit 1-2 sd below the
# task's own memories (agent day dev, days 3-5 with feedback: precision .67-.85 before this cut,
# .72-.95 with it, MATCH_FLOOR and the bonus taken out; needed-memory recall the same). A memory
# nobody judged keeps the tuned ratio. A memory the agent acted on with success on this very task
# (Assessment.helped_here) is kept whenever its match is above MATCH_FLOOR: a rule whose words the
# request does not use sat below both legs beside a procedure that matched them (agent day dev,
# 4 seeds: needed-memory recall with feedback .950 -> .958, precision the same).
MATCH_RATIO = 0.4
# However well feedback rates it, a memory whose match before learning is below this share of the
# best match (about 2.3 sd of fused z-score below it) is not served: its record comes from other
# tasks. Without it a rule proven on a sibling task, or a newcomer with its exploration bonus, sat
# in contexts whose match it barely had (agent day dev, replay of the logged contexts of days 3-5:
# precision .854 -> .865 on average, needed-memory recall the same; 0.2 cut needed memories).
MATCH_FLOOR = 0.1
# An outcome this close to the query (cosine) was on this very task: logged under its name, or the
# same request word for word.
THIS_TASK = 0.999
# A known job (known_job: its name has memories the agent named, or a success) keeps any other
# judged memory only on a score of at least this share of the best: the relative cut near a weak
# best let in other tasks' rules and chit-chat on their match or a small score (agent day fresh-dev
# named, 4 seeds, before a success that named nothing made a job known: precision
# .618 -> .750, needed-memory recall .871 the same; dev .866 -> .946, recall 1.000; 0.5: fresh-dev
# .807 but recall .867). Unjudged memories that match well, in the request's words, are exempt (keep_ratios).
KNOWN_JOB_SCORE = 0.3
# A known job also cuts another judged memory that its record, failures credited on a guess left out,
# rates below even on at least this much failure evidence (about one 'unused' mark): another task's
# memory passed over or misled before. Guesses are left out because a report that named nothing blamed
# whatever led the context, a needed procedure too (agent day named, 4 seeds: precision fresh-dev
# .752 -> .764, dev .949 -> .956, needed-memory recall the same; on the whole record, guesses in,
# fresh-dev recall .871 -> .863). Held out: holdout .922 -> .925, fresh-holdout .776 -> .786.
KNOWN_JOB_EVIDENCE = 0.25
# A job serves a memory written after it first worked, that nobody judged yet, only when it lies
# near what did the job (cosine of stored vectors): the memories a known job is known by
# (known_job), or without one those that helped on this very task (Assessment.helped_here). A memo
# that shares a word of the request (a colleague's name, "invoice") is about something else than
# the job's procedure; a replacement procedure lies near what it replaces (.36-.92 in the learning
# catalogs' drift families). Rules are not asked: they hold for a job whatever their words. Agent
# day named, dev and fresh-dev, 4 seeds, days 2-5: of the memories a known job's context served for
# the first time, 26 of the 31 off the task lay below .3 of what did the job, and 1 of the 10 on it,
# not a needed one. Asking it of every memory nobody judged also cut what a job needed and had never
# been shown (held out: a signing constraint beside the release procedure). Without a known job,
# 4 seeds: precision dev .829 -> .837, fresh-dev .561 -> .579, needed-memory recall the same.
NEAR_KNOWN = 0.3


def relative_cut(scored: list, cut_base: dict[int, float] | None, ratio: float, learned: dict,
                 gain: float | None = None) -> list:
    """Keep what is close enough to the best hit, or to the best match before learning unless
    feedback says it misled or went unused on tasks like this one: learning may cut what it knows
    to be noise, never what it has not judged (the lesson the next task needs); a judged memory
    needs a closer match for that (match_ratio). Scores are read from ``cut_base`` where given (the
    fusion before the keyword fade), with the same policy factors.

    The score leg also needs a match of at least MATCH_FLOOR of the best, and reads the final score
    without the exploration bonus (``gain``: the learner's outcome gain; None leaves it in):
    exploration reorders what the task's match lets in, it does not let in an untried memory that
    the match alone would leave out. A memory is kept when its keep ratio (keep_ratios) is at least
    ``ratio``."""
    keep = keep_ratios(scored, cut_base, learned, gain)
    return [t for t in scored if keep[t[2]] >= ratio]


def keep_ratios(scored: list, cut_base: dict[int, float] | None, learned: dict, gain: float | None = None,
                vouched: AbstractSet[int] = frozenset(), named: AbstractSet[int] = frozenset(),
                known: AbstractSet[int] | None = None, worded: AbstractSet[int] | None = None,
                kin: Mapping[int, float] | None = None) -> dict[int, float]:
    """id -> the largest relative floor at which relative_cut keeps the memory (1 for the first hit,
    which is never cut; 0 for one no floor keeps). The retrieval log keeps these for a context that
    was cut: the context tuner replays a stricter floor on the log (an arm serves what has at least
    its ratio), so it judges its arms on what the cut would really have let in. ``vouched``: what
    worked the last time under the query's task name; the best of it (by final score) is kept
    whatever its match (a new wording that shared few words with it put it under MATCH_FLOOR,
    behind an unjudged look-alike). Keeping all of it let in a kind of job's every proven memory,
    needed by its other tasks (agent day dev, precision with feedback .834 -> .731). ``named``: what
    of it that feedback named in its used ids; kept whatever its match while it helped here (the
    second memory a job needs was cut when the new wording did not retrieve it: agent day fresh-dev
    named, 4 seeds, needed-memory recall .838 -> .875; a first memory credited on a guess keeps
    needing its match: kept too, it let other tasks' memories into contexts of dev). When ``named``
    is not empty the job is known: any other judged memory needs a score leg of KNOWN_JOB_SCORE
    (one nobody judged yet, such as a rule written after the job's last report, is not cut by it:
    a proven leader's learned factor put a new rule that matched the job well under it), and none that
    its record without guessed failures rates below even (below_even_unguessed). ``known`` (default
    ``named``): what those two cuts spare; a name whose last success named no memory passes what that
    success was credited to (``vouched``), and the job is known on it too (known_job). ``worded``:
    what the request's words match above the candidates' average (None: no keyword channel); a
    memory nobody judged is spared the known-job score only on its words and its match (a wordy
    request matched chit-chat and a memo of the data team's Airflow move on flat vector similarities
    and nothing else, beside the job's proven procedure: agent day named, dev and fresh-dev, 4 seeds,
    days 2-5, 20 of the 21 newcomers not worded that known jobs kept were off the task, and the one
    on it kept its score; precision fresh-dev .772 -> .779, dev .961 the same, recall the same; held
    out, run once: fresh-holdout .797 -> .801, holdout .937 the same). ``kin``: the cosine of each memory
    asked (written after the job worked, nobody judged, not a rule) to the nearest memory that did it
    (kinship); one below NEAR_KNOWN is cut, unless it is the first hit. Ids not in ``kin`` are not asked.
    Outside a known job, a memory judged poor keeps its match leg when the request matches it best, in
    the request's words (``worded``), and it never misled when acted on (best_match_passed_by)."""
    known = named if known is None else known
    fused, final = _legs(scored, cut_base)
    first = scored[0][2]  # never cut: a correction ranked first may score below what it replaced
    if gain is not None:
        lead = final[first] >= max(final.values())  # first on its score, not put first as a correction
        final = _without_bonus(final, learned, gain)
        if lead and final[first] < max(final.values()):
            first = max(final, key=lambda i: final[i])  # first on its bonus alone: the best without it leads
    top, top_fused = max(final.values()) or 1.0, max(fused.values()) or 1.0
    out = {}
    for i in final:
        share = fused[i] / top_fused
        score_leg = final[i] / top if share >= MATCH_FLOOR else 0.0
        a = learned.get(i)
        kept_on_match = not passed_over_here(a) and (not judged_poor(a) or not known and best_match_passed_by(
            a, fused[i] >= top_fused, worded is None or i in worded))
        match_leg = share if kept_on_match and share >= match_ratio(a, 0.0) else 0.0
        helped = a is not None and a.helped_here and (share >= MATCH_FLOOR or i in named)
        out[i] = 1.0 if i == first or helped else min(1.0, max(score_leg, match_leg))
        if known and i not in known and i != first and not helped and (
                (score_leg < KNOWN_JOB_SCORE and (judged(a) or share < MATCH_RATIO or (worded is not None and i not in worded)))
                or below_even_unguessed(a)):
            out[i] = 0.0
        if kin and i != first and not judged(a) and kin.get(i, 1.0) < NEAR_KNOWN:
            out[i] = 0.0
    if vouched & out.keys():
        out[max(vouched & out.keys(), key=lambda i: (final[i], -i))] = 1.0
    return out


def known_job(named: frozenset[int], vouched: frozenset[int]) -> frozenset[int]:
    """What a known job's cuts spare: what the agent named under the task name, else what the name's
    last success was credited to. A name whose success named no memory (credit shared by rank over
    what was served) is a known job too: of the judged memories such contexts served outside that
    credit, 18 of 19 were other tasks' (agent day fresh-dev named, seeds 7 and 11, days 3-5).
    Precision dev .956 -> .961, fresh-dev .764 -> .772, needed-memory recall the same (1.000, .871);
    held out, run once: holdout .925 -> .937, fresh-holdout .786 -> .797, recall the same (.900,
    .908). Treating that credit as named (kept whatever its match while it helped here) measured
    fresh-dev .775 / .875, dev .960 / 1.000: the agent's word keeps its own meaning. Empty: unknown."""
    return named or vouched


def kinship(job: Iterable[np.ndarray], asked: Mapping[int, np.ndarray]) -> dict[int, float]:
    """id -> the cosine of its stored vector (``asked``) to the nearest of the job's (``job``). Each
    vector is read once: with the scan in worker processes they come from the store."""
    tops = [v.astype(np.float64) for v in job]
    if not tops or not asked:
        return {}
    ids = list(asked)
    rows = np.stack([asked[i] for i in ids])
    return dict(zip(ids, np.max([exact_scores(rows, v) for v in tops], axis=0).tolist()))


def _legs(scored: list, cut_base: dict[int, float] | None) -> tuple[dict[int, float], dict[int, float]]:
    """(match before learning, final score) of each ranked tuple, on the fusion before the keyword fade."""
    if cut_base is None:
        return {t[2]: t[3] for t in scored}, {t[2]: t[0] for t in scored}
    fused = {t[2]: cut_base.get(t[2], t[3]) for t in scored}
    return fused, {t[2]: (t[0] / t[3] if t[3] else 0.0) * fused[t[2]] for t in scored}


def _without_bonus(final: dict[int, float], learned: dict, gain: float) -> dict[int, float]:
    return {i: s * unexplored(learned.get(i), gain) for i, s in final.items()}


def match_ratio(a: Assessment | None, ratio: float) -> float:
    """The share of the best match that keeps a memory on its match alone: the tuned ratio for one
    nobody judged, at least MATCH_RATIO for one with outcomes."""
    return max(ratio, MATCH_RATIO) if judged(a) else ratio


def unexplored(a: Assessment | None, gain: float) -> float:
    """What takes the exploration bonus back out of an outcome factor exp(gain * (u - 0.5)),
    u = min(1, mean + bonus): the factor the posterior mean alone would give, over the one used."""
    if a is None or a.bonus <= 0:
        return 1.0
    return math.exp(-gain * max(0.0, a.usefulness - min(1.0, a.mean)))


def judged(a: Assessment | None) -> TypeGuard[Assessment]:
    """Whether the memory has any outcome (a rule stored after the job's last report has none)."""
    return a is not None and a.outcomes > 0


def tried_here(a: Assessment | None) -> TypeGuard[Assessment]:
    """Whether the memory has an outcome on this very task (THIS_TASK)."""
    return judged(a) and a.nearest is not None and a.nearest >= THIS_TASK


def passed_over_here(a: Assessment | None) -> bool:
    """Shown on this very task before (THIS_TASK), it never worked there and failed or went unused:
    its match no longer keeps it, however close (one unused mark is below POOR_EVIDENCE, and the
    match leg kept other tasks' memories that this job had passed over; agent day fresh-dev named,
    4 seeds: precision .561 -> .610, needed-memory recall the same). Its score may still keep it."""
    return tried_here(a) and a.mean < 0.5 and a.successes < policy.NO_SUCCESS and a.failures > 0


def judged_poor(a: Assessment | None) -> bool:
    """Outcomes near this query say the memory misled or was not needed: a posterior mean below even,
    on enough failure evidence (policy.POOR_EVIDENCE)."""
    return judged(a) and a.mean < 0.5 and a.failures >= policy.POOR_EVIDENCE


def best_match_passed_by(a: Assessment | None, best: bool, in_words: bool) -> bool:
    """The request matches this memory best (``best``), in its words when the keyword channel ran
    (``in_words``), and its record is only of being passed over or shared blame, never of misleading
    when acted on: judged poor on other requests, it keeps its match on this one. A lesson about
    migrations, passed over on three deploys without one, was cut from "deploy; this release includes
    a database migration" (a new user's trial of the demo). Agent day without names, 4 seeds:
    precision dev .837 -> .833, fresh-dev .579 -> .578, needed-memory recall the same; in known jobs
    too, named fresh-dev .810 -> .799, so a known job's cut still decides there."""
    return best and in_words and judged(a) and not a.acted_failures


def below_even_unguessed(a: Assessment | None) -> bool:
    """Judged, and below even on its record without failures credited on a guess ('unused' marks and
    failures the agent named it in still count), on KNOWN_JOB_EVIDENCE of failure evidence there."""
    return judged(a) and a.unguessed_mean is not None and a.unguessed_failures is not None \
        and a.unguessed_mean < 0.5 and a.unguessed_failures >= KNOWN_JOB_EVIDENCE
