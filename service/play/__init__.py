"""``shuangkou play``: a round in the terminal against three 托管 seats —
:mod:`~shuangkou.service.play.tables` (the round, here or on a server),
:mod:`~shuangkou.service.play.terminal` (the table on screen and the keys),
:mod:`~shuangkou.service.play.command` (the command)."""
