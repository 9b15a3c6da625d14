# C-level declarations of the round (core_ext/_round.pyx), shared with the compiled modules
# that read a round: the state format, replay folding and settlement.

from shuangkou.core.cards cimport partner_of

cdef enum:
    END_TEAM = 0         # finishing_order: the round ends once both players of a team are out
    END_FIRST = 1        # first_out (huopin): the first finisher ends it


# The round end (§9), decided here only: live rounds, stored states and settlement ask it.
cdef inline int ended_at(int end_rule, const int* fin, int nfin) noexcept nogil:
    """Index in the finishing order ``fin[:nfin]`` of the finish that ended the round, or -1
    while it goes on."""
    cdef int i, out = 0
    for i in range(nfin):
        if end_rule == END_FIRST or out & (1 << partner_of(fin[i])):
            return i
        out |= 1 << fin[i]
    return -1
