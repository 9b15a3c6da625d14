"""``shuangkou view``: a replayed round as one self-contained HTML page, for disputes and
audits — :mod:`~shuangkou.service.view.page` draws a round's story
(:mod:`shuangkou.core.story`), :mod:`~shuangkou.service.view.command` is the command."""
