"""Research tools, apart from the product (``shuangkou``) and from the benchmarks a user or
operator runs (bench/): measurements that take CPU-hours and decide a default, and the
instruments they use.

* ``research/panel/`` — the opponent panel, a library: players of clearly different styles
  written apart from the code they measure, the rounds they play, the intervals of what
  they measure (``from research.panel import PANEL``; the repository root on ``sys.path``).
* ``research/fairplay/`` — fair play measured (issue 60): a panel of cheats (hand-sharing
  pairs, full-sight clients, round throwers, engine-assisted players) and honest players
  written apart from the detector, an archive of their rounds, its review with fair play and
  the detector's power and false alarms (``python -m research.fairplay``).
* ``research/tuoguan_panel.py`` — 托管 by search measured against the panel: ``run``,
  ``parts``, ``departures``, ``keep``, ``report``.
* ``research/results/tuoguan-panel/`` — the deals behind the documented figures, a gzip
  per opponent and variant (``keep`` writes them).

Imports run one way: research/ imports ``shuangkou`` and itself, never bench/; a benchmark
may use the panel (bench/bench_review.py measures the review on its styles).
tests/test_research.py holds both, and runs every tool.
"""
