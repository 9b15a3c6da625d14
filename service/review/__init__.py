"""``shuangkou review``: 复盘 of a replayed round — each decision's verdict and loss from what
the deciding seat could see (:mod:`shuangkou.core.review`); :mod:`~shuangkou.service.review.command`
is the command."""
