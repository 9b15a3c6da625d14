"""The gRPC API of shuangkou.v1: servicers that only translate proto → core call → proto.

* :mod:`~shuangkou.service.api.shuangkou` the ShuangkouService servicer (classify, compare,
  enumerate, score, variants);
* :mod:`~shuangkou.service.api.rounds` the RoundService servicer (live rounds);
* :mod:`~shuangkou.service.api.convert` proto ↔ core values (rule sets, cards, readings,
  declarations, variants, enums);
* :mod:`~shuangkou.service.api.results` RoundResult rendering, and the summaries and replays
  that become results;
* compiled: ``_round_replies`` and ``_classify_replies`` (replies written as bytes, over
  the encoders of ``_protobuf.pxd``), ``_requests`` (plain BatchClassify requests read from
  their bytes).
"""

#: The rule set of a request (or a command) that names none.
DEFAULT_VARIANT = "baibian"
