"""Fair play measured (issue 60): a panel of cheats and honest players written apart from the
detector (core_ext/fairplay.py), an archive of their rounds against a reference team, the
archive reviewed as ``shuangkou review-replays --fair-play`` reviews it, and each signal's
power and false-positive rate over matches of 10, 20 and 50 rounds.

* :mod:`.players` — the honest players (the five panel styles, the rule policy, random play,
  托管's search at 600 rollouts) and the cheats built on engines: the search told the
  partner's hand or every hand, the engine-assisted player, the thrower's round draw;
* :mod:`.sighted` — the cheats written from plain rules: the hand sharer, the full-sight
  client and the throwing play;
* :mod:`.kinds` — the tested teams' kinds, each with the signal it cheats on;
* :mod:`.archive` — the archive generator (replays with ``players``, their notes, labels);
* :mod:`.reviewed` — the review with fair play, each round reduced to the command's sums;
* :mod:`.power` — the resampled matches and the tables.

The players, the kinds and the archive import nothing of the detector or the review
(tests/test_research_fairplay.py checks it); the study uses ``shuangkou.core.fairplay`` only
to aggregate the reviewed rounds as the command does. ``python -m research.fairplay``
runs it all (:mod:`.__main__`).
"""
