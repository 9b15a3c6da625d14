# C-level declarations of the serialised round (core_ext/_state.pyx documents the layout),
# for compiled writers that put a state's bytes straight into a larger message.

from shuangkou.core._core cimport RuleSet
from shuangkou.core._round cimport RoundCore

cdef class Layout:
    cdef readonly bytes prefix
    cdef readonly int standing_slot, bomb_slot, size
    cdef dict bombs

cdef Layout layout_of(RuleSet rs)
cdef int pack_into(RoundCore r, unsigned char* b, Layout L) except -1
