"""``shuangkou score-replays``, the batch scorer, and ``review-replays``: one module per job,
one of each. What they read (files, globs, directories, gzip, stdin and THE line splitter)
is :mod:`shuangkou.service.inputs`, shared with the commands of one round; the pages of
rejected lines are ``shuangkou view``'s (the batch imports the view, never the reverse).

* :mod:`~shuangkou.service.batch.command` the command line (arguments, a plain run, an
  archive run) and its exit statuses;
* :mod:`~shuangkou.service.batch.records` one output record per input line;
* :mod:`~shuangkou.service.batch.progress` THE progress bar;
* :mod:`~shuangkou.service.batch.pool` THE local process pool;
* :mod:`~shuangkou.service.batch.partitions` an archive cut into partitions, and
  :mod:`~shuangkou.service.batch.archive` resumable archive runs (local pool, Dask, shards);
* :mod:`~shuangkou.service.batch.remote` scoring on running servers (``--server``);
* :mod:`~shuangkou.service.batch.review` ``shuangkou review-replays``: the archive machinery
  with a review per line, and per-player and per-partnership figures.
"""
